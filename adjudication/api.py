"""JSON endpoints of the adjudication app (mounted under /api/v1 by consoles.urls).

Thin: parse (ninja schemas) -> service/selector -> serialise. Tenancy comes from
the Principal: an application token acts on its own application; a human names
the application and must be a member.
"""

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status

from consoles.access import Principal
from consoles.api import ERRORS, ErrorOut
from consoles.errors import NotFound
from consoles.models import Role
from consoles.schemas import StrictIn
from feedback.services import Actor as FeedbackActor
from feedback.services import case_feedback_submit

from .fusion import fuse
from .gaps import derive_gaps
from .models import Case
from .schemas import CaseBatchIn
from .selectors import case_evidence, case_list, evidence_records, gold_history
from .services import case_import_batch

router = Router(tags=["adjudication"])


class CaseImportedOut(Schema):
    id: int
    case_id: str
    status: str  # "created" | "unchanged"


class CaseBatchOut(Schema):
    created: int
    unchanged: int
    cases: list[CaseImportedOut]


class CaseSummaryOut(Schema):
    id: int
    case_id: str
    claim_subject: str
    claim_text: str
    local_verdict: str
    mined_by: list[str]
    label_count: int
    gold_label: str | None
    queued: bool
    created_at: datetime


class CaseListOut(Schema):
    count: int
    items: list[CaseSummaryOut]


MAX_OFFSET = 2**31 - 1  # more cases than any application holds


class CaseListFilters(Schema):
    application_id: str | None = None
    status: str = Field("", description="unlabelled | one_label | double | gold | queued")
    limit: int = Field(50, ge=1, le=500)
    # Bounded so offset + limit stays a 64-bit integer: past that the database driver
    # raises (a 500) instead of answering an empty page.
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


def _actor(principal: Principal):
    return principal.token if principal.kind == "application" else principal.user


def case_for(principal: Principal, case_pk: int, *, role: str = Role.VIEWER) -> Case:
    """A case found by id, sealed: another tenant's case is a 404."""
    case = Case.objects.select_related("application").filter(pk=case_pk).first()
    if case is None:
        raise NotFound("No such case.")
    principal.require_member(case.application, role=role)
    return case


@router.post(
    "/cases",
    response={200: CaseBatchOut, 201: CaseBatchOut, 409: ErrorOut, **ERRORS},
    summary="Import a batch of candidate cases (idempotent on case id)",
)
def cases_import(request: HttpRequest, payload: CaseBatchIn):
    """All or nothing: an invalid case refuses the batch with 422 naming the field
    (`cases.3.evidence.0.relation`); a case id already imported with different
    content is a 409. Re-posting the same cases is a no-op (status `unchanged`)."""
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    results = case_import_batch(application=application, cases=payload.cases, actor=_actor(principal))
    created = sum(1 for r in results if r.created)
    body = {
        "created": created,
        "unchanged": len(results) - created,
        "cases": [
            {"id": r.case.pk, "case_id": r.case.case_id, "status": "created" if r.created else "unchanged"}
            for r in results
        ],
    }
    return Status(201 if created else 200, body)


@router.get("/cases", response={200: CaseListOut, **ERRORS}, summary="List cases, newest first")
def cases_list(request: HttpRequest, filters: Query[CaseListFilters]):
    principal: Principal = request.auth
    application = principal.application_for(filters.application_id)
    qs = case_list(application=application, status=filters.status)
    return {"count": qs.count(), "items": list(qs[filters.offset : filters.offset + filters.limit])}


@router.get("/cases/{case_pk}", response={200: dict, **ERRORS}, summary="A case with its evidence, source families, fusion and gaps")
def case_detail(request: HttpRequest, case_pk: int) -> dict:
    case = case_for(request.auth, case_pk)
    rows = case_evidence(case=case)
    records = evidence_records(rows)
    fusion = fuse(records)
    families = fusion.families
    return {
        "id": case.pk,
        "case_id": case.case_id,
        "claim": {"subject": case.claim_subject, "text": case.claim_text},
        "local_verdict": case.local_verdict,
        "mined_by": case.mined_by,
        "sanitization_altered_outcome": case.sanitization_altered_outcome,
        "context": case.context or None,
        "replay_manifest": case.replay_manifest,
        "evidence": [
            {
                "evidence_id": r.evidence_id,
                "relation": r.relation,
                "trust_class": r.trust_class,
                "source_event_id": r.source_event_id or None,
                "correlation_group": r.correlation_group or None,
                "derived_from": r.derived_from,
                "sensor": r.sensor,
                "observed_at": r.observed_at.isoformat() if r.observed_at else None,
                "source_family": families.family_of[r.evidence_id],
            }
            for r in rows
        ],
        "source_families": [
            {"family": f.number, "evidence_ids": list(f.evidence_ids), "reasons": [list(x) for x in f.reasons]}
            for f in families.shared
        ],
        "fusion": {
            "policy_name": fusion.policy_name,
            "policy_version": fusion.policy_version,
            "band": fusion.band,
            "supports": fusion.supports,
            "contradicts": fusion.contradicts,
            "supports_before_collapse": fusion.supports_raw,
            "contradicts_before_collapse": fusion.contradicts_raw,
        },
        "gaps": sorted(derive_gaps(records)),
        "gold_history": [
            {"revision": g.revision, "label": g.label, "promoted_by": g.promoted_by.get_username(), "created_at": g.created_at.isoformat()}
            for g in gold_history(case=case)
        ],
    }


class CaseFeedbackIn(StrictIn):
    disposition: Literal["agrees", "disagrees", "unsure"]
    note: str = Field("", max_length=5000)


class CaseFeedbackOut(Schema):
    id: int
    case_id: str
    disposition: str
    note: str
    author_kind: str
    bound_manifest: dict
    created_at: datetime


@router.post("/cases/{case_pk}/feedback", response={201: CaseFeedbackOut, **ERRORS}, summary="Agree or disagree with a case")
def case_feedback(request: HttpRequest, case_pk: int, payload: CaseFeedbackIn):
    """An operator (session or personal token) or an agent (application token)
    posts a disposition. The case's replay manifest is frozen into the feedback.
    Feedback never changes the case, a label or a gold label; it only raises the
    case's priority for sampling."""
    principal: Principal = request.auth
    case = case_for(principal, case_pk)
    actor = FeedbackActor(user=principal.user) if principal.is_human else FeedbackActor(token=principal.token)
    row = case_feedback_submit(
        application=case.application,
        case_ref=case.case_id,
        manifest=case.replay_manifest,
        disposition=payload.disposition,
        note=payload.note,
        actor=actor,
    )
    return Status(
        201,
        {
            "id": row.pk,
            "case_id": case.case_id,
            "disposition": row.disposition,
            "note": row.note,
            "author_kind": row.author_kind,
            "bound_manifest": row.bound_manifest,
            "created_at": row.created_at,
        },
    )
