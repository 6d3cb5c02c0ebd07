"""JSON endpoints of the teaching app (mounted under /api/v1 by consoles.urls).

Integrations (an application token) submit candidates and eval cases and may ask
for a proposal; only a human (personal token or session) with the curator role
decides one.
"""

import re
from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Field, Path, Query, Router, Schema
from ninja.responses import Status

from consoles.access import Principal
from consoles.api import CURSOR_QUERY, ERRORS, WRITE_ERRORS, ErrorOut, page_out, page_schema
from consoles.errors import InvalidInput
from consoles.models import Role
from consoles.pagination import keyset_page
from consoles.schemas import StrictIn

from . import selectors, services
from .domain import CANDIDATE_ID_PATTERN, check_eligibility
from .models import Proposal, ProposalState
from .services import MAX_TEXT

router = Router(tags=["teaching"])


APPLICATION_ID = ("The application's slug: optional with an application token (must match), "
                  "required with a personal token or a session.")
GATES = "`polarity_decided`, `corpus_evidence`, `evaluative_allowed`, `boundary_clean`, `chain_complete`"


class ChainIn(StrictIn):
    subject: str | None = Field(None, max_length=MAX_TEXT, description="What the claim is about, e.g. `tokyo`.")
    intent: str | None = Field(None, max_length=MAX_TEXT, description="The relation, e.g. `capital_of`.")
    connective: str | None = Field(None, max_length=MAX_TEXT, description="The connective, e.g. `is`.")
    object: str | None = Field(None, max_length=MAX_TEXT, description="The object, e.g. `japan`.")


class CandidateEvidenceIn(StrictIn):
    source: str = Field(..., min_length=1, description='Where the evidence comes from, e.g. "corpus".')
    ref: str = Field("", max_length=MAX_TEXT, description="A pointer into that source, e.g. `atlas:tokyo`.")


class HedgeIn(StrictIn):
    tier: Literal["weak", "strong"] = Field(description="How strongly the claim was hedged.")
    surface: str = Field("", description="The hedging words as they appeared.")


class CandidateIn(StrictIn):
    application_id: str | None = Field(None, description="Application slug; implied by an application token.")
    candidate_id: str = Field(pattern=CANDIDATE_ID_PATTERN, description="Your id for the candidate (1-128 "
                              "letters, digits, `.`, `_`, `:` or `-`); posting it again with the same content "
                              "is a no-op.")
    proposed_chain: ChainIn = Field(description="The relation the candidate would add to the corpus.")
    polarity: Literal["affirms", "falsifies", "undetermined"] = Field(
        description="Whether the evidence affirms or falsifies the chain; `undetermined` is never eligible."
    )
    claim_domain: str = Field(min_length=1, max_length=64, description="`factual`, or e.g. `evaluative` (needs `allow_evaluative` to propose).")
    evidence: list[CandidateEvidenceIn] = Field([], description='Evidence pointers; eligibility needs one from "corpus".')
    boundary_clean: bool = Field(description="Whether the claim stays within the corpus's boundary.")
    hedge: HedgeIn | None = Field(None, description="The hedge on the claim, if any.")


class GateOut(Schema):
    gate: str = Field(description=f"One of {GATES}.")
    passed: bool = Field(description="Whether the candidate passes it.")
    reason: str = Field(description="Why not, when it fails (empty when it passes).")


class CandidateOut(Schema):
    candidate_id: str = Field(description="The candidate's id.")
    created: bool = Field(description="Whether this request stored it (false when it was already known).")
    eligible: bool = Field(description="Whether every gate passes, so it may be proposed.")
    gates: list[GateOut] = Field(description="The five eligibility gates, in order.")


class EvalCaseIn(StrictIn):
    case_id: str = Field(pattern=CANDIDATE_ID_PATTERN, description="Your id for the eval case (1-128 letters, "
                         "digits, `.`, `_`, `:` or `-`): posting it again updates it.")
    split: Literal["public", "dev", "holdout"] = Field(description="The eval lane's split.")
    subject: str = Field(min_length=1, max_length=MAX_TEXT, description="The subject looked up.")
    intent: str = Field(min_length=1, max_length=MAX_TEXT, description="The relation looked up.")
    expected_object: str = Field(min_length=1, max_length=MAX_TEXT, description="The object the lookup should find.")
    expected_polarity: Literal["affirms", "falsifies"] = Field(description="The polarity it should find.")


class EvalCasesIn(StrictIn):
    application_id: str | None = Field(None, description=APPLICATION_ID)
    cases: list[EvalCaseIn] = Field(..., max_length=5000, description="Up to 5000 eval cases, all or nothing.")


class ImportOut(Schema):
    created: int = Field(description="New eval cases.")
    updated: int = Field(description="Known eval cases whose content changed.")
    unchanged: int = Field(description="Known eval cases sent again as they were.")


class ProposeIn(StrictIn):
    application_id: str | None = Field(None, description=APPLICATION_ID)
    candidate_id: str = Field(description="An eligible candidate's id.")
    allow_evaluative: bool = Field(False, description="Operator flag that lets an evaluative claim through: "
                                   "a curator only (403 with an application token).")


class DecisionIn(StrictIn):
    decision: Literal["accept", "reject", "withdraw"] = Field(
        description="`accept` appends the entry to the corpus (only when replay-equivalent)."
    )
    note: str = Field("", max_length=2000, description="Why, for the record.")


class ChainOut(Schema):
    subject: str | None = Field(description="What the claim is about.")
    intent: str | None = Field(description="The relation.")
    connective: str | None = Field(description="The connective.")
    object: str | None = Field(description="The object.")


class EvidenceOut(Schema):
    source: str = Field(description="Where the evidence comes from.")
    ref: str = Field(description="A pointer into that source.")


class ReplayEvidenceOut(Schema):
    baseline: dict[str, float] = Field(description="Metric -> value on the active corpus, "
                                       "e.g. `lookup.accuracy.public`.")
    candidate: dict[str, float] = Field(description="Metric -> value on a copy with the proposed entry.")
    regressed_metrics: list[str] = Field(description="The metrics that got worse (any: auto-rejected).")
    replay_equivalent: bool = Field(description="No metric regressed: the proposal may be accepted.")


class DecisionOut(Schema):
    decision: Literal["accept", "reject", "withdraw"] = Field(description="What the operator decided.")
    operator: str = Field(description="The operator's username.")
    decided_at: datetime = Field(description="When (UTC).")


class ProposalOut(Schema):
    proposal_id: str = Field(description="A content hash (64 hex digits) of the candidate and its chain.")
    source_candidate_id: str = Field(description="The candidate it was proposed from.")
    proposed_chain: ChainOut = Field(description="The relation it would add.")
    polarity: str = Field(description="`affirms` or `falsifies`.", json_schema_extra={"enum": ["affirms", "falsifies"]})
    claim_domain: str = Field(min_length=1, max_length=64, description="The claim's domain, e.g. `factual`.")
    evidence: list[EvidenceOut] = Field(description="The candidate's evidence pointers.")
    allow_evaluative: bool = Field(description="Whether an evaluative claim was let through.")
    review_state: str = Field(description="`pending`, `accepted`, `rejected` or `withdrawn`.",
                              json_schema_extra={"enum": ProposalState.values})
    operator_note: str = Field(description="The operator's note, or the replay gate's reason for a rejection.")
    replay_evidence: ReplayEvidenceOut = Field(description="The replay-equivalence gate's evidence.")
    decision: DecisionOut | None = Field(description="The operator's decision, or null while pending "
                                         "(and when the replay gate rejected it).")
    created_at: datetime = Field(description="When it was proposed (UTC).")


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
    the same one; a human in both names the application. Another tenant's proposal
    is not found by the same query as a missing one: one 404.
    """
    applications = principal.visible_applications()
    if principal.kind == "application" or application_id:
        application = principal.application_for(application_id, role=role)
        applications = applications.filter(pk=application.pk)
    found = selectors.proposal_find(applications=applications, proposal_id=proposal_id)
    if len(found) > 1:
        raise InvalidInput(
            "Several of your applications hold this proposal id; name one.",
            fields={"application_id": "required"},
        )
    principal.require_member(found[0].application, role=role)
    return selectors.proposal_get(application=found[0].application, proposal_id=proposal_id)


APP_QUERY = Query(None, description=APPLICATION_ID)
PROPOSAL_ID = Path(description="The proposal's id (64 hex digits).")
LIMIT = Query(100, ge=1, le=500, description="At most this many per page.")
EVAL_CASE_FIELDS = ("case_id", "split", "subject", "intent", "expected_object", "expected_polarity")
CandidatePageOut = page_schema("CandidatePageOut", CandidateOut, "candidates, newest first")
ProposalPageOut = page_schema("ProposalPageOut", ProposalOut, "proposals, newest first")
EvalCasePageOut = page_schema("EvalCasePageOut", EvalCaseIn, "eval cases, by split and case id")


@router.post("/teaching/candidates", response={200: CandidateOut, 201: CandidateOut, 409: ErrorOut, **WRITE_ERRORS},
             summary="Submit a discovery candidate")
def candidate_post(request: HttpRequest, payload: CandidateIn):
    """Store a candidate (idempotent on identical content: 200 with `created` false;
    different content for a known id is 409). The answer lists the five eligibility
    gates; an ineligible candidate is kept as evidence and cannot be proposed.

    The application's token, or a member's personal token or session naming `application_id` (curator role)."""
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    data = payload.model_dump(exclude={"application_id"})
    candidate, created = services.candidate_submit(
        application=application, data=data, actor=services.Actor.from_principal(principal)
    )
    return Status(201 if created else 200, _candidate_out(candidate, created))


@router.get("/teaching/candidates", response={200: CandidatePageOut, **ERRORS},
            summary="List candidates with their gates (cursor pagination)")
def candidate_get_list(
    request: HttpRequest, application_id: str | None = APP_QUERY, cursor: str | None = CURSOR_QUERY,
    limit: int = LIMIT,
):
    """Candidates with their eligibility gates, newest first (`created` is always false
    here). Follow `next_cursor` (pass it as `cursor`) for the next page.

    The application's token, or a member's personal token or session naming `application_id` (any role)."""
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    page = keyset_page(selectors.candidate_list(application=application), selectors.CANDIDATES, cursor=cursor, limit=limit)
    return page_out(page, lambda c: _candidate_out(c, False))


@router.post("/teaching/eval-cases", response={200: ImportOut, **WRITE_ERRORS}, summary="Create or update eval cases")
def eval_cases_post(request: HttpRequest, payload: EvalCasesIn):
    """Upsert eval cases by `case_id`, all or nothing; the counts say what changed.

    The application's token, or a member's personal token or session naming `application_id` (curator role)."""
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    try:
        result = services.eval_cases_import(
            application=application, records=[(i + 1, case.model_dump()) for i, case in enumerate(payload.cases)]
        )
    except InvalidInput as exc:
        # The service numbers the lines of a file from 1 (`line 2.subject`); here the
        # client sent `cases`, and a field is named by its place in the body.
        def in_body(text: str) -> str:
            return re.sub(r"^line (\d+)", lambda m: f"cases.{int(m.group(1)) - 1}", text)

        raise InvalidInput(in_body(exc.message), code=exc.code,
                           fields={in_body(k): v for k, v in exc.fields.items()}) from exc
    return {"created": result.created, "updated": result.updated, "unchanged": result.unchanged}


@router.get("/teaching/eval-cases", response={200: EvalCasePageOut, **ERRORS},
            summary="List eval cases (cursor pagination)")
def eval_cases_get(
    request: HttpRequest,
    application_id: str | None = APP_QUERY,
    split: Literal["public", "dev", "holdout"] | None = Query(None, description="Only this split."),
    cursor: str | None = CURSOR_QUERY,
    limit: int = LIMIT,
):
    """The application's eval cases (or one split's), by split and case id. Follow
    `next_cursor` (pass it as `cursor`) for the next page.

    The application's token, or a member's personal token or session naming `application_id` (any role)."""
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    cases = selectors.eval_case_list(application=application, split=split).only(*EVAL_CASE_FIELDS)
    page = keyset_page(cases, selectors.EVAL_CASES, cursor=cursor, limit=limit)
    return page_out(page, lambda case: {name: getattr(case, name) for name in EVAL_CASE_FIELDS})


@router.post("/teaching/proposals", response={200: ProposalOut, 201: ProposalOut, **WRITE_ERRORS},
             summary="Propose an eligible candidate")
def proposal_post(request: HttpRequest, payload: ProposeIn):
    """Runs the eligibility gates (422 naming the failing gate) and the
    replay-equivalence gate; idempotent (200 with the existing proposal). A regression
    rejects the proposal at once; nothing is ever added to the corpus here.

    The application's token, or a member's personal token or session naming `application_id` (curator role)."""
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


@router.get("/teaching/proposals", response={200: ProposalPageOut, **ERRORS},
            summary="List proposals (cursor pagination)")
def proposal_get_list(
    request: HttpRequest,
    application_id: str | None = APP_QUERY,
    state: Literal["pending", "accepted", "rejected", "withdrawn"] | None = Query(
        None, description="Only proposals in this state."
    ),
    cursor: str | None = CURSOR_QUERY,
    limit: int = LIMIT,
):
    """Proposals with their replay evidence and decision, newest first. Follow
    `next_cursor` (pass it as `cursor`) for the next page.

    The application's token, or a member's personal token or session naming `application_id` (any role)."""
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    page = keyset_page(selectors.proposal_list(application=application, state=state), selectors.PROPOSALS,
                       cursor=cursor, limit=limit)
    return page_out(page, selectors.proposal_record)


@router.get("/teaching/proposals/{proposal_id}", response={200: ProposalOut, **ERRORS},
            summary="One proposal with its replay evidence")
def proposal_get_one(
    request: HttpRequest, proposal_id: str = PROPOSAL_ID, application_id: str | None = APP_QUERY
):
    """A proposal found by id. A person who is a member of several applications holding
    the same id names one with `application_id` (422 otherwise); a proposal of an
    application you are not a member of is 404.

    The application's token, or a member's personal token or session naming `application_id` (any role)."""
    proposal = _proposal_for(request.auth, proposal_id, application_id, Role.VIEWER)
    return selectors.proposal_record(proposal)


@router.post("/teaching/proposals/{proposal_id}/decision", response={200: ProposalOut, 409: ErrorOut, **WRITE_ERRORS},
             summary="Accept, reject or withdraw a proposal (humans only)")
def proposal_decision_post(
    request: HttpRequest,
    payload: DecisionIn,
    proposal_id: str = PROPOSAL_ID,
    application_id: str | None = Query(None, description="The application's slug, when several of yours "
                                       "hold this proposal id."),
):
    """A human operator's decision: a personal token or a session of a curator (an
    application token gets 403). Accept on a proposal that is not replay-equivalent is
    refused with 422 `not_replay_equivalent`; a proposal already decided is 409.
    Answers the proposal as it now is."""
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


@router.get(
    "/teaching/corpus",
    summary="The active corpus as JSONL",
    response={200: None, **ERRORS},
    openapi_extra={"responses": {200: {
        "description": "One corpus entry per line: `id, subject, intent, connective, object, polarity, "
        "claim_domain, provenance`.",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }}},
)
def corpus_get(request: HttpRequest, application_id: str | None = APP_QUERY):
    """Streams the active corpus (`application/x-ndjson`), one entry per line, oldest first.

    The application's token, or a member's personal token or session naming `application_id` (any role)."""
    principal: Principal = request.auth
    application = principal.application_for(application_id)
    response = StreamingHttpResponse(
        selectors.corpus_active_jsonl(application=application), content_type="application/x-ndjson"
    )
    response["Content-Disposition"] = f'attachment; filename="{application.slug}-corpus.jsonl"'
    return response
