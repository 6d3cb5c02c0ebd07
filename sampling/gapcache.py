"""Evidence gaps for a whole corpus, fast: each distinct evidence *shape* once.

A plan reads every case's gaps (`adjudication.gaps.derive_gaps`). At 100,000
cases, building a model instance and an EvidenceRecord per evidence row and
fusing every pool costs seconds, but real corpora repeat a small number of
shapes (two agent sensors on one event, a host observation that contradicts,
...). So each pool is first reduced to its shape: evidence ids renamed to their
rank in sorted order (order kept, because fusion breaks ties by id), event
and correlation-group values renamed by first appearance (only their equality
matters), records put in id order (fusion and gaps do not depend on the
order of the pool), sensor and time dropped (fusion and gaps do not read them). Gaps are
derived once per shape, by the adjudication app's own derive_gaps on records
of that shape, so the answer is always derive_gaps' answer. A test checks this
equivalence on thousands of random pools, so a change in what derive_gaps reads
is caught rather than silently cached.

Pure Python, no ORM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from adjudication.evidence import EvidenceRecord
from adjudication.gaps import derive_gaps

# (evidence_id, relation, trust_class, source_event_id, correlation_group, derived_from)
EvidenceRow = tuple[str, str, str, str | None, str | None, Sequence[str]]
Shape = tuple[tuple[str, str, str, int, int, tuple[str, ...]], ...]

NO_EVIDENCE = derive_gaps(())


def pool_shape(rows: Sequence[EvidenceRow]) -> Shape:
    """The pool with its identifiers renamed so that equal shapes have equal gaps.

    Ids become their zero-padded rank (so their lexical order is kept); events
    and groups become numbers in order of first appearance, -1 for none; records
    are put in id order (ids are unique in a pool), so pools that differ only in
    record order get one shape.
    """
    if any(row[5] for row in rows):
        names = {row[0] for row in rows}
        for row in rows:
            names.update(row[5])
        ordered_names = sorted(names)
    else:
        ordered_names = sorted(row[0] for row in rows)
    width = len(str(len(ordered_names) - 1))
    id_rank = {name: f"{i:0{width}d}" for i, name in enumerate(ordered_names)}
    events: dict[str, int] = {}
    groups: dict[str, int] = {}
    return tuple(
        (
            id_rank[evidence_id],
            relation,
            trust_class,
            events.setdefault(event, len(events)) if event else -1,
            groups.setdefault(group, len(groups)) if group else -1,
            tuple(id_rank[parent] for parent in derived) if derived else (),
        )
        for evidence_id, relation, trust_class, event, group, derived in sorted(rows, key=_first)
    )


def _first(row: EvidenceRow) -> str:
    return row[0]


class GapCache:
    """derive_gaps per evidence pool, computed once per distinct shape."""

    def __init__(self) -> None:
        self._by_shape: dict[Shape, frozenset[str]] = {}

    def gaps(self, rows: Sequence[EvidenceRow]) -> frozenset[str]:
        if not rows:
            return NO_EVIDENCE
        shape = pool_shape(rows)
        gaps = self._by_shape.get(shape)
        if gaps is None:
            records = [
                EvidenceRecord(
                    evidence_id=evidence_id,
                    relation=relation,
                    trust_class=trust_class,
                    source_event_id=f"e{event}" if event >= 0 else None,
                    correlation_group=f"g{group}" if group >= 0 else None,
                    derived_from=derived,
                )
                for evidence_id, relation, trust_class, event, group, derived in shape
            ]
            gaps = self._by_shape[shape] = derive_gaps(records)
        return gaps

    @property
    def shapes(self) -> int:
        return len(self._by_shape)


def decode_id_list(text: str | None, cache: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """A JSON list of strings read as text; most values repeat ("[]"), so decode each once."""
    if not text:
        return ()
    value = cache.get(text)
    if value is None:
        loaded = json.loads(text)
        value = cache[text] = tuple(
            item for item in (loaded if isinstance(loaded, list) else ()) if isinstance(item, str)
        )
    return value


def gaps_by_case(rows: Iterable[tuple], cache: GapCache | None = None) -> dict[int, frozenset[str]]:
    """Gaps per case pk from evidence rows ordered by (case pk, position):
    (case_pk, evidence_id, relation, trust_class, source_event_id, correlation_group,
    derived_from as JSON text). Cases without rows are absent (no_evidence_at_all)."""
    cache = cache or GapCache()
    decoded: dict[str, tuple[str, ...]] = {}
    result: dict[int, frozenset[str]] = {}
    current: int | None = None
    pool: list[EvidenceRow] = []
    for case_pk, evidence_id, relation, trust_class, event, group, derived in rows:
        if case_pk != current:
            if current is not None:
                result[current] = cache.gaps(pool)
            current, pool = case_pk, []
        pool.append((evidence_id, relation, trust_class, event, group,
                     decode_id_list(derived, decoded) if derived != "[]" else ()))
    if current is not None:
        result[current] = cache.gaps(pool)
    return result
