"""Reads of the teaching app; every one takes the application explicitly."""

import json
from collections.abc import Iterator
from datetime import date

from django.db.models import Count, QuerySet

from consoles.dbfunctions import day_bounds
from consoles.errors import NotFound
from consoles.models import Application
from consoles.pagination import Keyset

from .domain import Chain, EvalCaseFacts
from .models import (
    Candidate,
    CorpusEntry,
    EvalCase,
    Proposal,
    ProposalEvent,
    ProposalState,
)

# The lists page by keyset (consoles.pagination), each on an index that ends in its order.
CANDIDATES = Keyset(("created_at", "id"), descending=True, scope="candidates")
PROPOSALS = Keyset(("created_at", "id"), descending=True, scope="proposals")
EVAL_CASES = Keyset(("split", "case_id"), descending=False, scope="eval-cases")


def candidate_list(*, application: Application) -> QuerySet[Candidate]:
    return Candidate.objects.filter(application=application).order_by("-created_at", "-id")


def candidate_get(*, application: Application, candidate_id: str) -> Candidate:
    candidate = Candidate.objects.filter(application=application, candidate_id=candidate_id).first()
    if candidate is None:
        raise NotFound(f"No candidate {candidate_id!r}.", fields={"candidate_id": "unknown"})
    return candidate


def proposal_list(*, application: Application, state: str | None = None) -> QuerySet[Proposal]:
    qs = Proposal.objects.filter(application=application)
    if state:
        qs = qs.filter(state=state)
    return qs.select_related("candidate", "decision__operator").order_by("-created_at", "-id")


def _no_such_proposal() -> NotFound:
    # One body whether the proposal is missing or another tenant's (ids are content
    # hashes): it does not echo the id, so the two answers are byte for byte the same.
    return NotFound("No such proposal.", fields={"proposal_id": "unknown"})


def proposal_get(*, application: Application, proposal_id: str) -> Proposal:
    proposal = (
        Proposal.objects.filter(application=application, proposal_id=proposal_id)
        .select_related("candidate", "decision__operator", "actor_user", "actor_token")
        .first()
    )
    if proposal is None:
        raise _no_such_proposal()
    return proposal


def proposal_find(*, applications: QuerySet[Application], proposal_id: str) -> list[Proposal]:
    """Proposals with this id among `applications` (those the caller may see); raises
    the same 404 as `proposal_get` when there is none."""
    found = list(Proposal.objects.filter(application__in=applications, proposal_id=proposal_id)
                 .select_related("application")[:2])
    if not found:
        raise _no_such_proposal()
    return found


def proposal_counts(*, application: Application) -> dict[str, int]:
    rows = (
        Proposal.objects.filter(application=application)
        .values("state")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {state: 0 for state in ProposalState.values}
    counts.update({row["state"]: row["n"] for row in rows})
    return counts


def proposal_pending_count(*, application: Application) -> int:
    return Proposal.objects.filter(application=application, state=ProposalState.PENDING).count()


def proposal_event_list(*, application: Application, proposal: Proposal | None = None) -> QuerySet[ProposalEvent]:
    qs = ProposalEvent.objects.filter(application=application)
    if proposal is not None:
        qs = qs.filter(proposal=proposal)
    return qs.select_related("actor_user", "actor_token", "proposal").order_by("id")


def corpus_list(*, application: Application) -> QuerySet[CorpusEntry]:
    """Every entry, retired ones included, with what retired them."""
    return (
        CorpusEntry.objects.filter(application=application)
        .select_related("operator", "proposal", "decision", "supersession__superseded_by", "supersession__operator")
        .order_by("id")
    )


def corpus_active(*, application: Application) -> QuerySet[CorpusEntry]:
    """The active corpus: entries no supersession has retired."""
    return (
        CorpusEntry.objects.filter(application=application, supersession__isnull=True)
        .select_related("operator", "proposal", "decision")
        .order_by("id")
    )


def corpus_active_chains(*, application: Application) -> tuple[Chain, ...]:
    """An immutable in-memory snapshot of the active corpus, for the eval lanes."""
    rows = corpus_active(application=application).values_list("subject", "intent", "connective", "object", "polarity")
    return tuple(Chain(*row) for row in rows)


def corpus_entry_get(*, application: Application, number: int) -> CorpusEntry:
    """The entry numbered `number` in the application's corpus (as the screens show it)."""
    entry = CorpusEntry.objects.filter(application=application, number=number).select_related("supersession").first()
    if entry is None:
        raise NotFound(f"No corpus entry {number}.", fields={"entry": "unknown"})
    return entry


def corpus_entry_record(entry: CorpusEntry) -> dict:
    """One active-corpus line: the chain and its typed provenance."""
    return {
        "id": entry.pk,
        "number": entry.number,
        "subject": entry.subject,
        "intent": entry.intent,
        "connective": entry.connective,
        "object": entry.object,
        "polarity": entry.polarity,
        "claim_domain": entry.claim_domain,
        "provenance": {
            "source": entry.source,
            "adr_id": entry.adr_id or None,
            "proposal_id": entry.proposal.proposal_id if entry.proposal_id else None,
            "decision": entry.decision.decision if entry.decision_id else None,
            "operator": entry.operator.get_username() if entry.operator_id else None,
            "review_date": entry.review_date.isoformat() if entry.review_date else None,
        },
    }


def corpus_active_jsonl(*, application: Application) -> Iterator[str]:
    """The active corpus as JSONL lines (sorted keys, so the bytes are reproducible)."""
    for entry in corpus_active(application=application).iterator(chunk_size=2000):
        yield json.dumps(corpus_entry_record(entry), sort_keys=True, ensure_ascii=False) + "\n"


def eval_case_list(*, application: Application, split: str | None = None) -> QuerySet[EvalCase]:
    qs = EvalCase.objects.filter(application=application)
    if split:
        qs = qs.filter(split=split)
    return qs.order_by("split", "case_id")


def eval_case_facts(*, application: Application) -> tuple[EvalCaseFacts, ...]:
    rows = eval_case_list(application=application).values_list(
        "case_id", "split", "subject", "intent", "expected_object", "expected_polarity"
    )
    return tuple(EvalCaseFacts(*row) for row in rows)


def proposal_resolve(*, application: Application, ref: str) -> Proposal:
    """A proposal by full id or by a unique prefix of at least 8 characters (what
    the screens and `teaching proposals` show), for operators typing ids."""
    ref = (ref or "").strip().lower()
    if len(ref) == 64:
        return proposal_get(application=application, proposal_id=ref)
    if len(ref) < 8:
        raise NotFound(f"No proposal {ref!r}: give the id or at least 8 characters of it.")
    matches = list(
        Proposal.objects.filter(application=application, proposal_id__startswith=ref).values_list("proposal_id", flat=True)[:2]
    )
    if len(matches) != 1:
        raise NotFound(f"No proposal matches {ref!r} (unknown, or a prefix shared by several).", fields={"proposal_id": "unknown or ambiguous"})
    return proposal_get(application=application, proposal_id=matches[0])


def proposal_record(proposal: Proposal) -> dict:
    """The JSON shape of a proposal (API and `--json`)."""
    decision = getattr(proposal, "decision", None) if proposal.state not in ("pending",) else None
    return {
        "proposal_id": proposal.proposal_id,
        "source_candidate_id": proposal.candidate.candidate_id,
        "proposed_chain": proposal.chain,
        "polarity": proposal.polarity,
        "claim_domain": proposal.claim_domain,
        "evidence": proposal.evidence,
        "allow_evaluative": proposal.allow_evaluative,
        "review_state": proposal.state,
        "operator_note": proposal.operator_note,
        "replay_evidence": {
            "baseline": proposal.baseline,
            "candidate": proposal.candidate_metrics,
            "regressed_metrics": proposal.regressed_metrics,
            "replay_equivalent": proposal.replay_equivalent,
        },
        "decision": (
            {
                "decision": decision.decision,
                "operator": decision.operator.get_username(),
                "decided_at": decision.decided_at.isoformat(),
            }
            if decision is not None
            else None
        ),
        "created_at": proposal.created_at.isoformat(),
    }


# --- Overview aggregates ---------------------------------------------------------

# A proposal the replay gate rejected (a regression), told apart from an operator's rejection.
AUTO_REJECTED = "auto_rejected"


def proposal_state_counts_between(*, application: Application, first: date, last: date) -> dict[str, int]:
    """Proposals made on UTC days first..last by state, a rejection by the replay
    gate (`auto_rejected`) apart from an operator's."""
    start, end = day_bounds(first, last)
    rows = (
        Proposal.objects.filter(application=application, created_at__gte=start, created_at__lt=end)
        .values("state", "replay_equivalent")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {state: 0 for state in (*ProposalState.values, AUTO_REJECTED)}
    for row in rows:
        key = row["state"]
        if key == ProposalState.REJECTED and not row["replay_equivalent"]:
            key = AUTO_REJECTED
        counts[key] += row["n"]
    return counts


def proposal_gate_outcomes(*, application: Application, limit: int = 8) -> QuerySet[Proposal]:
    """The newest proposals with what the replay gate found (for the overview)."""
    return (
        Proposal.objects.filter(application=application)
        .only(
            "proposal_id", "subject", "intent", "connective", "object", "state", "replay_equivalent",
            "regressed_metrics", "created_at",
        )
        .order_by("-created_at", "-id")[:limit]
    )
