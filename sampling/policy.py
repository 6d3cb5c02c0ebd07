"""The sampling policy: which cases most need a human, within a budget.

Pure Python, no ORM, so it is tested without a database and gives the same
plan on every machine. The services feed it `CaseInput`s built from the
adjudication app's cases and evidence and the feedback app's dispositions.

Signals come from three real sources only, deliberately no fourth:

1. the evidence gaps the adjudication app derives (`adjudication.gaps`),
   computed without runtime capabilities so the same corpus always gives the
   same plan;
2. the mining strategies recorded on the case when it was mined;
3. sanitisation having altered the outcome, and case feedback whose
   disposition disagrees with the case's verdict.

"Novel context", "suspected drift" or "expected information gain" have no
per-case source today, so no signal pretends to measure them.

Ranking: more signals first, then the lexical order of the (sorted) signal
set, then the case id, so ties are broken the same way everywhere. Then the
budget and the per-pattern cap are applied walking down that ranking: a case
whose pattern (claim subject, sorted mining strategies, local verdict) already
has `max_per_pattern` selections is skipped, so one repeated shape cannot take
the whole budget.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

POLICY_NAME = "signal-rank-with-pattern-cap"
# Bump when anything that changes a plan for the same inputs changes: signals,
# their names or phrases, the ranking, the pattern key, the JSON shape.
POLICY_VERSION = "2"
# 1: first version. 2: the inputs digest hashes one canonical JSON array (it
#    hashed one line per case), so the same inputs have another digest.
DEFAULT_MAX_PER_PATTERN = 2

GAP_PREFIX = "gap:"
MINED_PREFIX = "mined:"
SIGNAL_SANITIZATION = "sanitization_altered_outcome"
SIGNAL_FEEDBACK = "feedback_disagrees"

# The five gap names of the adjudication app's derive_gaps(), in plain words.
GAP_PHRASES: dict[str, str] = {
    "unresolved_conflict": "its evidence conflicts and nothing resolves the conflict",
    "all_votes_discounted": "every piece of its evidence was discounted",
    "independence_unverified": "nobody has verified that its sources are independent",
    "single_source_corroboration": "it is corroborated by a single source only",
    "no_evidence_at_all": "it has no evidence at all",
}
STRATEGY_PHRASES: dict[str, str] = {
    "sensor_disagreement": "sensors disagreed about it when it was mined",
    "high_uncertainty": "the verdict was highly uncertain when it was mined",
    "verdict_changed_across_findings": "its verdict changed across findings",
}
OTHER_PHRASES: dict[str, str] = {
    SIGNAL_SANITIZATION: "sanitisation altered its outcome",
    SIGNAL_FEEDBACK: "case feedback disagrees with its verdict",
}
NO_SIGNAL_REASON = "No signal: a routine case, selected only because the budget had room left."


@dataclass(frozen=True, slots=True)
class CaseInput:
    """What the policy knows about one case; nothing else influences a plan."""

    case_id: str
    claim_subject: str
    local_verdict: str
    mined_by: tuple[str, ...] = ()
    gaps: frozenset[str] = frozenset()
    sanitization_altered_outcome: bool = False
    feedback_disagrees: bool = False

    @classmethod
    def build(
        cls,
        *,
        case_id: str,
        claim_subject: str,
        local_verdict: str,
        mined_by: Iterable[str] = (),
        gaps: Iterable[str] = (),
        sanitization_altered_outcome: bool = False,
        feedback_disagrees: bool = False,
    ) -> CaseInput:
        """Normalise the inputs so that order and repeats in the sources never matter."""
        return cls(
            case_id=case_id,
            claim_subject=claim_subject,
            local_verdict=local_verdict,
            mined_by=normalize_strategies(mined_by),
            gaps=frozenset(gaps),
            sanitization_altered_outcome=bool(sanitization_altered_outcome),
            feedback_disagrees=bool(feedback_disagrees),
        )


def normalize_strategies(mined_by: Iterable[str]) -> tuple[str, ...]:
    """Sorted, without repeats or blanks: order and repeats in the source never matter."""
    return tuple(sorted({s.strip() for s in mined_by if s and s.strip()}))


@dataclass(frozen=True, slots=True)
class Selection:
    rank: int
    case_id: str
    signals: tuple[str, ...]
    pattern_key: str
    reason: str


@dataclass(frozen=True, slots=True)
class PatternStat:
    """One pattern that the plan touched.

    `capped_count` counts the cases of the pattern that the walk reached while
    the budget still had room but skipped because the pattern was full: the
    cases the cap kept out of this plan.
    """

    pattern_key: str
    case_count: int
    selected_count: int
    capped_count: int


@dataclass(frozen=True)
class Plan:
    policy_name: str
    policy_version: str
    budget: int
    max_per_pattern: int
    inputs_digest: str
    candidate_count: int
    signalled_count: int
    selections: tuple[Selection, ...]
    patterns: tuple[PatternStat, ...] = field(default=())

    @property
    def capped_count(self) -> int:
        return sum(p.capped_count for p in self.patterns)

    def as_dict(self) -> dict:
        return {
            "policy": {"name": self.policy_name, "version": self.policy_version},
            "budget": self.budget,
            "max_per_pattern": self.max_per_pattern,
            "inputs_digest": self.inputs_digest,
            "candidate_count": self.candidate_count,
            "signalled_count": self.signalled_count,
            "capped_count": self.capped_count,
            "selections": [
                {
                    "rank": s.rank,
                    "case_id": s.case_id,
                    "signals": list(s.signals),
                    "pattern_key": s.pattern_key,
                    "reason": s.reason,
                }
                for s in self.selections
            ],
            "patterns": [
                {
                    "pattern_key": p.pattern_key,
                    "case_count": p.case_count,
                    "selected_count": p.selected_count,
                    "capped_count": p.capped_count,
                }
                for p in self.patterns
            ],
        }

    def canonical_json(self) -> bytes:
        return canonical_json(self.as_dict())

    @property
    def digest(self) -> str:
        """The plan's id: a content hash, so the same inputs give the same id."""
        return hashlib.sha256(self.canonical_json()).hexdigest()


def canonical_json(value: object) -> bytes:
    """One byte sequence per value: sorted keys, no spaces, UTF-8, no floats needed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def case_signals(case: CaseInput) -> tuple[str, ...]:
    signals = [GAP_PREFIX + gap for gap in case.gaps]
    signals.extend(MINED_PREFIX + strategy for strategy in case.mined_by)
    if case.sanitization_altered_outcome:
        signals.append(SIGNAL_SANITIZATION)
    if case.feedback_disagrees:
        signals.append(SIGNAL_FEEDBACK)
    return tuple(sorted(signals))


def pattern_key(case: CaseInput) -> str:
    """Deliberately coarse near-duplicate key: same subject, strategies and verdict."""
    return _pattern_key(case.claim_subject, case.mined_by, case.local_verdict)


def _pattern_key(subject: str, mined_by: tuple[str, ...], verdict: str) -> str:
    return hashlib.sha256(canonical_json([subject, sorted(mined_by), verdict])).hexdigest()


def signal_phrase(signal: str) -> str:
    if signal.startswith(GAP_PREFIX):
        gap = signal.removeprefix(GAP_PREFIX)
        return GAP_PHRASES.get(gap, f"its evidence has the gap “{gap}”")
    if signal.startswith(MINED_PREFIX):
        strategy = signal.removeprefix(MINED_PREFIX)
        return STRATEGY_PHRASES.get(strategy, f"it was mined by the “{strategy}” strategy")
    return OTHER_PHRASES.get(signal, signal)


def selection_reason(signals: Sequence[str]) -> str:
    """The plain-words reason a curator reads in the queue (copied there verbatim)."""
    if not signals:
        return NO_SIGNAL_REASON
    phrases = [signal_phrase(s) for s in signals]
    joined = phrases[0] if len(phrases) == 1 else "; ".join(phrases[:-1]) + "; and " + phrases[-1]
    count = f"{len(signals)} signal" + ("s" if len(signals) != 1 else "")
    return f"Needs a human ({count}): {joined}."


def inputs_digest(cases: Iterable[CaseInput]) -> str:
    """SHA-256 of everything the policy reads, independent of the order cases arrive in.

    One canonical JSON array of per-case arrays, sorted by case id: a single
    encoder call, which matters at 100,000 cases.
    """
    # Gap sets repeat (the corpus loader shares one frozenset per shape): sort each once.
    sorted_gaps: dict[frozenset[str], list[str]] = {}
    rows = []
    for case in sorted(cases, key=_case_id):
        gaps = sorted_gaps.get(case.gaps)
        if gaps is None:
            gaps = sorted_gaps[case.gaps] = sorted(case.gaps)
        rows.append(
            (
                case.case_id,
                case.claim_subject,
                case.local_verdict,
                case.mined_by,
                gaps,
                case.sanitization_altered_outcome,
                case.feedback_disagrees,
            )
        )
    return hashlib.sha256(canonical_json(rows)).hexdigest()


def _case_id(case: CaseInput) -> str:
    return case.case_id


def rank(cases: Iterable[CaseInput]) -> list[tuple[CaseInput, tuple[str, ...]]]:
    """All cases with their signals, most in need of a human first."""
    # Signal sets repeat across cases: derive each distinct one once, order the
    # distinct sets (more signals first, then lexical), then sort the cases by
    # (that position, case id), which compares an int before any string.
    cache: dict[tuple, tuple[str, ...]] = {}
    with_signals = []
    for case in cases:
        source = (case.gaps, case.mined_by, case.sanitization_altered_outcome, case.feedback_disagrees)
        signals = cache.get(source)
        if signals is None:
            signals = cache[source] = case_signals(case)
        with_signals.append((case, signals))
    order = {
        signals: position
        for position, signals in enumerate(sorted(set(cache.values()), key=lambda s: (-len(s), s)))
    }
    with_signals.sort(key=lambda item: (order[item[1]], item[0].case_id))
    return with_signals


def make_plan(
    cases: Iterable[CaseInput],
    *,
    budget: int,
    max_per_pattern: int = DEFAULT_MAX_PER_PATTERN,
) -> Plan:
    """Rank the cases, then take at most `budget`, at most `max_per_pattern` per pattern."""
    if budget < 1:
        raise ValueError("budget must be at least 1")
    if max_per_pattern < 1:
        raise ValueError("max_per_pattern must be at least 1")
    cases = list(cases)
    ids = Counter(case.case_id for case in cases)
    duplicated = sorted(case_id for case_id, n in ids.items() if n > 1)
    if duplicated:
        raise ValueError(f"case ids must be unique; repeated: {', '.join(duplicated[:5])}")

    # Many cases share a shape; hash each shape once.
    key_cache: dict[tuple[str, tuple[str, ...], str], str] = {}
    keys: dict[str, str] = {}
    for case in cases:
        shape = (case.claim_subject, case.mined_by, case.local_verdict)
        key = key_cache.get(shape)
        if key is None:
            key = key_cache[shape] = _pattern_key(*shape)
        keys[case.case_id] = key
    case_counts = Counter(keys.values())

    selections: list[Selection] = []
    selected_per_pattern: Counter[str] = Counter()
    capped_per_pattern: Counter[str] = Counter()
    ranked = rank(cases)
    for case, signals in ranked:
        if len(selections) == budget:
            break
        key = keys[case.case_id]
        if selected_per_pattern[key] >= max_per_pattern:
            capped_per_pattern[key] += 1
            continue
        selected_per_pattern[key] += 1
        selections.append(
            Selection(
                rank=len(selections) + 1,
                case_id=case.case_id,
                signals=signals,
                pattern_key=key,
                reason=selection_reason(signals),
            )
        )

    touched = sorted(set(selected_per_pattern) | set(capped_per_pattern))
    patterns = tuple(
        PatternStat(
            pattern_key=key,
            case_count=case_counts[key],
            selected_count=selected_per_pattern[key],
            capped_count=capped_per_pattern[key],
        )
        for key in touched
    )
    return Plan(
        policy_name=POLICY_NAME,
        policy_version=POLICY_VERSION,
        budget=budget,
        max_per_pattern=max_per_pattern,
        inputs_digest=inputs_digest(cases),
        candidate_count=len(cases),
        signalled_count=sum(1 for _, signals in ranked if signals),
        selections=tuple(selections),
        patterns=patterns,
    )
