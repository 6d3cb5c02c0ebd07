import pytest

from adjudication.agreement import (
    MIN_KAPPA_CASES,
    LabelEvent,
    agreement,
    cohen_kappa,
    confusion_matrix,
)


def test_kappa_against_a_hand_computed_example():
    # 50 items: both "yes" 20, A yes/B no 5, A no/B yes 10, both "no" 15.
    # p_o = 35/50 = 0.70; p_yes(A) = 25/50, p_yes(B) = 30/50;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.50; kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40.
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15
    k = cohen_kappa(pairs)
    assert k.n == 50
    assert k.observed == pytest.approx(0.70)
    assert k.expected == pytest.approx(0.50)
    assert k.kappa == pytest.approx(0.40)
    assert confusion_matrix(pairs, ["yes", "no"]) == [[20, 5], [10, 15]]


def test_kappa_is_one_for_perfect_agreement_and_undefined_when_chance_is_certain():
    assert cohen_kappa([("a", "a"), ("b", "b")]).kappa == pytest.approx(1.0)
    assert cohen_kappa([("a", "a")] * 3).kappa == pytest.approx(1.0)
    assert cohen_kappa([]).kappa is None


def _events(n_cases: int) -> list[LabelEvent]:
    events = []
    for case in range(n_cases):
        first = "reliable" if case % 2 else "unreliable"
        second = first if case % 5 else "contradicted"
        events.append(LabelEvent(case=case, reviewer="ann", label=first, order=(case, 1)))
        events.append(LabelEvent(case=case, reviewer="ben", label=second, order=(case, 2)))
    return events


def test_gate_below_twenty_double_labelled_cases():
    result = agreement(_events(MIN_KAPPA_CASES - 1) + [LabelEvent(case="solo", reviewer="ann", label="reliable", order=(99, 0))])
    assert result.n == 19
    assert not result.enough and result.overall is None
    assert result.gate_message == "not enough data (19/20)"
    assert result.pairs[0].kappa is None


def test_gate_opens_at_twenty_and_uses_first_two_labels_per_case():
    events = _events(MIN_KAPPA_CASES)
    # A third curator on case 0 does not add a second rating pair for that case.
    events.append(LabelEvent(case=0, reviewer="cy", label="reliable", order=(0, 3)))
    result = agreement(events, labels=["reliable", "unreliable", "contradicted", "insufficient_evidence"])
    assert result.n == 20 and result.enough
    assert sum(map(sum, result.matrix)) == 20
    assert result.overall.kappa == pytest.approx(cohen_kappa([(e1.label, e2.label) for e1, e2 in zip(events[0:40:2], events[1:40:2], strict=True)]).kappa)
    assert [(p.reviewer_a, p.reviewer_b, p.n) for p in result.pairs] == [("ann", "ben", 20), ("ann", "cy", 1), ("ben", "cy", 1)]
    assert result.pairs[0].enough and result.pairs[0].kappa is not None
    assert not result.pairs[1].enough
