"""Evidence gaps: what is missing before a case's verdict can be trusted.

Derived from the fusion of the case's evidence; the sampling app turns them
into reasons to put a case in front of a human. Exactly these five names:

- no_evidence_at_all           the case has no evidence records
- all_votes_discounted         records exist but none may vote (all model-internal)
- unresolved_conflict          after collapse, independent sources both support
                               and contradict the claim
- independence_unverified      two or more votes count, and at least one of them
                               has no recorded provenance (no event, no group, no
                               derivation), so nothing shows it is independent
- single_source_corroboration  one source family both supports and contradicts
                               the claim (after collapse each family votes at most
                               once per relation, so this is the only way a single
                               source can still sway the count)
"""

from collections.abc import Iterable

from .evidence import CONTRADICTS, SUPPORTS, EvidenceRecord
from .fusion import fuse, is_discounted

UNRESOLVED_CONFLICT = "unresolved_conflict"
ALL_VOTES_DISCOUNTED = "all_votes_discounted"
INDEPENDENCE_UNVERIFIED = "independence_unverified"
SINGLE_SOURCE_CORROBORATION = "single_source_corroboration"
NO_EVIDENCE_AT_ALL = "no_evidence_at_all"
GAP_NAMES: tuple[str, ...] = (
    UNRESOLVED_CONFLICT,
    ALL_VOTES_DISCOUNTED,
    INDEPENDENCE_UNVERIFIED,
    SINGLE_SOURCE_CORROBORATION,
    NO_EVIDENCE_AT_ALL,
)

GAP_LABELS: dict[str, str] = {
    UNRESOLVED_CONFLICT: "independent sources disagree",
    ALL_VOTES_DISCOUNTED: "only the model's own account",
    INDEPENDENCE_UNVERIFIED: "independence of sources not shown",
    SINGLE_SOURCE_CORROBORATION: "one source says both",
    NO_EVIDENCE_AT_ALL: "no evidence",
}


def derive_gaps(records: Iterable[EvidenceRecord]) -> frozenset[str]:
    pool = list(records)
    if not pool:
        return frozenset({NO_EVIDENCE_AT_ALL})
    result = fuse(pool)
    gaps: set[str] = set()
    if result.supports == 0 and result.contradicts == 0 and result.discounted:
        gaps.add(ALL_VOTES_DISCOUNTED)
    if result.supports and result.contradicts:
        gaps.add(UNRESOLVED_CONFLICT)
    by_id = {r.evidence_id: r for r in pool}
    counted = [by_id[i] for i in result.counted]
    if len(counted) >= 2 and any(not r.provenance_known for r in counted):
        gaps.add(INDEPENDENCE_UNVERIFIED)
    relations_by_family: dict[int, set[str]] = {}
    for record in pool:
        if not is_discounted(record):
            number = result.families.family_of[record.evidence_id]
            relations_by_family.setdefault(number, set()).add(record.relation)
    if any({SUPPORTS, CONTRADICTS} <= relations for relations in relations_by_family.values()):
        gaps.add(SINGLE_SOURCE_CORROBORATION)
    return frozenset(gaps)
