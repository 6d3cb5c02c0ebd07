"""The plain-Python core: gates, ids, lanes, the metric comparison, the event fold."""

import hashlib

import pytest

from teaching.domain import (
    CandidateFacts,
    Chain,
    CorpusLookupLane,
    EvalCaseFacts,
    EventFacts,
    canonical_chain,
    check_eligibility,
    compare_metrics,
    fold_events,
    proposal_id_for,
    replay_gate,
)

CHAIN = {"subject": "tokyo", "intent": "capital_of", "connective": "is", "object": "japan"}


def facts(**overrides) -> CandidateFacts:
    base = dict(
        subject="tokyo", intent="capital_of", connective="is", object="japan", polarity="affirms",
        claim_domain="factual", evidence=[{"source": "corpus", "ref": "x"}], boundary_clean=True,
    )
    base.update(overrides)
    return CandidateFacts(**base)


def failing(results) -> list[str]:
    return [r.gate for r in results if not r.passed]


def test_an_eligible_candidate_passes_all_five_gates():
    results = check_eligibility(facts())
    assert [r.gate for r in results] == [
        "polarity_decided", "corpus_evidence", "evaluative_allowed", "boundary_clean", "chain_complete",
    ]
    assert failing(results) == []


@pytest.mark.parametrize(
    "overrides,gate",
    [
        ({"polarity": "undetermined"}, "polarity_decided"),
        ({"evidence": [{"source": "pack", "ref": "x"}]}, "corpus_evidence"),
        ({"evidence": []}, "corpus_evidence"),
        ({"claim_domain": "evaluative"}, "evaluative_allowed"),
        ({"boundary_clean": False}, "boundary_clean"),
        ({"connective": ""}, "chain_complete"),
        ({"object": None}, "chain_complete"),
        ({"subject": "   "}, "chain_complete"),
    ],
)
def test_each_gate_fails_alone_and_is_named(overrides, gate):
    results = check_eligibility(facts(**overrides))
    assert failing(results) == [gate]
    assert next(r for r in results if r.gate == gate).reason


def test_evaluative_needs_both_the_allow_flag_and_a_strong_hedge():
    evaluative = facts(claim_domain="evaluative", hedge_tier="strong", hedge_surface="Many would say")
    assert failing(check_eligibility(evaluative)) == ["evaluative_allowed"]  # no flag
    assert failing(check_eligibility(evaluative, allow_evaluative=True)) == []
    weak = facts(claim_domain="evaluative", hedge_tier="weak", hedge_surface="Maybe")
    assert failing(check_eligibility(weak, allow_evaluative=True)) == ["evaluative_allowed"]
    no_surface = facts(claim_domain="evaluative", hedge_tier="strong", hedge_surface="")
    assert failing(check_eligibility(no_surface, allow_evaluative=True)) == ["evaluative_allowed"]


def test_proposal_id_is_sha256_of_candidate_id_and_canonical_chain():
    expected = hashlib.sha256(
        b'c-1{"connective":"is","intent":"capital_of","object":"japan","subject":"tokyo"}'
    ).hexdigest()
    assert proposal_id_for("c-1", CHAIN) == expected
    # key order of the input does not matter; content does
    assert proposal_id_for("c-1", dict(reversed(list(CHAIN.items())))) == expected
    assert proposal_id_for("c-2", CHAIN) != expected
    assert proposal_id_for("c-1", {**CHAIN, "object": "kyoto"}) != expected
    assert canonical_chain(CHAIN).startswith("{")


CASES = (
    EvalCaseFacts("p1", "public", "paris", "capital_of", "france", "affirms"),
    EvalCaseFacts("p2", "public", "tokyo", "capital_of", "japan", "affirms"),
    EvalCaseFacts("d1", "dev", "whale", "is_a", "fish", "falsifies"),
)
CORPUS = (
    Chain("Paris", "capital_of", "is", "France", "affirms"),
    Chain("whale", "is_a", "is", "fish", "falsifies"),
)


def test_lookup_lane_reports_accuracy_coverage_and_precision_per_split():
    metrics = CorpusLookupLane().evaluate(CORPUS, CASES)
    assert metrics == {
        "accuracy.public": 0.5, "coverage.public": 0.5, "precision.public": 1.0,
        "accuracy.dev": 1.0, "coverage.dev": 1.0, "precision.dev": 1.0,
    }  # no holdout cases: no holdout metrics


def test_lookup_lane_treats_a_contradicting_corpus_as_wrong_and_ignores_order():
    conflicted = (*CORPUS, Chain("paris", "capital_of", "is", "lyon", "affirms"))
    lane = CorpusLookupLane()
    assert lane.evaluate(conflicted, CASES)["accuracy.public"] == 0.0
    assert lane.evaluate(tuple(reversed(conflicted)), CASES) == lane.evaluate(conflicted, CASES)
    wrong_polarity = (Chain("whale", "is_a", "is", "fish", "affirms"),)
    assert lane.evaluate(wrong_polarity, CASES)["accuracy.dev"] == 0.0


def test_a_metric_regresses_only_when_strictly_lower():
    evidence = compare_metrics({"a": 0.5, "b": 1.0, "c": 0.2}, {"a": 0.5, "b": 0.75, "c": 0.9})
    assert evidence.regressed_metrics == ("b",) and not evidence.replay_equivalent
    assert evidence.note == "auto_rollback_regression: b"
    same = compare_metrics({"a": 0.5}, {"a": 0.5})
    assert same.replay_equivalent and same.note == ""
    assert compare_metrics({"a": 0.5}, {}).regressed_metrics == ("a",)  # missing fails closed


def test_replay_gate_builds_the_candidate_view_without_touching_the_corpus():
    corpus = list(CORPUS)
    evidence = replay_gate(corpus, Chain("tokyo", "capital_of", "is", "japan", "affirms"), CASES)
    assert corpus == list(CORPUS)
    assert evidence.replay_equivalent
    assert evidence.baseline["lookup.accuracy.public"] == 0.5
    assert evidence.candidate["lookup.accuracy.public"] == 1.0
    bad = replay_gate(corpus, Chain("paris", "capital_of", "is", "lyon", "affirms"), CASES)
    assert bad.regressed_metrics == ("lookup.accuracy.public", "lookup.precision.public")


def test_fold_rebuilds_states_and_reports_an_impossible_log():
    log = fold_events([
        EventFacts("p1", "proposed", "", "pending"),
        EventFacts("p2", "proposed", "", "pending"),
        EventFacts("p1", "accepted", "pending", "accepted"),
        EventFacts("p2", "auto_rejected", "pending", "rejected"),
    ])
    assert log.states == {"p1": "accepted", "p2": "rejected"} and log.errors == []
    broken = fold_events([
        EventFacts("p1", "proposed", "", "pending"),
        EventFacts("p1", "accepted", "pending", "accepted"),
        EventFacts("p1", "rejected", "accepted", "rejected"),
    ])
    assert broken.errors == ["p1: rejected after terminal state accepted"]
