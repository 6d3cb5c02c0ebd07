import pytest

from adjudication.labels import label_disagrees_with_verdict


@pytest.mark.parametrize(
    ("label", "verdict", "disagrees"),
    [
        ("unreliable", "verified", True),
        ("contradicted", "corroborated", True),
        ("reliable", "verified", False),
        ("reliable", "refuted", True),
        ("unreliable", "refuted", False),
        ("insufficient_evidence", "Verified", True),
        ("insufficient_evidence", "refuted", False),
        ("reliable", "something-new", False),
        ("custom", "verified", False),
    ],
)
def test_label_disagrees_with_verdict(label, verdict, disagrees):
    assert label_disagrees_with_verdict(label, verdict) is disagrees
