import pytest

from .factories import make_case


@pytest.fixture
def corpus(application):
    """Six cases of `application` with known signals.

    ranked: loud (gap conflict + 2 strategies), dup-1..dup-3 (one pattern: the
    same subject, strategy and verdict; conflict gap + strategy), quiet-1, quiet-2
    (no signal at all).
    """
    cases = {
        "loud": make_case(application, "loud", mined_by=("sensor_disagreement", "high_uncertainty"),
                          evidence="conflict"),
        "quiet-1": make_case(application, "quiet-1"),
        "quiet-2": make_case(application, "quiet-2"),
    }
    for i in (1, 2, 3):
        cases[f"dup-{i}"] = make_case(application, f"dup-{i}", subject="disk full",
                                      mined_by=("sensor_disagreement",), evidence="conflict")
    return cases
