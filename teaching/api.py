"""JSON endpoints of the teaching app (mounted under /api/v1 by consoles.urls).

Integrations (an application token) submit candidates and eval cases and may ask
for a proposal; only a human (personal token or session) with the curator role
decides one.
"""

from typing import Any, Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Field, Router, Schema
from ninja.responses import Status

from consoles.access import Principal
from consoles.api import ERRORS, ErrorOut
from consoles.errors import InvalidInput, NotFound
from consoles.models import Application, Role
from consoles.schemas import StrictIn

from . import selectors, services
from .domain import check_eligibility
from .models import Proposal

router = Router(tags=["teaching"])


class ChainIn(StrictIn):
    subject: str | None = None
    intent: str | None = None
    connective: str | None = None
    object: str | None = None


class EvidenceIn(StrictIn):
    source: str = Field(..., description='Where the evidence comes from, e.g. "corpus".')
    ref: str = ""


class HedgeIn(StrictIn):
    tier: Literal["weak", "strong"]
    surface: str = ""


class CandidateIn(StrictIn):
    application_id: str | None = Field(None, description="Application slug; implied by an application token.")
    candidate_id: str
    proposed_chain: ChainIn
    polarity: Literal["affirms", "falsifies", "undetermined"]
    claim_domain: str
    evidence: list[EvidenceIn] = []
    boundary_clean: bool
    hedge: HedgeIn | None = None


class GateOut(Schema):
    gate: str
    passed: bool
    reason: str


class CandidateOut(Schema):
    candidate_id: str
    created: bool
    eligible: bool
    gates: list[GateOut]


class EvalCaseIn(StrictIn):
    case_id: str
    split: Literal["public", "dev", "holdout"]
    subject: str
    intent: str
    expected_object: str
    expected_polarity: Literal["affirms", "falsifies"]


class EvalCasesIn(StrictIn):
    application_id: str | None = None
    cases: list[EvalCaseIn] = Field(..., max_length=5000)


class ImportOut(Schema):
    created: int
    updated: int
    unchanged: int


class ProposeIn(StrictIn):
    application_id: str | None = None
    candidate_id: str
    allow_evaluative: bool = Field(False, description="Operator flag that lets an evaluative claim through.")


class DecisionIn(StrictIn):
    decision: Literal["accept", "reject", "withdraw"]
    note: str = Field("", max_length=2000)


def _candidate_out(candidate: Any, created: bool) -> dict:
    gates = check_eligibility(services.candidate_facts(candidate))
    return {
        "candidate_id": candidate.candidate_id,
        "created": created,
        "eligible": all(g.passed for g in gates),
        "gates": [{"gate": g.gate, "passed": g.passed, "reason": g.reason} for g in gates],
    }


def _proposal_for(principal: Principal, proposal_id: str, application_id: str | None, role: str) -> Proposal:
    """Find a proposal by id among the applications this principal may see.

    The id is a content hash of the candidate and chain, so two tenants could hold
    the same one; a human in both names the application.
    """
    if principal.kind == "application" or application_id:
        application = principal.application_for(application_id, role=role)
        return selectors.proposal_get(application=application, proposal_id=proposal_id)
    found = [
        p
        for p in Proposal.objects.filter(proposal_id=proposal_id).select_related("application")
        if _can_see(principal, p.application)
    ]
    if not found:
        raise NotFound("Not found.")
    if len(found) > 1:
        raise InvalidInput(
            "Several of your applications hold this proposal id; name one.",
            fields={"application_id": "required"},
        )
    principal.require_member(found[0].application, role=role)
    return selectors.proposal_get(application=found[0].application, proposal_id=proposal_id)


def _can_see(principal: Principal, application: Application) -> bool:
    try:
        principal.require_member(application)
    except NotFound:
        return False
    return True


@router.post("/teaching/candidates", response={200: CandidateOut, 201: CandidateOut, 409: ErrorOut, **ERRORS}, summary="Submit a discovery candidate")
def candidate_post(request: HttpRequest, payload: CandidateIn):
    """Store a candidate (idempotent on identical content; different content for a
    known id is 409). The answer lists the five eligibility gates; an ineligible
    candidate is kept as evidence and cannot be proposed."""
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    data = payload.model_dump(exclude={"application_id"})
    candidate, created = services.candidate_submit(
        application=application, data=data, actor=services.Actor.from_principal(principal)
    )
    return Status(201 if created else 200, _candidate_out(candidate, created))


@router.get("/teaching/candidates", response={200: list[CandidateOut], **ERRORS}, summary="List candidates with their gates")
def candidate_get_list(request: HttpRequest, application_id: str | None = None, limit: int = 100):
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    limit = max(1, min(limit, 500))
    return [_candidate_out(c, False) for c in selectors.candidate_list(application=application)[:limit]]


@router.post("/teaching/eval-cases", response={200: ImportOut, **ERRORS}, summary="Create or update eval cases")
def eval_cases_post(request: HttpRequest, payload: EvalCasesIn):
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    result = services.eval_cases_import(
        application=application, records=[(i + 1, case.model_dump()) for i, case in enumerate(payload.cases)]
    )
    return {"created": result.created, "updated": result.updated, "unchanged": result.unchanged}


@router.get("/teaching/eval-cases", response={200: list[EvalCaseIn], **ERRORS}, summary="List eval cases")
def eval_cases_get(request: HttpRequest, application_id: str | None = None, split: str | None = None):
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    return list(
        selectors.eval_case_list(application=application, split=split).values(
            "case_id", "split", "subject", "intent", "expected_object", "expected_polarity"
        )
    )


@router.post("/teaching/proposals", response={200: dict, 201: dict, **ERRORS}, summary="Propose an eligible candidate")
def proposal_post(request: HttpRequest, payload: ProposeIn):
    """Runs the eligibility gates (422 naming the failing gate) and the
    replay-equivalence gate; idempotent (200 with the existing proposal)."""
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    proposal, created = services.proposal_create(
        application=application,
        candidate_id=payload.candidate_id,
        allow_evaluative=payload.allow_evaluative,
        actor=services.Actor.from_principal(principal),
    )
    proposal = selectors.proposal_get(application=application, proposal_id=proposal.proposal_id)
    return Status(201 if created else 200, selectors.proposal_record(proposal))


@router.get("/teaching/proposals", response={200: list[dict], **ERRORS}, summary="List proposals")
def proposal_get_list(
    request: HttpRequest,
    application_id: str | None = None,
    state: Literal["pending", "accepted", "rejected", "withdrawn"] | None = None,
    limit: int = 100,
):
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    limit = max(1, min(limit, 500))
    return [selectors.proposal_record(p) for p in selectors.proposal_list(application=application, state=state)[:limit]]


@router.get("/teaching/proposals/{proposal_id}", response={200: dict, **ERRORS}, summary="One proposal with its replay evidence")
def proposal_get_one(request: HttpRequest, proposal_id: str, application_id: str | None = None):
    proposal = _proposal_for(request.auth, proposal_id, application_id, Role.VIEWER)
    return selectors.proposal_record(proposal)


@router.post("/teaching/proposals/{proposal_id}/decision", response={200: dict, 409: ErrorOut, **ERRORS}, summary="Accept, reject or withdraw")
def proposal_decision_post(
    request: HttpRequest, proposal_id: str, payload: DecisionIn, application_id: str | None = None
):
    """A human operator's decision (an application token gets 403). Accept on a
    proposal that is not replay-equivalent is refused with 422
    `not_replay_equivalent`; a proposal already decided is 409."""
    principal: Principal = request.auth
    operator = principal.require_human("Deciding a proposal")
    proposal = _proposal_for(principal, proposal_id, application_id, Role.CURATOR)
    proposal = services.proposal_decide(
        application=proposal.application,
        proposal_id=proposal.proposal_id,
        decision=payload.decision,
        operator=operator,
        note=payload.note,
    )
    return selectors.proposal_record(selectors.proposal_get(application=proposal.application, proposal_id=proposal_id))


@router.get("/teaching/corpus", summary="The active corpus as JSONL", response={200: None, **ERRORS})
def corpus_get(request: HttpRequest, application_id: str | None = None):
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    response = StreamingHttpResponse(
        selectors.corpus_active_jsonl(application=application), content_type="application/x-ndjson"
    )
    response["Content-Disposition"] = f'attachment; filename="{application.slug}-corpus.jsonl"'
    return response
