"""Plain-Python core of teaching: chains, the five eligibility gates, proposal ids,
the eval lanes and the replay-equivalence comparison, and the fold that rebuilds
proposal states from the event log. No ORM here, so all of it is tested without a
database and the gate can run on an in-memory view of the corpus.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

CHAIN_FIELDS = ("subject", "intent", "connective", "object")
DECIDED_POLARITIES = ("affirms", "falsifies")
SPLITS = ("public", "dev", "holdout")
EVALUATIVE = "evaluative"
STRONG_HEDGE = "strong"
AUTO_ROLLBACK_PREFIX = "auto_rollback_regression"


# --- chains and ids ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Chain:
    subject: str
    intent: str
    connective: str
    object: str
    polarity: str


def canonical_chain(chain: Mapping[str, str | None]) -> str:
    """The chain payload hashed into a proposal id: the four fields only, sorted keys,
    no whitespace, so the same chain always gives the same bytes."""
    return json.dumps(
        {name: chain.get(name) for name in CHAIN_FIELDS},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )


def proposal_id_for(candidate_id: str, chain: Mapping[str, str | None]) -> str:
    """SHA-256 of the candidate id followed by the canonical chain.

    Candidate ids cannot contain "{" (see CANDIDATE_ID_PATTERN) and the canonical
    chain starts with one, so the concatenation is unambiguous.
    """
    return hashlib.sha256((candidate_id + canonical_chain(chain)).encode("utf-8")).hexdigest()


CANDIDATE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"


# --- eligibility gates --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CandidateFacts:
    """What the gates look at; built from a candidate row or straight from input."""

    subject: str | None
    intent: str | None
    connective: str | None
    object: str | None
    polarity: str
    claim_domain: str
    evidence: Sequence[Mapping[str, object]]
    boundary_clean: bool
    hedge_tier: str = ""
    hedge_surface: str = ""


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: str
    passed: bool
    reason: str = ""


def _polarity_decided(c: CandidateFacts, allow_evaluative: bool) -> str:
    if c.polarity not in DECIDED_POLARITIES:
        return f"polarity is {c.polarity!r}; it must be affirms or falsifies"
    return ""


def _corpus_evidence(c: CandidateFacts, allow_evaluative: bool) -> str:
    if not any(isinstance(p, Mapping) and p.get("source") == "corpus" for p in c.evidence):
        return 'no evidence pointer with source "corpus" (pack residency alone is not relation evidence)'
    return ""


def _evaluative_allowed(c: CandidateFacts, allow_evaluative: bool) -> str:
    if c.claim_domain != EVALUATIVE:
        return ""
    if not allow_evaluative:
        return "an evaluative claim needs the explicit allow-evaluative flag"
    if c.hedge_tier != STRONG_HEDGE or not c.hedge_surface.strip():
        return "an evaluative claim needs a strong-tier hedge surface attached"
    return ""


def _boundary_clean(c: CandidateFacts, allow_evaluative: bool) -> str:
    if not c.boundary_clean:
        return "the source turn was under refusal or hedge (boundary_clean is false)"
    return ""


def _chain_complete(c: CandidateFacts, allow_evaluative: bool) -> str:
    missing = [name for name in CHAIN_FIELDS if not (getattr(c, name) or "").strip()]
    if missing:
        return "the chain is missing " + ", ".join(missing)
    return ""


# Order matters only for display; every gate is always evaluated.
GATES: tuple[tuple[str, Callable[[CandidateFacts, bool], str]], ...] = (
    ("polarity_decided", _polarity_decided),
    ("corpus_evidence", _corpus_evidence),
    ("evaluative_allowed", _evaluative_allowed),
    ("boundary_clean", _boundary_clean),
    ("chain_complete", _chain_complete),
)
GATE_NAMES = tuple(name for name, _ in GATES)


def check_eligibility(candidate: CandidateFacts, *, allow_evaluative: bool = False) -> list[GateResult]:
    results = []
    for name, gate in GATES:
        reason = gate(candidate, allow_evaluative)
        results.append(GateResult(gate=name, passed=not reason, reason=reason))
    return results


def failed_gates(results: Iterable[GateResult]) -> list[GateResult]:
    return [r for r in results if not r.passed]


# --- eval lanes ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalCaseFacts:
    case_id: str
    split: str
    subject: str
    intent: str
    expected_object: str
    expected_polarity: str


class Lane(Protocol):
    key: str
    label: str
    description: str

    def evaluate(self, corpus: Sequence[Chain], cases: Sequence[EvalCaseFacts]) -> dict[str, float]:
        """Named metrics (e.g. "accuracy.public"); deterministic in its inputs."""
        ...


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class CorpusLookupLane:
    """The built-in lane: answer each case's (subject, intent) from the corpus.

    The answer is the set of distinct (object, polarity) pairs the corpus holds for
    that key, compared case-insensitively. A case is *answered* when the set is not
    empty and *correct* when it holds exactly one pair equal to the expected one (a
    corpus that says two different things answers ambiguously, which is wrong).
    The answer does not depend on corpus order, so the lane is deterministic.

    Per split with at least one case:
      accuracy  = correct / cases
      coverage  = answered / cases
      precision = correct / answered (1.0 when nothing is answered: no wrong answer given)
    """

    key: str = "lookup"
    label: str = "Corpus lookup"
    description: str = "Answers subject + intent with the corpus's object and polarity."
    metric_names: tuple[str, ...] = ("accuracy", "coverage", "precision")

    def evaluate(self, corpus: Sequence[Chain], cases: Sequence[EvalCaseFacts]) -> dict[str, float]:
        index: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for chain in corpus:
            index.setdefault((_norm(chain.subject), _norm(chain.intent)), set()).add(
                (_norm(chain.object), chain.polarity)
            )
        metrics: dict[str, float] = {}
        for split in SPLITS:
            split_cases = [c for c in cases if c.split == split]
            if not split_cases:
                continue
            answered = correct = 0
            for case in split_cases:
                answer = index.get((_norm(case.subject), _norm(case.intent)))
                if not answer:
                    continue
                answered += 1
                if answer == {(_norm(case.expected_object), case.expected_polarity)}:
                    correct += 1
            total = len(split_cases)
            metrics[f"accuracy.{split}"] = correct / total
            metrics[f"coverage.{split}"] = answered / total
            metrics[f"precision.{split}"] = correct / answered if answered else 1.0
        return metrics


_LANES: dict[str, Lane] = {}


def register_lane(lane: Lane) -> None:
    _LANES[lane.key] = lane


def unregister_lane(key: str) -> None:
    _LANES.pop(key, None)


def lanes() -> list[Lane]:
    return [_LANES[key] for key in sorted(_LANES)]


register_lane(CorpusLookupLane())


def run_lanes(corpus: Sequence[Chain], cases: Sequence[EvalCaseFacts]) -> dict[str, float]:
    """Every registered lane's metrics, named "<lane>.<metric>.<split>"."""
    metrics: dict[str, float] = {}
    for lane in lanes():
        for name, value in lane.evaluate(corpus, cases).items():
            metrics[f"{lane.key}.{name}"] = float(value)
    return metrics


# --- replay-equivalence ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayEvidence:
    baseline: dict[str, float]
    candidate: dict[str, float]
    regressed_metrics: tuple[str, ...]
    replay_equivalent: bool

    @property
    def note(self) -> str:
        if self.replay_equivalent:
            return ""
        return f"{AUTO_ROLLBACK_PREFIX}: {', '.join(self.regressed_metrics)}"


def compare_metrics(baseline: Mapping[str, float], candidate: Mapping[str, float]) -> ReplayEvidence:
    """A metric regresses iff its candidate value is strictly below baseline.

    No tolerance: the lanes are deterministic, so any drop is real. A baseline
    metric missing from the candidate run counts as a regression (fail closed).
    """
    regressed = tuple(
        sorted(name for name, value in baseline.items() if name not in candidate or candidate[name] < value)
    )
    return ReplayEvidence(
        baseline=dict(baseline),
        candidate=dict(candidate),
        regressed_metrics=regressed,
        replay_equivalent=not regressed,
    )


def replay_gate(
    corpus: Sequence[Chain], proposed: Chain, cases: Sequence[EvalCaseFacts]
) -> ReplayEvidence:
    """Run the lanes on the active corpus and on an in-memory copy plus the chain.

    `corpus` is a snapshot the caller read; the candidate view is a new tuple, so
    nothing the caller holds, and nothing stored, is ever written.
    """
    baseline_view = tuple(corpus)
    candidate_view = (*baseline_view, proposed)
    return compare_metrics(run_lanes(baseline_view, cases), run_lanes(candidate_view, cases))


# --- the event log ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventFacts:
    proposal_id: str
    kind: str
    from_state: str
    to_state: str


@dataclass
class ReplayedLog:
    states: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


TERMINAL_STATES = ("accepted", "rejected", "withdrawn")


def fold_events(events: Iterable[EventFacts]) -> ReplayedLog:
    """Rebuild every proposal's state from its events, in log order.

    Each event must start from the state the previous one left (a proposal is
    created by "proposed" and terminal states never change); anything else is
    reported, so a tampered or out-of-order log is visible.
    """
    log = ReplayedLog()
    for event in events:
        current = log.states.get(event.proposal_id, "")
        if event.from_state != current:
            log.errors.append(
                f"{event.proposal_id}: {event.kind} expects {event.from_state or 'nothing'}, found {current or 'nothing'}"
            )
        elif current in TERMINAL_STATES:
            log.errors.append(f"{event.proposal_id}: {event.kind} after terminal state {current}")
        log.states[event.proposal_id] = event.to_state
    return log
