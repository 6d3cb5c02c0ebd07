"""Source families (seed 002), without a database."""

import random

from adjudication.evidence import EvidenceRecord
from adjudication.families import ancestors_of, explain_families, source_families


def rec(evidence_id: str, trust: str = "agent_adjacent", relation: str = "supports", **kw) -> EvidenceRecord:
    return EvidenceRecord(evidence_id=evidence_id, relation=relation, trust_class=trust, **kw)


def test_two_host_observed_records_on_one_event_never_collapse():
    fm = source_families(
        [rec("a", "host_observed", source_event_id="evt-1"), rec("b", "host_observed", source_event_id="evt-1")]
    )
    assert not fm.same_family("a", "b")
    assert fm.shared == ()


def test_independent_external_and_human_reviewed_on_one_event_never_collapse():
    fm = source_families(
        [
            rec("a", "independent_external", source_event_id="e"),
            rec("b", "human_reviewed", source_event_id="e"),
            rec("c", "host_observed", source_event_id="e"),
        ]
    )
    assert len(fm.families) == 3


def test_agent_channel_records_on_one_event_are_one_source():
    fm = source_families(
        [
            rec("a", "agent_adjacent", source_event_id="evt-9"),
            rec("b", "agent_adjacent", source_event_id="evt-9"),
            rec("c", "model_internal", source_event_id="evt-9"),
            rec("d", "host_observed", source_event_id="evt-9"),
        ]
    )
    assert fm.same_family("a", "b") and fm.same_family("b", "c")
    assert not fm.same_family("a", "d")


def test_explicit_correlation_group_joins_any_trust_class():
    fm = source_families(
        [rec("a", "host_observed", correlation_group="g"), rec("b", "independent_external", correlation_group="g")]
    )
    assert fm.same_family("a", "b")


def test_transitive_ancestry_through_an_unlinked_intermediate():
    # c was derived from b, b from a; a and c share nothing directly (no event,
    # no group), and b is linked to neither by anything but derivation.
    records = [
        rec("a", "host_observed"),
        rec("b", "host_observed", derived_from=("a",)),
        rec("c", "independent_external", derived_from=("b",)),
    ]
    fm = source_families(records)
    assert fm.same_family("a", "c")
    assert ancestors_of("c", records) == {"a", "b"}


def test_records_derived_from_the_same_missing_record_share_that_source():
    fm = source_families(
        [rec("x", "host_observed", derived_from=("gone",)), rec("y", "host_observed", derived_from=("gone",))]
    )
    assert fm.same_family("x", "y")
    # The missing ancestor is not a member of any family.
    assert sorted(fm.family_of) == ["x", "y"]


def test_derivation_cycles_terminate_and_group_the_cycle():
    records = [
        rec("a", derived_from=("c",)),
        rec("b", derived_from=("a",)),
        rec("c", derived_from=("b",)),
        rec("self", derived_from=("self",)),
    ]
    fm = source_families(records)
    assert fm.same_family("a", "b") and fm.same_family("b", "c")
    assert fm.family("self").size == 1
    assert ancestors_of("a", records) == {"b", "c"}
    assert ancestors_of("self", records) == frozenset()


def test_unknown_provenance_is_its_own_singleton():
    fm = source_families([rec("a"), rec("b"), rec("c", "host_observed")])
    assert [f.size for f in fm.families] == [1, 1, 1]


def test_unions_are_additive_explicit_groups_never_split_a_shared_event():
    fm = source_families(
        [
            rec("a", "agent_adjacent", source_event_id="evt-1", correlation_group="g1"),
            rec("b", "agent_adjacent", source_event_id="evt-1", correlation_group="g2"),
        ]
    )
    assert fm.same_family("a", "b")


def test_adding_records_never_separates_existing_families():
    rng = random.Random(7)
    trusts = ["host_observed", "agent_adjacent", "model_internal", "independent_external", "human_reviewed"]
    for _ in range(200):
        pool = []
        for i in range(rng.randint(1, 8)):
            pool.append(
                rec(
                    f"r{i}",
                    rng.choice(trusts),
                    source_event_id=rng.choice([None, "e1", "e2"]),
                    correlation_group=rng.choice([None, None, "g1", "g2"]),
                    derived_from=tuple(rng.sample([f"r{j}" for j in range(8)], rng.randint(0, 2))),
                )
            )
        cut = rng.randint(0, len(pool))
        before, after = source_families(pool[:cut]), source_families(pool)
        for x in before.family_of:
            for y in before.family_of:
                if before.same_family(x, y):
                    assert after.same_family(x, y)


def test_result_does_not_depend_on_input_order():
    records = [
        rec("a", source_event_id="e"),
        rec("b", source_event_id="e"),
        rec("c", "host_observed", derived_from=("d",)),
        rec("d", "host_observed"),
    ]
    forward, backward = source_families(records), source_families(list(reversed(records)))
    groups = lambda fm: sorted(sorted(f.evidence_ids) for f in fm.families)  # noqa: E731
    assert groups(forward) == groups(backward)


def test_plain_prose_names_shared_families_only_without_graph_words():
    fm = source_families(
        [
            rec("a", source_event_id="evt-42"),
            rec("b", source_event_id="evt-42"),
            rec("c", source_event_id="evt-42"),
            rec("d", "host_observed"),
        ]
    )
    lines = explain_families(fm)
    assert lines == ["family 1 — 3 records, counted as ONE source: same agent turn (event evt-42)"]
    text = " ".join(lines).lower()
    for word in ("union", "graph", "node", "edge", "root", "component"):
        assert word not in text


def test_prose_for_groups_and_derivation():
    fm = source_families(
        [
            rec("a", "host_observed", correlation_group="probe-7"),
            rec("b", "host_observed", correlation_group="probe-7"),
            rec("c", "host_observed"),
            rec("d", "host_observed", derived_from=("c",)),
        ]
    )
    assert explain_families(fm) == [
        "family 1 — 2 records, counted as ONE source: reported as correlated (group probe-7)",
        "family 2 — 2 records, counted as ONE source: derived from record c",
    ]
