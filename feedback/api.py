"""JSON endpoints of the feedback app (mounted under /api/v1 by consoles.urls).

Thin: parse (ninja schemas) -> access check (Principal) -> service/selector -> serialise.
"""

from datetime import date, datetime
from typing import Any, Literal

import pydantic
from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema
from pydantic import ConfigDict, field_validator

from consoles.access import Principal
from consoles.api import (
    CURSOR_QUERY,
    ERRORS,
    WRITE_ERRORS,
    ErrorBody,
    ErrorOut,
    api,
    error_response,
    page_out,
    page_schema,
    schema_error_fields,
)
from consoles.errors import InvalidInput, PermissionDeniedError
from consoles.models import Application, Role
from consoles.schemas import Probability, StrictIn, has_nul

from .models import (
    AuthorKind,
    CaptureReason,
    EventAction,
    Flag,
    FlagEvent,
    FlagStatus,
    Region,
    Verdict,
)
from .selectors import FlagFilters, flag_events, flag_get_by_public_id, flag_page
from .services import (
    MAX_BATCH,
    MAX_ID,
    MAX_TEXT,
    NOTE_LIMIT,
    Actor,
    BatchItem,
    flag_review,
    flag_submit,
    flags_submit_batch,
)

router = Router(tags=["feedback"])

# The list's enum filters, so the schema lists their values ("" is no filter).
StatusFilter = Literal["", "pending", "approved", "rejected", "labelled", "dropped"]
RegionFilter = Literal["", "prompt", "answer"]
AuthorKindFilter = Literal["", "end_user", "operator", "agent"]
assert set(StatusFilter.__args__) == {"", *FlagStatus.values}  # noqa: S101 - import-time drift guard
assert set(RegionFilter.__args__) == {"", *Region.values}  # noqa: S101
assert set(AuthorKindFilter.__args__) == {"", *AuthorKind.values}  # noqa: S101
STATUS_QUERY = Query("", description="Only this status (empty: any).")
REGION_QUERY = Query("", description="Only this region (empty: both).")
AUTHOR_KIND_QUERY = Query("", description="Only flags by this kind of author (empty: any).")
APPLICATION_ID = ("The application's slug: optional with an application token (must match), "
                  "required with a personal token or a session.")
APPLICATION_QUERY = Query(None, description=APPLICATION_ID)
AXIS_QUERY = Query("", description="Only this axis (one of the application's).")
PROBLEM_QUERY = Query("", description="Only this problem (one of the application's).")
CREATED_FROM_QUERY = Query(None, description="Flagged on or after this UTC day (YYYY-MM-DD).")
CREATED_TO_QUERY = Query(None, description="Flagged on or before this UTC day (YYYY-MM-DD).")
# No max_length here: the selector's own check answers a long query, as the screen does.
SEARCH_QUERY = Query("", description="Free text: every word (letters and digits; anything else separates "
                     "words) begins a word of the prompt, the answer or the note, in any case. Words of one or "
                     "two characters match whole words only. At most 200 characters.")


class FlagIn(StrictIn):
    region: Literal["prompt", "answer"] = Field(description="Which message was flagged.")
    problem: str = Field("", max_length=64, description="One of the application's plain-language problems "
                         "(required for a flag, optional for a capture).")
    note: str = Field("", max_length=NOTE_LIMIT, description="Why it was flagged, in the flagger's words.")
    prompt: str = Field("", max_length=MAX_TEXT, description="The user message.")
    context: str = Field("", max_length=MAX_TEXT, description="RAG context shown to the model.")
    answer: str = Field("", max_length=MAX_TEXT, description="The assistant's answer.")
    detector_scores: dict[str, Probability] = Field(
        default_factory=dict, description="axis -> the detector's score at flag time: a number in [0, 1]")
    message_id: str = Field(min_length=1, max_length=MAX_ID, description="The integration's id of the message; "
                            "with `region` it identifies the flag (posting it again is a no-op).")
    session_id: str = Field("", max_length=MAX_ID, description="The integration's conversation id.")
    end_user_ref: str = Field("", max_length=MAX_ID, description="An opaque reference to the end user.")
    application_id: str | None = Field(
        None, description="The application's slug: optional with an application token (must match), "
        "required with a personal token or a session."
    )
    capture_reason: Literal["low_confidence", "refused"] | None = Field(
        None, description="Set by the runtime for an automated capture; needs capture enabled for that reason."
    )


def submission_fields(payload: FlagIn) -> dict[str, Any]:
    """What `flag_submit` (and each item of `flags_submit_batch`) takes from a posted flag."""
    return {**payload.model_dump(exclude={"application_id", "capture_reason"}),
            "capture_reason": payload.capture_reason or ""}


class FlagBatchIn(pydantic.BaseModel):
    # Not StrictIn: its checks would refuse the whole batch for one bad item; each
    # item is checked as FlagIn by itself, and only the batch's own field here.
    model_config = ConfigDict(extra="forbid")

    application_id: str | None = Field(
        None, description="The application's slug: optional with an application token (must match), "
        "required with a personal token or a session unless the items name it. An item naming another "
        "application than the batch's is refused (403)."
    )
    flags: list[Any] = Field(
        min_length=1,
        description=f"1 to {MAX_BATCH} flags, each exactly what POST /api/v1/flags takes (more is 413).",
        # Each item is checked as FlagIn by itself (a bad one refuses only itself),
        # so the list takes any objects; the schema says what each must be.
        json_schema_extra={"items": FlagIn.model_json_schema(), "maxItems": MAX_BATCH},
    )

    @field_validator("application_id", mode="after")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        if has_nul(value):
            raise ValueError("Must not contain NUL (\\u0000) characters.")
        return value


class BatchItemOut(Schema):
    index: int = Field(description="The item's position in `flags`, from 0.")
    status: Literal[201, 200, 403, 422] = Field(
        description="201 written; 200 already stored (or an earlier item of this batch), with its id; "
        "422 invalid (`error.fields` names the field); 403 not allowed (capture off, another application). "
        "A refused item wrote nothing."
    )
    id: str | None = Field(description="The flag's id (201 and 200), else null.")
    error: ErrorBody | None = Field(description="Why the item was refused (403 and 422), else null.")


class FlagBatchOut(Schema):
    items: list[BatchItemOut] = Field(description="One per posted flag, in the order posted.")


class EventOut(Schema):
    action: str = Field(description=f"One of {', '.join(EventAction.values)}.",
                        json_schema_extra={"enum": EventAction.values})
    from_status: str = Field(description="The status before (empty for `created`).")
    to_status: str = Field(description="The status after.")
    actor: str = Field(description="`user:<username>`, `token:<token name>` or `system`.")
    changes: dict = Field(description="The fields this transition set (axis, verdict, note, ...).")
    at: datetime = Field(description="When (UTC).")


class FlagOut(Schema):
    id: str = Field(description="The flag's id (`fb_` and 16 hex digits), a hash of application, message and region.")
    application_id: str = Field(description="The application's slug.")
    status: str = Field(description=f"One of {', '.join(FlagStatus.values)}.",
                        json_schema_extra={"enum": FlagStatus.values})
    region: str = Field(description="`prompt` or `answer`.", json_schema_extra={"enum": Region.values})
    problem: str = Field(description="The plain-language problem the flagger chose (empty for most captures).")
    suggested_axis: str = Field(description="The detector axis the problem maps to (empty when none).")
    axis: str = Field(description="The axis: the suggested one until a curator approves with another.")
    verdict: str = Field(description="`false_negative` or `false_positive` once approved, else empty.",
                         json_schema_extra={"enum": ["", *Verdict.values]})
    note: str = Field(description="The flagger's note.")
    prompt: str = Field(description="The user message (emptied when a capture is dropped or erased).")
    context: str = Field(description="RAG context shown to the model.")
    answer: str = Field(description="The assistant's answer.")
    detector_scores: dict = Field(description="axis -> the detector's score at flag time.")
    message_id: str = Field(description="The integration's id of the message.")
    session_id: str = Field(description="The integration's conversation id.")
    end_user_ref: str = Field(description="An opaque reference to the end user.")
    author_kind: str = Field(description="Who raised it: `end_user` (via an integration), `operator` (a curator) "
                             "or `agent` (an automated capture).", json_schema_extra={"enum": AuthorKind.values})
    capture_reason: str = Field(description="`low_confidence` or `refused` for a capture, else empty.",
                                json_schema_extra={"enum": ["", *CaptureReason.values]})
    capture_label: str = Field(description="A capture's label once labelled, else empty.")
    twin_prompt: str = Field(description="A benign twin of the prompt a curator added on approve (may be empty).")
    twin_answer: str = Field(description="A benign twin of the answer a curator added on approve (may be empty).")
    weight: float | None = Field(description="The exemplar weight a curator set (0..1), or null.")
    attack_family: str = Field(description="The attack family a curator named (may be empty).")
    review_note: str = Field(description="The curator's note on the last review.")
    correction: str = Field(description="The answer the assistant should have given (an approved answer flag; "
                            "may be empty).")
    version: int = Field(description="Increases with every review; send it back with a review.")
    created_at: datetime = Field(description="When it was flagged (UTC).")
    updated_at: datetime = Field(description="When it last changed (UTC).")


class FlagDetailOut(FlagOut):
    events: list[EventOut] = Field(description="Every transition, oldest first.")


FlagListOut = page_schema("FlagListOut", FlagOut, "flags")


class ReviewIn(StrictIn):
    status: Literal["approved", "rejected", "pending", "labelled"] = Field(
        description='"approved" / "rejected" for flags, "labelled" (with `label`) for captures, '
        '"pending" re-opens.'
    )
    version: int = Field(ge=1, description="The flag's version you saw; a stale one gets 409.")
    axis: str | None = Field(None, max_length=64, description="Defaults to the suggested axis on approve.")
    verdict: Literal["false_negative", "false_positive"] | None = Field(
        None, description="Defaults to false_negative on approve."
    )
    label: str | None = Field(None, max_length=64, description="A capture's label (the application's label set).")
    note: str = Field("", max_length=NOTE_LIMIT, description="The reviewer's note.")
    twin_prompt: str | None = Field(None, max_length=MAX_TEXT, description="A benign twin of the prompt (approve).")
    twin_answer: str | None = Field(None, max_length=MAX_TEXT, description="A benign twin of the answer (approve).")
    weight: float | None = Field(None, ge=0, le=1, description="The exemplar's weight in the bank (approve).")
    attack_family: str | None = Field(None, max_length=100, description="The attack family, if any (approve).")
    correction: str | None = Field(
        None, max_length=MAX_TEXT,
        description="The answer the assistant should have given (approving an answer-region flag only; "
        "the SFT and preference exports train on it).",
    )


def flag_out(flag: Flag) -> dict:
    return {
        "id": flag.public_id,
        "application_id": flag.application.slug,
        **{name: getattr(flag, name) for name in (
            "status", "region", "problem", "suggested_axis", "axis", "verdict", "note", "prompt", "context",
            "answer", "detector_scores", "message_id", "session_id", "end_user_ref", "author_kind",
            "capture_reason", "capture_label", "twin_prompt", "twin_answer", "weight", "attack_family",
            "review_note", "correction", "version", "created_at", "updated_at",
        )},
    }


def event_actor(event: FlagEvent) -> str:
    if event.actor_kind == "user":
        return f"user:{event.actor_user.get_username()}"
    if event.actor_kind == "token":
        return f"token:{event.actor_token.name}" if event.actor_token_id else "token:(deleted)"
    return "system"


def _actor(principal: Principal) -> Actor:
    return Actor(user=principal.user) if principal.is_human else Actor(token=principal.token)


@router.post(
    "/flags",
    response={201: FlagOut, 200: FlagOut, **WRITE_ERRORS},
    summary="Flag a message (or capture a low-confidence / refused answer)",
)
def flag_create(request: HttpRequest, payload: FlagIn):
    """Integrations post with their application token (author: the end user via the
    integration; with `capture_reason`, the automated agent). A curator may flag with a
    personal token or a session (author: operator; `application_id` required).

    201 with the new flag; 200 with the existing one when the same
    `(application, message_id, region)` was already flagged (nothing is created).
    A capture is refused with 403 while the application has capture (or that reason) off.
    The flag is stored, with its history, before the answer is sent.
    """
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    result = flag_submit(application=application, actor=_actor(principal), **submission_fields(payload))
    # flag_out() is FlagOut's shape (the API and fuzzing tests hold every response to
    # the schema), so it is rendered as it is: validating 27 fields again on every
    # ingest cost a sixth of this endpoint's time.
    return api.create_response(request, flag_out(result.flag), status=201 if result.created else 200)


def _batch_application(principal: Principal, payload: FlagBatchIn) -> Application:
    """The batch's application: its `application_id`, or the one its items name."""
    slug = payload.application_id
    if not slug and principal.kind != "application":
        named = [item.get("application_id") for item in payload.flags if isinstance(item, dict)]
        slugs = {slug for slug in named if isinstance(slug, str) and slug and not has_nul(slug)}
        slug = next(iter(slugs)) if len(slugs) == 1 else None
    return principal.application_for(slug, role=Role.CURATOR)


def _batch_item(raw: Any, application: Application) -> BatchItem:
    """One posted item checked as POST /api/v1/flags checks its body (FlagIn)."""
    try:
        payload = FlagIn.model_validate(raw)
    except pydantic.ValidationError as exc:
        fields = schema_error_fields(exc.errors(), whole="The item must be a JSON object.")
        return BatchItem(fields={}, error=InvalidInput("The flag does not match the schema.", fields=fields))
    if payload.application_id and payload.application_id != application.slug:
        return BatchItem(fields={}, error=PermissionDeniedError(
            "This item names another application than the batch's.", code="application_mismatch",
            fields={"application_id": "does not match the batch's application"}))
    return BatchItem(fields=submission_fields(payload))


@router.post(
    "/flags/batch",
    response={200: FlagBatchOut, 409: ErrorOut, **WRITE_ERRORS},
    summary=f"Flag many messages at once (1 to {MAX_BATCH})",
)
def flag_create_batch(request: HttpRequest, payload: FlagBatchIn):
    """For busy runtimes and backfills: up to 500 flags of one application in one
    request, each item exactly what POST /api/v1/flags takes, checked and
    deduplicated as that endpoint does. The answer is 200 with one entry per item,
    in order: 201 written, 200 already stored (with its id; also a repeat within
    this batch), 422 invalid, 403 not allowed. The valid items are stored, with
    their history, in one transaction before the answer is sent; a refused item
    writes nothing and does not hold the others back.

    More than 500 items is 413; none is 422. An integration posts with its
    application token; a curator with a personal token or a session, naming
    `application_id` (the batch's, or the same one in every item).
    """
    if len(payload.flags) > MAX_BATCH:
        return error_response(413, "too_large", f"A batch holds at most {MAX_BATCH} flags; this one has "
                              f"{len(payload.flags)}.", {"flags": f"at most {MAX_BATCH} items"})
    principal: Principal = request.auth
    application = _batch_application(principal, payload)
    items = [_batch_item(raw, application) for raw in payload.flags]
    flags_submit_batch(application=application, actor=_actor(principal), items=items)
    # FlagBatchOut's shape (the contract tests and schemathesis hold it to the
    # schema), rendered as it is, like flag_create's: not 500 items validated again.
    return api.create_response(request, {"items": [
        {"index": index, "status": item.status, "id": item.flag.public_id if item.error is None else None,
         "error": item.error.as_dict()["error"] if item.error is not None else None}
        for index, item in enumerate(items)
    ]}, status=200)


@router.get("/flags", response={200: FlagListOut, **ERRORS}, summary="List flags (cursor pagination)")
def flag_list(
    request: HttpRequest,
    application_id: str | None = APPLICATION_QUERY,
    status: StatusFilter = STATUS_QUERY,
    axis: str = AXIS_QUERY,
    region: RegionFilter = REGION_QUERY,
    problem: str = PROBLEM_QUERY,
    author_kind: AuthorKindFilter = AUTHOR_KIND_QUERY,
    created_from: date | None = CREATED_FROM_QUERY,
    created_to: date | None = CREATED_TO_QUERY,
    q: str = SEARCH_QUERY,
    sort: Literal["-created", "created"] = Query("-created", description="`-created` newest first, "
                                                 "`created` oldest first."),
    cursor: str | None = CURSOR_QUERY,
    limit: int = Query(50, ge=1, le=200, description="Flags per page."),
):
    """Newest first by default. Follow `next_cursor` (pass it as `cursor`) for the next page;
    no total is computed, so a page costs the same at any table size. An unknown filter value
    is 422 naming it.

    Any member (viewer role or above) with a personal token or session naming `application_id`,
    or the application's token.
    """
    principal: Principal = request.auth
    application = principal.application_for(application_id, role=Role.VIEWER)
    filters = FlagFilters(status=status, axis=axis, region=region, problem=problem, author_kind=author_kind,
                          created_from=created_from, created_to=created_to, q=q)
    page = flag_page(application=application, filters=filters, order=sort, cursor=cursor, limit=limit)
    for flag in page.items:
        flag.application = application  # one application for the whole page: no per-row query
    return page_out(page, flag_out)


@router.get("/flags/{flag_id}", response={200: FlagDetailOut, **ERRORS}, summary="One flag with its history")
def flag_detail(request: HttpRequest, flag_id: str = Path(description="The flag's id (`fb_...`).")):
    """The flag and every transition it went through (`events`, oldest first).

    Any member (viewer role or above) with a personal token or session, or the
    application's token; a flag of another application is 404."""
    principal: Principal = request.auth
    flag = flag_get_by_public_id(public_id=flag_id, applications=principal.visible_applications())
    principal.require_member(flag.application, role=Role.VIEWER)
    events = [
        {"action": e.action, "from_status": e.from_status, "to_status": e.to_status, "actor": event_actor(e),
         "changes": e.changes, "at": e.created_at}
        for e in flag_events(flag=flag)
    ]
    return {**flag_out(flag), "events": events}


@router.post(
    "/flags/{flag_id}/review",
    response={200: FlagOut, 409: ErrorOut, **WRITE_ERRORS},
    summary="Review a flag: approve, reject, re-open, or label a capture (humans only)",
)
def flag_review_endpoint(
    request: HttpRequest, payload: ReviewIn, flag_id: str = Path(description="The flag's id (`fb_...`).")
):
    """Only a human curator reviews: a personal token or a logged-in session. An
    application token gets 403. Approve defaults: verdict `false_negative`, axis = the
    suggested axis. A stale `version` gets 409 with the current state in `error.current`;
    nothing is overwritten."""
    principal: Principal = request.auth
    flag = flag_get_by_public_id(public_id=flag_id, applications=principal.visible_applications())
    principal.require_member(flag.application, role=Role.CURATOR)
    reviewer = principal.require_human("Reviewing a flag")
    flag = flag_review(flag=flag, reviewer=reviewer, **payload.model_dump())
    return flag_out(flag)

