"""Fusion with common-source collapse: how many independent votes a case really has.

Policy (versioned: bump FUSION_POLICY_VERSION whenever a band can change):

- Model-internal records are *discounted*: a model's own account of itself is
  never a vote. Every other record may vote.
- Collapse: among the voting records, keep exactly one representative per
  (relation, source family) -- the most trusted member, ties by evidence id. So
  three sensors reading one agent turn count once.
- Bands, from the collapsed counts `supports` (s) and `contradicts` (c):
    verified      c == 0 and a supporting representative is host-observed,
                  independent-external or human-reviewed
    corroborated  c == 0 and s >= 2 (independent agent-channel sources agree)
    qualified     c == 0 and s == 1
    contested     s >= 1 and c >= 1
    refuted       s == 0 and c >= 1
    unsupported   s == 0 and c == 0

Why collapse is safe: a non-empty (relation, family) bucket keeps one
representative, so s and c never drop to zero where they were not zero, and the
representative is the strongest member, so "has strong support" survives. Hence
collapse can demote corroborated to qualified, but it never changes verified and
never creates a contradiction (tests pin these properties).
"""

from collections.abc import Iterable
from dataclasses import dataclass

from .evidence import (
    CONTRADICTS,
    HOST_OBSERVED,
    HUMAN_REVIEWED,
    INDEPENDENT_EXTERNAL,
    MODEL_INTERNAL,
    STRONG_TRUST,
    SUPPORTS,
    EvidenceRecord,
)
from .families import FamilyMap, source_families

FUSION_POLICY_NAME = "console-common-source-collapse"
FUSION_POLICY_VERSION = 1

VERIFIED = "verified"
CORROBORATED = "corroborated"
QUALIFIED = "qualified"
CONTESTED = "contested"
REFUTED = "refuted"
UNSUPPORTED = "unsupported"
BANDS: tuple[str, ...] = (VERIFIED, CORROBORATED, QUALIFIED, CONTESTED, REFUTED, UNSUPPORTED)

# Higher first: the representative of a bucket is its most trusted member.
_TRUST_RANK = {
    HUMAN_REVIEWED: 0,
    INDEPENDENT_EXTERNAL: 1,
    HOST_OBSERVED: 2,
    "agent_adjacent": 3,
    MODEL_INTERNAL: 4,
}


@dataclass(frozen=True)
class FusionResult:
    band: str
    supports: int  # independent supporting sources, after collapse
    contradicts: int
    supports_raw: int  # voting records before collapse
    contradicts_raw: int
    counted: tuple[str, ...]  # evidence ids of the representatives
    collapsed: tuple[str, ...]  # voting records folded into a representative
    discounted: tuple[str, ...]  # records that never vote (model-internal)
    families: FamilyMap
    policy_name: str = FUSION_POLICY_NAME
    policy_version: int = FUSION_POLICY_VERSION

    @property
    def policy(self) -> str:
        return f"{self.policy_name} v{self.policy_version}"


def is_discounted(record: EvidenceRecord) -> bool:
    return record.trust_class == MODEL_INTERNAL


def band_of(*, supports: int, contradicts: int, strong_support: bool) -> str:
    if supports and contradicts:
        return CONTESTED
    if contradicts:
        return REFUTED
    if not supports:
        return UNSUPPORTED
    if strong_support:
        return VERIFIED
    return CORROBORATED if supports >= 2 else QUALIFIED


def fuse(records: Iterable[EvidenceRecord], *, collapse: bool = True) -> FusionResult:
    """Fuse one case's evidence. `collapse=False` is the naive per-record count,
    kept only so tests and the case page can show what collapse changed."""
    pool = list(records)
    families = source_families(pool)
    voting = [r for r in pool if not is_discounted(r)]
    discounted = tuple(r.evidence_id for r in pool if is_discounted(r))

    if collapse:
        buckets: dict[tuple[str, int], EvidenceRecord] = {}
        for record in voting:
            key = (record.relation, families.family_of[record.evidence_id])
            best = buckets.get(key)
            if best is None or (_TRUST_RANK[record.trust_class], record.evidence_id) < (
                _TRUST_RANK[best.trust_class],
                best.evidence_id,
            ):
                buckets[key] = record
        representatives = list(buckets.values())
    else:
        representatives = voting
    kept = {r.evidence_id for r in representatives}
    supports = [r for r in representatives if r.relation == SUPPORTS]
    contradicts = [r for r in representatives if r.relation == CONTRADICTS]
    band = band_of(
        supports=len(supports),
        contradicts=len(contradicts),
        strong_support=any(r.trust_class in STRONG_TRUST for r in supports),
    )
    return FusionResult(
        band=band,
        supports=len(supports),
        contradicts=len(contradicts),
        supports_raw=sum(1 for r in voting if r.relation == SUPPORTS),
        contradicts_raw=sum(1 for r in voting if r.relation == CONTRADICTS),
        counted=tuple(r.evidence_id for r in voting if r.evidence_id in kept),
        collapsed=tuple(r.evidence_id for r in voting if r.evidence_id not in kept),
        discounted=discounted,
        families=families,
    )
