"""Source-dependency families (seed 002): which evidence records share a source.

A union-find over one case's evidence, built from three relations only:

1. an explicit `correlation_group` shared by two records;
2. `derived_from` ancestry, transitively (a record and everything it was derived
   from, through any number of steps, even through an ancestor that is not in the
   pool: two records derived from the same missing record share that source);
3. the same `source_event_id` on the agent channel only (agent-adjacent,
   model-internal). Host-observed, independent-external and human-reviewed records
   on one event are distinct observations and are never joined by the event.

Unknown provenance (none of the three) leaves a record as its own singleton.
Unions only ever grow: recording two different explicit groups never separates
records that share an agent event. Read-side only, nothing is persisted.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from consoles.text import count

from .evidence import AGENT_CHANNEL, EvidenceRecord

REASON_GROUP = "correlation_group"
REASON_EVENT = "same_agent_event"
REASON_DERIVED = "derived_from"


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def add(self, node: str) -> None:
        self.parent.setdefault(node, node)

    def find(self, node: str) -> str:
        self.add(node)
        root = node
        while self.parent[root] != root:
            root = self.parent[root]
        # Path compression keeps repeated lookups flat on long derivation chains.
        while self.parent[node] != root:
            self.parent[node], node = root, self.parent[node]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            # Deterministic: the lexically smaller root wins, so the same pool
            # always produces the same families regardless of input order.
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra


@dataclass(frozen=True)
class Family:
    """One source: the records that must count as ONE vote between them."""

    number: int  # 1-based, in order of first appearance in the pool
    evidence_ids: tuple[str, ...]
    # Why they were grouped: (reason, value) pairs, e.g. ("same_agent_event", "evt-7").
    reasons: tuple[tuple[str, str], ...]

    @property
    def size(self) -> int:
        return len(self.evidence_ids)


@dataclass(frozen=True)
class FamilyMap:
    families: tuple[Family, ...]
    family_of: dict[str, int]  # evidence_id -> family number

    def family(self, evidence_id: str) -> Family:
        return self.families[self.family_of[evidence_id] - 1]

    def same_family(self, a: str, b: str) -> bool:
        return self.family_of[a] == self.family_of[b]

    @property
    def shared(self) -> tuple[Family, ...]:
        """Families that really group more than one record."""
        return tuple(f for f in self.families if f.size > 1)


def _record_node(evidence_id: str) -> str:
    return f"r:{evidence_id}"


def ancestors_of(evidence_id: str, records: Sequence[EvidenceRecord]) -> frozenset[str]:
    """Every id `evidence_id` was derived from, at any depth; safe on cycles.

    Ancestors absent from `records` are included (they still name a shared source)
    but cannot be walked further.
    """
    parents = {r.evidence_id: r.derived_from for r in records}
    seen: set[str] = set()
    stack = list(parents.get(evidence_id, ()))
    while stack:
        current = stack.pop()
        if current in seen or current == evidence_id:
            continue
        seen.add(current)
        stack.extend(parents.get(current, ()))
    return frozenset(seen)


def source_families(records: Iterable[EvidenceRecord]) -> FamilyMap:
    pool = list(records)
    uf = _UnionFind()
    reasons: dict[str, set[tuple[str, str]]] = {}

    def join(a: str, b: str, reason: tuple[str, str]) -> None:
        uf.union(a, b)
        reasons.setdefault(a, set()).add(reason)

    group_anchor: dict[str, str] = {}
    event_anchor: dict[str, str] = {}
    for record in pool:
        node = _record_node(record.evidence_id)
        uf.add(node)
        if record.correlation_group:
            anchor = group_anchor.setdefault(record.correlation_group, node)
            if anchor != node:
                join(node, anchor, (REASON_GROUP, record.correlation_group))
        if record.source_event_id and record.trust_class in AGENT_CHANNEL:
            anchor = event_anchor.setdefault(record.source_event_id, node)
            if anchor != node:
                join(node, anchor, (REASON_EVENT, record.source_event_id))
        for parent in record.derived_from:
            # Joining each record with its direct parents makes ancestry
            # transitive through the union itself, and a cycle is just a union
            # of nodes already joined: no recursion, nothing to loop on.
            join(node, _record_node(parent), (REASON_DERIVED, parent))

    order: list[str] = []
    members: dict[str, list[str]] = {}
    root_reasons: dict[str, set[tuple[str, str]]] = {}
    for record in pool:
        root = uf.find(_record_node(record.evidence_id))
        if root not in members:
            order.append(root)
            members[root] = []
        if record.evidence_id not in members[root]:
            members[root].append(record.evidence_id)
    for node, node_reasons in reasons.items():
        root_reasons.setdefault(uf.find(node), set()).update(node_reasons)

    families: list[Family] = []
    family_of: dict[str, int] = {}
    for number, root in enumerate(order, start=1):
        ids = tuple(members[root])
        grouped = tuple(sorted(root_reasons.get(root, ()))) if len(ids) > 1 else ()
        families.append(Family(number=number, evidence_ids=ids, reasons=grouped))
        for evidence_id in ids:
            family_of[evidence_id] = number
    return FamilyMap(families=tuple(families), family_of=family_of)


_REASON_PROSE = {
    REASON_EVENT: "same agent turn (event {value})",
    REASON_GROUP: "reported as correlated (group {value})",
    REASON_DERIVED: "derived from record {value}",
}


def family_sentence(family: Family) -> str:
    """'family 2 — 3 records, counted as ONE source: same agent turn (event e-7)'."""
    by_kind: dict[str, list[str]] = {}
    for kind, value in family.reasons:
        by_kind.setdefault(kind, []).append(value)
    parts = []
    for kind in (REASON_EVENT, REASON_GROUP, REASON_DERIVED):
        for value in by_kind.get(kind, []):
            parts.append(_REASON_PROSE[kind].format(value=value))
    why = "; ".join(parts) if parts else "they share a source"
    return f"family {family.number} — {count(family.size, 'record')}, counted as ONE source: {why}"


def explain_families(family_map: FamilyMap) -> list[str]:
    """Plain prose, one line per family that groups more than one record."""
    return [family_sentence(f) for f in family_map.shared]
