"""JSON endpoints of the adjudication app (mounted under /api/v1 by consoles.urls).

Thin: parse (ninja schemas) -> service/selector -> serialise. Tenancy comes from
the Principal: an application token acts on its own application; a human names
the application and must be a member.
"""

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema, Status

from consoles.access import Principal
from consoles.api import CURSOR_DESCRIPTION, ERRORS, WRITE_ERRORS, ErrorOut, page_out, page_schema
from consoles.errors import InvalidInput
from consoles.models import Application, Role
from consoles.pagination import keyset_page
from consoles.schemas import StrictIn
from feedback.services import Actor as FeedbackActor
from feedback.services import case_feedback_submit

from .fusion import fuse
from .gaps import derive_gaps
from .models import Case
from .schemas import CaseBatchIn, TrustClassName
from .selectors import (
    CASES,
    case_evidence,
    case_get_visible,
    case_list,
    evidence_records,
    gold_history,
)
from .services import case_import_batch

router = Router(tags=["adjudication"])


APPLICATION_ID = ("The application's slug: optional with an application token (must match), "
                  "required with a personal token or a session.")
BANDS = ["verified", "corroborated", "qualified", "contested", "refuted", "unsupported"]


class CaseImportedOut(Schema):
    id: int = Field(description="The case's number in the console: use it, or `case_id`, in `/cases/{case_ref}`.")
    case_id: str = Field(description="The case id you sent.")
    status: Literal["created", "unchanged"] = Field(
        description="`created`, or `unchanged` when the same case was already imported."
    )


class CaseBatchOut(Schema):
    created: int = Field(description="How many cases were new.")
    unchanged: int = Field(description="How many were already imported with the same content.")
    cases: list[CaseImportedOut] = Field(description="One entry per case sent, in order.")


class CaseSummaryOut(Schema):
    id: int = Field(description="The case's number in the console.")
    case_id: str = Field(description="The mining pipeline's case id.")
    claim_subject: str = Field(description="What the claim is about.")
    claim_text: str = Field(description="The claim.")
    local_verdict: str = Field(description="The verdict the pipeline reached locally.")
    mined_by: list[str] = Field(description="The mining strategies that found the case.")
    label_count: int = Field(description="How many human labels it has.")
    gold_label: str | None = Field(description="The current gold label, or null.")
    queued: bool = Field(description="Whether it waits in the adjudication queue.")
    created_at: datetime = Field(description="When it was imported (UTC).")


CaseListOut = page_schema("CaseListOut", CaseSummaryOut, "cases, newest first")


class CaseListFilters(Schema):
    application_id: str | None = Field(None, description=APPLICATION_ID)
    status: Literal["", "unlabelled", "one_label", "double", "gold", "queued"] = Field(
        "", description="Only cases with no label yet (`unlabelled`), one label, two or more (`double`), "
        "a gold label, or waiting in the queue; empty for all."
    )
    cursor: str | None = Field(None, description=CURSOR_DESCRIPTION)
    limit: int = Field(50, ge=1, le=500, description="Cases per page.")
    # The list paged by offset once; a client still sending one is told, rather than
    # given the first page again and again.
    offset: int | None = Field(None, json_schema_extra={"deprecated": True}, description="Refused (422): the list pages by `cursor`.")


class ClaimOut(Schema):
    subject: str = Field(description="What the claim is about.")
    text: str = Field(description="The claim.")


class CaseEvidenceOut(Schema):
    evidence_id: str = Field(description="The evidence id, unique within the case.")
    relation: Literal["supports", "contradicts"] = Field(description="What it says about the claim.")
    trust_class: str = Field(description="How far it can be trusted.",
                             json_schema_extra={"enum": list(TrustClassName.__args__)})
    source_event_id: str | None = Field(description="The event it was read from, or null.")
    correlation_group: str | None = Field(description="A group of evidence known to share a source, or null.")
    derived_from: list[str] = Field(description="The evidence ids it was derived from.")
    sensor: str = Field(description="The sensor that produced it (may be empty).")
    observed_at: datetime | None = Field(description="When it was observed (UTC), or null.")
    source_family: int = Field(description="The source family it was collapsed into (see `source_families`).")


class SourceFamilyOut(Schema):
    family: int = Field(description="The family's number.")
    evidence_ids: list[str] = Field(description="The evidence in the family: they count as one source.")
    reasons: list[list[str]] = Field(description="Why they were joined: pairs of (kind, value), "
                                     'e.g. `["source_event_id", "evt-1"]`.')


class FusionOut(Schema):
    policy_name: str = Field(description="The fusion policy.")
    policy_version: int = Field(description="Its version.")
    band: str = Field(description="The fused verdict.", json_schema_extra={"enum": BANDS})
    supports: int = Field(description="Independent supporting sources (after collapse).")
    contradicts: int = Field(description="Independent contradicting sources (after collapse).")
    supports_before_collapse: int = Field(description="Supporting evidence records, before collapse.")
    contradicts_before_collapse: int = Field(description="Contradicting evidence records, before collapse.")


class GoldRevisionOut(Schema):
    revision: int = Field(description="1 for the first gold label, then one more per change.")
    label: str = Field(description="The gold label.")
    promoted_by: str = Field(description="The username of the curator who promoted it.")
    created_at: datetime = Field(description="When (UTC).")


class CaseDetailOut(Schema):
    id: int = Field(description="The case's number in the console.")
    case_id: str = Field(description="The mining pipeline's case id.")
    claim: ClaimOut = Field(description="The claim under review.")
    local_verdict: str = Field(description="The verdict the pipeline reached locally.")
    mined_by: list[str] = Field(description="The mining strategies that found the case.")
    sanitization_altered_outcome: bool = Field(description="Whether sanitising the input changed the outcome.")
    context: str | None = Field(description="The pipeline's context label, or null.")
    replay_manifest: dict = Field(description="What produced the case, as imported (see `ReplayManifestIn`).")
    evidence: list[CaseEvidenceOut] = Field(description="Every evidence record.")
    source_families: list[SourceFamilyOut] = Field(description="Families of two or more records sharing a source.")
    fusion: FusionOut = Field(description="The fused verdict over the collapsed evidence.")
    gaps: list[str] = Field(description="What the evidence lacks (sorted), e.g. `all_votes_discounted`.")
    gold_history: list[GoldRevisionOut] = Field(description="Every gold-label revision, oldest first.")


def _actor(principal: Principal):
    return principal.token if principal.kind == "application" else principal.user


def case_for(principal: Principal, case_ref: str, application_id: str | None = None, *,
             role: str = Role.VIEWER) -> Case:
    """A case named by its case id (as the pipeline and the screens name it) or by its
    number, sealed: another tenant's case is the same 404, through the same query, as a
    missing one. Case ids are unique within an application: an application token looks
    in its own; a person in `application_id` when given, else in every application they
    are a member of (a case id two of them hold is 422: name `application_id`)."""
    if application_id:
        applications = Application.objects.filter(pk=principal.application_for(application_id, role=role).pk)
    else:
        applications = principal.visible_applications()
    case = case_get_visible(applications=applications, ref=case_ref)
    principal.require_member(case.application, role=role)
    return case


@router.post(
    "/cases",
    response={200: CaseBatchOut, 201: CaseBatchOut, 409: ErrorOut, **WRITE_ERRORS},
    summary="Import a batch of candidate cases (idempotent on case id)",
)
def cases_import(request: HttpRequest, payload: CaseBatchIn):
    """All or nothing: an invalid case refuses the batch with 422 naming the field
    (`cases.3.evidence.0.relation`); a case id already imported with different
    content is a 409. Re-posting the same cases is a no-op (status `unchanged`).
    201 when at least one case was new, else 200.

    The mining pipeline's application token, or a curator's personal token or session
    naming `application_id`."""
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
    """Follow `next_cursor` (pass it as `cursor`) for the next page; no total is
    computed, so a page costs the same at any number of cases.

    Any member (viewer role or above) with a personal token or session naming
    `application_id`, or the application's token."""
    principal: Principal = request.auth
    application = principal.application_for(filters.application_id)
    if filters.offset is not None:
        raise InvalidInput("The case list pages by `cursor` (from `next_cursor`), not by `offset`.",
                           fields={"offset": "unsupported"})
    page = keyset_page(case_list(application=application, status=filters.status), CASES,
                       cursor=filters.cursor, limit=filters.limit)
    return page_out(page)  # the schema reads each case's fields


CASE_REF = Path(description="The case's `case_id` (as imported), or its number in the console (`id`) when no "
               "case has that case id.")
CASE_APPLICATION = Query(None, description=APPLICATION_ID + " Only needed when two of your applications hold "
                         "the same case id.")


@router.get("/cases/{case_ref}", response={200: CaseDetailOut, **ERRORS},
            summary="A case with its evidence, source families, fusion and gaps")
def case_detail(request: HttpRequest, case_ref: str = CASE_REF, application_id: str | None = CASE_APPLICATION) -> dict:
    """The case as the curators see it: its evidence, which records share a source
    (`source_families`), the fused verdict, the gaps in its evidence and its gold history.

    Any member (viewer role or above) with a personal token or session, or the
    application's token; a case of another application is 404."""
    case = case_for(request.auth, case_ref, application_id)
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
                "observed_at": r.observed_at,
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
            {"revision": g.revision, "label": g.label, "promoted_by": g.promoted_by.get_username(), "created_at": g.created_at}
            for g in gold_history(case=case)
        ],
    }


class CaseFeedbackIn(StrictIn):
    disposition: Literal["agrees", "disagrees", "unsure"] = Field(description="What you make of the case.")
    note: str = Field("", max_length=5000, description="Why, in a sentence.")


class CaseFeedbackOut(Schema):
    id: int = Field(description="The feedback's number.")
    case_id: str = Field(description="The case's id from the mining pipeline.")
    disposition: Literal["agrees", "disagrees", "unsure"] = Field(description="As posted.")
    note: str = Field(description="As posted.")
    author_kind: str = Field(description="`operator` (a person) or `agent` (an application token).",
                             json_schema_extra={"enum": ["operator", "agent"]})
    bound_manifest: dict = Field(description="The case's replay manifest, frozen into the feedback.")
    created_at: datetime = Field(description="When (UTC).")


@router.post("/cases/{case_ref}/feedback", response={201: CaseFeedbackOut, **WRITE_ERRORS},
             summary="Agree or disagree with a case")
def case_feedback(request: HttpRequest, payload: CaseFeedbackIn, case_ref: str = CASE_REF,
                  application_id: str | None = CASE_APPLICATION):
    """An operator (session or personal token) or an agent (application token)
    posts a disposition. The case's replay manifest is frozen into the feedback.
    Feedback never changes the case, a label or a gold label; it only raises the
    case's priority for sampling. Any member (viewer role or above) or the application's
    token; a case of another application is 404. Each post is a new feedback (201)."""
    principal: Principal = request.auth
    case = case_for(principal, case_ref, application_id)
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
