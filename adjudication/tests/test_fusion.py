"""Fusion with common-source collapse, without a database."""

import random

import pytest

from adjudication.evidence import EvidenceRecord
from adjudication.fusion import (
    CONTESTED,
    CORROBORATED,
    FUSION_POLICY_NAME,
    FUSION_POLICY_VERSION,
    QUALIFIED,
    REFUTED,
    UNSUPPORTED,
    VERIFIED,
    fuse,
)

TRUSTS = ["host_observed", "agent_adjacent", "model_internal", "independent_external", "human_reviewed"]


def rec(evidence_id: str, trust: str = "agent_adjacent", relation: str = "supports", **kw) -> EvidenceRecord:
    return EvidenceRecord(evidence_id=evidence_id, relation=relation, trust_class=trust, **kw)


def test_live_shape_three_sensors_on_one_agent_turn_count_once():
    records = [rec(f"s{i}", source_event_id="evt-1") for i in range(3)]
    naive, collapsed = fuse(records, collapse=False), fuse(records)
    assert naive.band == CORROBORATED and naive.supports == 3
    assert collapsed.band == QUALIFIED and collapsed.supports == 1
    assert collapsed.collapsed == ("s1", "s2")


def test_host_observed_siblings_stay_two_votes():
    records = [
        rec("a", "host_observed", source_event_id="evt-1"),
        rec("b", "host_observed", source_event_id="evt-1"),
    ]
    result = fuse(records)
    assert result.supports == 2 and result.band == VERIFIED


def test_cross_explicit_group_same_event_pair_still_collapses():
    records = [
        rec("a", source_event_id="evt-1", correlation_group="g1"),
        rec("b", source_event_id="evt-1", correlation_group="g2"),
    ]
    assert fuse(records).supports == 1


def test_representative_is_the_most_trusted_member():
    records = [
        rec("agent", "agent_adjacent", correlation_group="g"),
        rec("host", "host_observed", correlation_group="g"),
    ]
    result = fuse(records)
    assert result.counted == ("host",) and result.band == VERIFIED


def test_model_internal_records_are_discounted():
    result = fuse([rec("m1", "model_internal"), rec("m2", "model_internal", relation="contradicts")])
    assert result.band == UNSUPPORTED
    assert result.discounted == ("m1", "m2")


@pytest.mark.parametrize(
    ("records", "band"),
    [
        ([], UNSUPPORTED),
        ([rec("a", relation="contradicts")], REFUTED),
        ([rec("a"), rec("b", "host_observed", relation="contradicts")], CONTESTED),
        ([rec("a"), rec("b")], CORROBORATED),
        ([rec("a")], QUALIFIED),
    ],
)
def test_bands(records, band):
    assert fuse(records).band == band


def test_policy_is_versioned():
    result = fuse([rec("a")])
    assert (result.policy_name, result.policy_version) == (FUSION_POLICY_NAME, FUSION_POLICY_VERSION)
    assert result.policy == f"{FUSION_POLICY_NAME} v{FUSION_POLICY_VERSION}"


def _random_pool(rng: random.Random) -> list[EvidenceRecord]:
    return [
        rec(
            f"r{i}",
            rng.choice(TRUSTS),
            rng.choice(["supports", "contradicts"]),
            source_event_id=rng.choice([None, "e1", "e2"]),
            correlation_group=rng.choice([None, None, "g1"]),
            derived_from=tuple(rng.sample([f"r{j}" for j in range(6)], rng.randint(0, 1))),
        )
        for i in range(rng.randint(0, 7))
    ]


def test_collapse_never_flips_verified_and_never_manufactures_a_contradiction():
    rng = random.Random(2026)
    demoted = 0
    for _ in range(3000):
        pool = _random_pool(rng)
        naive, collapsed = fuse(pool, collapse=False), fuse(pool)
        if naive.band == VERIFIED:
            assert collapsed.band == VERIFIED
        # Counts never drop to zero where they were not zero, never grow.
        assert (naive.supports == 0) == (collapsed.supports == 0)
        assert (naive.contradicts == 0) == (collapsed.contradicts == 0)
        assert collapsed.supports <= naive.supports and collapsed.contradicts <= naive.contradicts
        if naive.contradicts == 0:
            assert collapsed.band not in {CONTESTED, REFUTED}
        if naive.band == CORROBORATED:
            assert collapsed.band in {CORROBORATED, QUALIFIED}
            demoted += collapsed.band == QUALIFIED
    assert demoted > 0  # the generator does exercise the demotion path
