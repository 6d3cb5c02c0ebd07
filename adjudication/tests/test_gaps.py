from adjudication.evidence import EvidenceRecord
from adjudication.gaps import GAP_NAMES, derive_gaps


def rec(evidence_id: str, trust: str = "agent_adjacent", relation: str = "supports", **kw) -> EvidenceRecord:
    return EvidenceRecord(evidence_id=evidence_id, relation=relation, trust_class=trust, **kw)


def test_gap_names_are_the_contract():
    assert set(GAP_NAMES) == {
        "unresolved_conflict",
        "all_votes_discounted",
        "independence_unverified",
        "single_source_corroboration",
        "no_evidence_at_all",
    }


def test_no_evidence_at_all():
    assert derive_gaps([]) == {"no_evidence_at_all"}


def test_all_votes_discounted():
    assert derive_gaps([rec("m", "model_internal")]) == {"all_votes_discounted"}


def test_unresolved_conflict_between_independent_sources():
    gaps = derive_gaps(
        [rec("a", "host_observed", source_event_id="e1"), rec("b", "host_observed", "contradicts", source_event_id="e2")]
    )
    assert gaps == {"unresolved_conflict"}


def test_independence_unverified_when_a_counted_vote_has_no_provenance():
    assert derive_gaps([rec("a", source_event_id="e1"), rec("b")]) == {"independence_unverified"}
    # A single vote has nothing to be independent of.
    assert derive_gaps([rec("b")]) == frozenset()


def test_single_source_corroboration_when_one_family_says_both():
    gaps = derive_gaps([rec("a", source_event_id="e1"), rec("b", relation="contradicts", source_event_id="e1")])
    assert "single_source_corroboration" in gaps and "unresolved_conflict" in gaps


def test_a_clean_case_has_no_gaps():
    assert derive_gaps([rec("a", "host_observed", source_event_id="e1")]) == frozenset()
