"""Writes of the teaching app. Each service runs in one transaction and appends its
event rows in that same transaction; nothing here ever updates or deletes a corpus
entry, a decision or an event.
"""

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from consoles import webhooks
from consoles.errors import Conflict, InvalidInput, PermissionDeniedError
from consoles.files import check_export_target, publish, stage_write
from consoles.models import ApiToken, Application, Membership, Role
from consoles.text import humanise
from consoles.timestamps import iso_utc, on_screen

from . import selectors
from .domain import (
    CANDIDATE_ID_PATTERN,
    CHAIN_FIELDS,
    CandidateFacts,
    Chain,
    ReplayEvidence,
    check_eligibility,
    failed_gates,
    proposal_id_for,
    replay_gate,
)
from .models import (
    ADR_ID,
    ActorKind,
    Candidate,
    CorpusEntry,
    CorpusSource,
    CorpusSupersession,
    Decision,
    EvalCase,
    EventKind,
    HedgeTier,
    Polarity,
    Proposal,
    ProposalDecision,
    ProposalEvent,
    ProposalState,
    Split,
)

MAX_TEXT = 500
MAX_EVIDENCE = 50


@dataclass(frozen=True)
class Actor:
    """Who did something: a human, an application token, or the console itself."""

    kind: str
    user: AbstractBaseUser | None = None
    token: ApiToken | None = None

    @classmethod
    def human(cls, user: AbstractBaseUser) -> "Actor":
        return cls(kind=ActorKind.USER, user=user)

    @classmethod
    def system(cls) -> "Actor":
        return cls(kind=ActorKind.SYSTEM)

    @classmethod
    def from_principal(cls, principal: Any) -> "Actor":
        if principal.kind == "application":
            return cls(kind=ActorKind.TOKEN, token=principal.token)
        return cls.human(principal.user)

    def columns(self) -> dict[str, Any]:
        return {"actor_kind": self.kind, "actor_user": self.user, "actor_token": self.token}


class Ineligible(InvalidInput):
    """A candidate failed one or more eligibility gates; it stays a candidate."""

    code = "ineligible"


# --- input validation (shared by the API and the JSONL imports) -----------------


def _text(data: Mapping[str, Any], name: str, errors: dict[str, str], *, required: bool, label: str | None = None) -> str:
    value = data.get(name)
    key = label or name
    if value is None:
        if required:
            errors[key] = "required"
        return ""
    if not isinstance(value, str):
        errors[key] = "must be a string"
        return ""
    value = value.strip()
    if required and not value:
        errors[key] = "must not be empty"
    elif len(value) > MAX_TEXT:
        errors[key] = f"at most {MAX_TEXT} characters"
    return value


def _choice(data: Mapping[str, Any], name: str, allowed: Iterable[str], errors: dict[str, str]) -> str:
    value = data.get(name)
    allowed = list(allowed)
    if value not in allowed:
        errors[name] = f"must be one of {', '.join(allowed)}"
        return ""
    return value


def _candidate_id(data: Mapping[str, Any], name: str, errors: dict[str, str]) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not re.match(CANDIDATE_ID_PATTERN, value):
        errors[name] = "required: 1-128 letters, digits, dots, underscores, colons or hyphens"
        return ""
    return value


def candidate_clean(data: Any) -> dict[str, Any]:
    """Validate one discovery candidate; InvalidInput names every bad field."""
    if not isinstance(data, Mapping):
        raise InvalidInput("A candidate is a JSON object.", fields={"__all__": "expected an object"})
    errors: dict[str, str] = {}
    cleaned: dict[str, Any] = {"candidate_id": _candidate_id(data, "candidate_id", errors)}
    chain = data.get("proposed_chain")
    if not isinstance(chain, Mapping):
        errors["proposed_chain"] = "required: an object with subject, intent, connective, object"
        chain = {}
    for name in CHAIN_FIELDS:
        # Missing chain parts are kept (empty): completeness is the chain_complete gate.
        cleaned[name] = _text(chain, name, errors, required=False, label=f"proposed_chain.{name}")
    cleaned["polarity"] = _choice(data, "polarity", Polarity.values, errors)
    cleaned["claim_domain"] = _text(data, "claim_domain", errors, required=True)
    if len(cleaned["claim_domain"]) > 64:
        errors["claim_domain"] = "at most 64 characters"
    evidence = data.get("evidence", [])
    if not isinstance(evidence, list) or len(evidence) > MAX_EVIDENCE:
        errors["evidence"] = f"a list of at most {MAX_EVIDENCE} evidence pointers"
        evidence = []
    pointers = []
    for i, pointer in enumerate(evidence):
        if not isinstance(pointer, Mapping) or not isinstance(pointer.get("source"), str) or not pointer["source"].strip():
            errors[f"evidence.{i}.source"] = "each evidence pointer needs a non-empty source"
            continue
        ref = pointer.get("ref", "")
        if not isinstance(ref, str) or len(ref) > MAX_TEXT:
            errors[f"evidence.{i}.ref"] = f"a string of at most {MAX_TEXT} characters"
            continue
        pointers.append({"source": pointer["source"].strip(), "ref": ref})
    cleaned["evidence"] = pointers
    boundary_clean = data.get("boundary_clean")
    if not isinstance(boundary_clean, bool):
        errors["boundary_clean"] = "required: true or false"
    cleaned["boundary_clean"] = bool(boundary_clean)
    hedge = data.get("hedge") or {}
    if not isinstance(hedge, Mapping):
        errors["hedge"] = 'an object {"tier": "weak"|"strong", "surface": "..."} or null'
        hedge = {}
    tier = hedge.get("tier", "") or ""
    if tier not in HedgeTier.values:
        errors["hedge.tier"] = "must be weak or strong"
    cleaned["hedge_tier"] = tier if tier in HedgeTier.values else ""
    cleaned["hedge_surface"] = _text(hedge, "surface", errors, required=False, label="hedge.surface")
    if errors:
        raise InvalidInput("The candidate is not valid.", fields=errors)
    return cleaned


def eval_case_clean(data: Any) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise InvalidInput("An eval case is a JSON object.", fields={"__all__": "expected an object"})
    errors: dict[str, str] = {}
    cleaned = {
        "case_id": _candidate_id(data, "case_id", errors),
        "split": _choice(data, "split", Split.values, errors),
        "subject": _text(data, "subject", errors, required=True),
        "intent": _text(data, "intent", errors, required=True),
        "expected_object": _text(data, "expected_object", errors, required=True),
        "expected_polarity": _choice(data, "expected_polarity", [Polarity.AFFIRMS, Polarity.FALSIFIES], errors),
    }
    if errors:
        raise InvalidInput("The eval case is not valid.", fields=errors)
    return cleaned


def _line_error(exc: InvalidInput, line: int) -> InvalidInput:
    detail = "; ".join(f"{k}: {v}" for k, v in exc.fields.items())
    return InvalidInput(
        f"line {line}: {exc.message} {detail}".strip(),
        code=exc.code,
        fields={f"line {line}.{k}": v for k, v in exc.fields.items()},
    )


# --- candidates -------------------------------------------------------------------


def candidate_facts(candidate: Candidate) -> CandidateFacts:
    return CandidateFacts(
        subject=candidate.subject,
        intent=candidate.intent,
        connective=candidate.connective,
        object=candidate.object,
        polarity=candidate.polarity,
        claim_domain=candidate.claim_domain,
        evidence=candidate.evidence,
        boundary_clean=candidate.boundary_clean,
        hedge_tier=candidate.hedge_tier,
        hedge_surface=candidate.hedge_surface,
    )


def _same_candidate(existing: Candidate, cleaned: Mapping[str, Any]) -> bool:
    return all(getattr(existing, name) == value for name, value in cleaned.items())


def _candidate_store(*, application: Application, cleaned: dict[str, Any], actor: Actor) -> tuple[Candidate, bool]:
    existing = Candidate.objects.filter(application=application, candidate_id=cleaned["candidate_id"]).first()
    if existing is not None:
        if _same_candidate(existing, cleaned):
            return existing, False
        raise Conflict(
            f"Candidate {cleaned['candidate_id']!r} was already submitted with different content; "
            "candidates are evidence and are never rewritten.",
            code="candidate_conflict",
            fields={"candidate_id": "already exists with different content"},
        )
    try:
        with transaction.atomic():
            return Candidate.objects.create(application=application, **cleaned, **actor.columns()), True
    except IntegrityError as exc:
        # A concurrent submission of the same id won the race: same rules as above.
        existing = Candidate.objects.get(application=application, candidate_id=cleaned["candidate_id"])
        if _same_candidate(existing, cleaned):
            return existing, False
        raise Conflict("Candidate was submitted concurrently with different content.", code="candidate_conflict") from exc


def candidate_submit(*, application: Application, data: Any, actor: Actor) -> tuple[Candidate, bool]:
    """Store one candidate (idempotent on identical content); (candidate, created)."""
    cleaned = candidate_clean(data)
    with transaction.atomic():
        return _candidate_store(application=application, cleaned=cleaned, actor=actor)


@dataclass
class ImportResult:
    created: int = 0
    unchanged: int = 0
    updated: int = 0
    ineligible: dict[str, list[str]] = field(default_factory=dict)  # candidate id -> failing gates


def candidates_import(*, application: Application, records: Iterable[tuple[int, Any]], actor: Actor) -> ImportResult:
    """Import (line number, record) pairs all or nothing: a bad line names itself and
    nothing is written."""
    result = ImportResult()
    with transaction.atomic():
        for line, record in records:
            try:
                cleaned = candidate_clean(record)
                candidate, created = _candidate_store(application=application, cleaned=cleaned, actor=actor)
            except InvalidInput as exc:
                raise _line_error(exc, line) from exc
            except Conflict as exc:
                raise Conflict(f"line {line}: {exc.message}", code=exc.code, fields=exc.fields) from exc
            if created:
                result.created += 1
            else:
                result.unchanged += 1
            failing = failed_gates(check_eligibility(candidate_facts(candidate)))
            if failing:
                result.ineligible[candidate.candidate_id] = [g.gate for g in failing]
    return result


# --- eval cases -------------------------------------------------------------------


def eval_cases_import(*, application: Application, records: Iterable[tuple[int, Any]]) -> ImportResult:
    """Create or update eval cases by case id, all or nothing."""
    result = ImportResult()
    with transaction.atomic():
        seen: set[str] = set()
        for line, record in records:
            try:
                cleaned = eval_case_clean(record)
            except InvalidInput as exc:
                raise _line_error(exc, line) from exc
            if cleaned["case_id"] in seen:
                raise InvalidInput(
                    f"line {line}: case {cleaned['case_id']!r} appears twice in this import.",
                    fields={f"line {line}.case_id": "duplicate"},
                )
            seen.add(cleaned["case_id"])
            case = EvalCase.objects.filter(application=application, case_id=cleaned["case_id"]).first()
            if case is None:
                EvalCase.objects.create(application=application, **cleaned)
                result.created += 1
            elif all(getattr(case, k) == v for k, v in cleaned.items()):
                result.unchanged += 1
            else:
                for k, v in cleaned.items():
                    setattr(case, k, v)
                case.save()
                result.updated += 1
    return result


# --- proposals --------------------------------------------------------------------


def _event(proposal: Proposal, *, kind: str, from_state: str, to_state: str, actor: Actor, note: str = "") -> ProposalEvent:
    return ProposalEvent.objects.create(
        application_id=proposal.application_id,
        proposal=proposal,
        kind=kind,
        from_state=from_state,
        to_state=to_state,
        note=note,
        **actor.columns(),
    )


def replay_gate_run(*, application: Application, chain: Chain) -> ReplayEvidence:
    """The replay-equivalence gate. It only reads: the active corpus is loaded into an
    immutable tuple and the candidate view is built in memory from it."""
    return replay_gate(
        selectors.corpus_active_chains(application=application),
        chain,
        selectors.eval_case_facts(application=application),
    )


def proposal_create(
    *, application: Application, candidate_id: str, actor: Actor, allow_evaluative: bool = False
) -> tuple[Proposal, bool]:
    """Turn an eligible candidate into a proposal and run the replay gate.

    Idempotent: the id is SHA-256(candidate id + canonical chain), and proposing the
    same candidate again returns the existing proposal (whatever its state) without
    re-running anything. Returns (proposal, created).
    """
    if allow_evaluative and actor.kind == ActorKind.TOKEN:
        # An operator-only switch: letting an evaluative claim through is a person's call
        # (a curator's session or personal token, or the operator's own shell command).
        raise PermissionDeniedError(
            "allow_evaluative is an operator's switch; an application token cannot set it.",
            code="human_required",
            fields={"allow_evaluative": "needs a human curator"},
        )
    candidate = selectors.candidate_get(application=application, candidate_id=candidate_id)
    proposal_id = proposal_id_for(candidate.candidate_id, candidate.chain)
    existing = Proposal.objects.filter(application=application, proposal_id=proposal_id).first()
    if existing is not None:
        return existing, False
    failing = failed_gates(check_eligibility(candidate_facts(candidate), allow_evaluative=allow_evaluative))
    if failing:
        raise Ineligible(
            f"Candidate {candidate.candidate_id!r} is not eligible: "
            + "; ".join(f"{humanise(g.gate)} ({g.reason})" for g in failing),
            fields={"gates": ", ".join(g.gate for g in failing), **{f"gate.{g.gate}": g.reason for g in failing}},
        )
    chain = Chain(**candidate.chain, polarity=candidate.polarity)
    try:
        with transaction.atomic():
            evidence = replay_gate_run(application=application, chain=chain)
            proposal = Proposal.objects.create(
                application=application,
                proposal_id=proposal_id,
                candidate=candidate,
                **candidate.chain,
                polarity=candidate.polarity,
                claim_domain=candidate.claim_domain,
                evidence=candidate.evidence,
                allow_evaluative=allow_evaluative,
                state=ProposalState.PENDING,
                baseline=evidence.baseline,
                candidate_metrics=evidence.candidate,
                regressed_metrics=list(evidence.regressed_metrics),
                replay_equivalent=evidence.replay_equivalent,
                **actor.columns(),
            )
            _event(proposal, kind=EventKind.PROPOSED, from_state="", to_state=ProposalState.PENDING, actor=actor)
            if not evidence.replay_equivalent:
                # Mechanical rollback: the gate, not a person, rejects a regression.
                proposal.state = ProposalState.REJECTED
                proposal.operator_note = evidence.note
                proposal.save(update_fields=["state", "operator_note", "updated_at"])
                _event(
                    proposal,
                    kind=EventKind.AUTO_REJECTED,
                    from_state=ProposalState.PENDING,
                    to_state=ProposalState.REJECTED,
                    actor=Actor.system(),
                    note=evidence.note,
                )
    except IntegrityError:
        # Proposed concurrently: the other transaction's row is the proposal.
        existing = Proposal.objects.filter(application=application, proposal_id=proposal_id).first()
        if existing is None:
            raise
        return existing, False
    return proposal, True


_DECISION_STATE = {
    Decision.ACCEPT: (ProposalState.ACCEPTED, EventKind.ACCEPTED),
    Decision.REJECT: (ProposalState.REJECTED, EventKind.REJECTED),
    Decision.WITHDRAW: (ProposalState.WITHDRAWN, EventKind.WITHDRAWN),
}


def _require_operator(*, application: Application, operator: Any) -> None:
    """Decisions are made by a human member with at least the curator role."""
    if not isinstance(operator, AbstractBaseUser) or not operator.is_active:
        raise PermissionDeniedError("A decision needs an active human operator.", code="human_required")
    membership = Membership.objects.filter(user=operator, application=application).first()
    if membership is None or not membership.has_role(Role.CURATOR):
        raise PermissionDeniedError(
            f"{operator.get_username()} is not a curator of {application.slug}.", code="role_required"
        )


def proposal_decide(
    *, application: Application, proposal_id: str, decision: str, operator: AbstractBaseUser, note: str = ""
) -> Proposal:
    """An operator accepts, rejects or withdraws a pending proposal.

    Accept is refused unless the proposal is replay-equivalent, both as stored and
    against the corpus as it is now (another accept may have changed it since the
    gate ran); it then appends exactly one corpus entry with provenance. Reject and
    withdraw change the state only.
    """
    if decision not in Decision.values:
        raise InvalidInput("Choose accept, reject or withdraw.", fields={"decision": "must be accept, reject or withdraw"})
    note = (note or "").strip()
    if len(note) > 2000:
        raise InvalidInput("The note is too long.", fields={"note": "at most 2000 characters"})
    _require_operator(application=application, operator=operator)
    with transaction.atomic():
        # Serialise decisions of one application: accepts append to one corpus, and
        # the fresh replay below must see every earlier accept.
        Application.objects.select_for_update().filter(pk=application.pk).first()
        proposal = selectors.proposal_get(application=application, proposal_id=proposal_id)
        # Non-equivalence is reported first: it is the reason an auto-rejected proposal
        # can never be accepted, which says more than "already rejected".
        if decision == Decision.ACCEPT and not proposal.replay_equivalent:
            raise InvalidInput(
                "Refused: this proposal is not replay-equivalent "
                f"(regressed: {', '.join(proposal.regressed_metrics)}); it cannot be accepted.",
                code="not_replay_equivalent",
                fields={"decision": "not replay-equivalent"},
            )
        if proposal.state != ProposalState.PENDING:
            decided = getattr(proposal, "decision", None)  # none when the replay gate rejected it
            by = (f"by {decided.operator.get_username()} on {on_screen(decided.decided_at)}" if decided
                  else "by the replay gate")
            raise Conflict(
                f"Proposal {proposal_id[:12]} is already {proposal.get_state_display().lower()} {by}; "
                "decisions are final, so nothing was changed.",
                code="already_decided",
                current={"state": proposal.state},
            )
        if decision == Decision.ACCEPT:
            fresh = replay_gate_run(
                application=application, chain=Chain(**proposal.chain, polarity=proposal.polarity)
            )
            if not fresh.replay_equivalent:
                raise InvalidInput(
                    "Refused: the corpus changed since the gate ran and this proposal now regresses "
                    f"{', '.join(fresh.regressed_metrics)}; reject or withdraw it.",
                    code="not_replay_equivalent",
                    fields={"decision": "not replay-equivalent against the current corpus"},
                )
        new_state, event_kind = _DECISION_STATE[Decision(decision)]
        decision_row = ProposalDecision.objects.create(
            application=application, proposal=proposal, decision=decision, operator=operator, note=note
        )
        if decision == Decision.ACCEPT:
            CorpusEntry.objects.create(
                application=application,
                number=_next_corpus_number(application),
                **proposal.chain,
                polarity=proposal.polarity,
                claim_domain=proposal.claim_domain,
                source=CorpusSource.DISCOVERY_PROMOTED,
                adr_id=ADR_ID,
                proposal=proposal,
                decision=decision_row,
                operator=operator,
                # The operator's decision date is the only timestamp in the provenance.
                review_date=timezone.localdate(decision_row.decided_at),
            )
        proposal.state = new_state
        proposal.operator_note = note
        proposal.save(update_fields=["state", "operator_note", "updated_at"])
        _event(
            proposal,
            kind=event_kind,
            from_state=ProposalState.PENDING,
            to_state=new_state,
            actor=Actor.human(operator),
            note=note,
        )
        if decision in (Decision.ACCEPT, Decision.REJECT):
            webhooks.event_record(application=application, type=f"proposal.{new_state}", data={"proposal_id": proposal.proposal_id, "state": new_state, "operator": operator.get_username()})  # noqa: E501
    return proposal


# --- the corpus ---------------------------------------------------------------------


def _next_corpus_number(application: Application) -> int:
    """The application's next corpus number. The caller holds the application's
    row lock (PostgreSQL; SQLite's immediate transactions serialize writers), and
    the unique (application, number) constraint refuses what a race would repeat."""
    last = CorpusEntry.objects.filter(application=application).aggregate(last=Max("number"))["last"]
    return (last or 0) + 1


def corpus_seed(*, application: Application, chains: Iterable[Mapping[str, str]]) -> int:
    """Append seed entries (demo data, a first corpus); returns how many were added."""
    added = 0
    with transaction.atomic():
        Application.objects.select_for_update().filter(pk=application.pk).first()
        for chain in chains:
            CorpusEntry.objects.create(
                application=application,
                number=_next_corpus_number(application),
                subject=chain["subject"],
                intent=chain["intent"],
                connective=chain["connective"],
                object=chain["object"],
                polarity=chain["polarity"],
                claim_domain=chain.get("claim_domain", "factual"),
                source=CorpusSource.SEED,
            )
            added += 1
    return added


def corpus_supersede(
    *, application: Application, entry_number: int, superseded_by_number: int, operator: AbstractBaseUser, note: str = ""
) -> CorpusSupersession:
    """Retire an active entry in favour of another active entry of the same corpus.

    A separate operator action: no accept ever retires anything by itself.
    Entries are named by their number in the application's corpus.
    """
    _require_operator(application=application, operator=operator)
    if entry_number == superseded_by_number:
        raise InvalidInput("An entry cannot supersede itself.", fields={"superseded_by": "must be another entry"})
    with transaction.atomic():
        Application.objects.select_for_update().filter(pk=application.pk).first()
        entry = selectors.corpus_entry_get(application=application, number=entry_number)
        replacement = selectors.corpus_entry_get(application=application, number=superseded_by_number)
        if hasattr(entry, "supersession"):
            retired = entry.supersession
            raise Conflict(
                f"Entry {entry_number} is already retired: superseded by #{retired.superseded_by.number} "
                f"({retired.operator.get_username()}, {on_screen(retired.created_at)}); nothing was changed. "
                "Only an active entry can be retired.",
                code="already_superseded",
            )
        if hasattr(replacement, "supersession"):
            raise InvalidInput(
                f"Entry {superseded_by_number} is itself retired.", fields={"superseded_by": "must be an active entry"}
            )
        return CorpusSupersession.objects.create(
            application=application, entry=entry, superseded_by=replacement, operator=operator, note=(note or "").strip()
        )


def corpus_export(*, application: Application, out: Path) -> int:
    """Write the active corpus as JSONL, atomically, with a manifest beside it; returns lines.

    `out` may replace an earlier export (known by its manifest), never another
    file or a symbolic link: a mistyped `--out` cannot overwrite settings or a
    dataset. Refused targets are refused before anything is read or written.
    """
    out = check_export_target(Path(out))
    lines = 0
    digest = hashlib.sha256()

    def chunks() -> Iterator[bytes]:
        nonlocal lines
        for line in selectors.corpus_active_jsonl(application=application):
            data = line.encode()
            digest.update(data)
            lines += 1
            yield data

    staged = stage_write(out, chunks())
    publish(staged, {
        "kind": "teaching_corpus",
        "application": application.slug,
        "entries": lines,
        "bytes": staged.size,
        "sha256": digest.hexdigest(),
        "written_at": iso_utc(timezone.now()),
    })
    return lines
