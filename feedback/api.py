"""JSON endpoints of the feedback app (mounted under /api/v1 by consoles.urls).

Thin: parse (ninja schemas) -> access check (Principal) -> service/selector -> serialise.
"""

from datetime import date, datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Path, Query, Router, Schema

from consoles.access import Principal
from consoles.api import CURSOR_QUERY, ERRORS, WRITE_ERRORS, ErrorOut, api, page_out, page_schema
from consoles.models import Role
from consoles.schemas import StrictIn

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
from .receipts import after_answer
from .selectors import FlagFilters, flag_events, flag_get_by_public_id, flag_page
from .services import MAX_ID, MAX_TEXT, Actor, flag_review, flag_submit

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
    note: str = Field("", max_length=MAX_TEXT, description="Why it was flagged, in the flagger's words.")
    prompt: str = Field("", max_length=MAX_TEXT, description="The user message.")
    context: str = Field("", max_length=MAX_TEXT, description="RAG context shown to the model.")
    answer: str = Field("", max_length=MAX_TEXT, description="The assistant's answer.")
    detector_scores: dict[str, float] = Field(default_factory=dict, description="axis -> score at flag time")
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
    note: str = Field("", max_length=MAX_TEXT, description="The reviewer's note.")
    twin_prompt: str | None = Field(None, max_length=MAX_TEXT, description="A benign twin of the prompt (approve).")
    twin_answer: str | None = Field(None, max_length=MAX_TEXT, description="A benign twin of the answer (approve).")
    weight: float | None = Field(None, ge=0, le=1, description="The exemplar's weight in the bank (approve).")
    attack_family: str | None = Field(None, max_length=100, description="The attack family, if any (approve).")


def flag_out(flag: Flag) -> dict:
    return {
        "id": flag.public_id,
        "application_id": flag.application.slug,
        **{name: getattr(flag, name) for name in (
            "status", "region", "problem", "suggested_axis", "axis", "verdict", "note", "prompt", "context",
            "answer", "detector_scores", "message_id", "session_id", "end_user_ref", "author_kind",
            "capture_reason", "capture_label", "twin_prompt", "twin_answer", "weight", "attack_family",
            "review_note", "version", "created_at", "updated_at",
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
    """
    principal: Principal = request.auth
    application = principal.application_for(payload.application_id, role=Role.CURATOR)
    result = flag_submit(
        application=application,
        actor=_actor(principal),
        capture_reason=payload.capture_reason or "",
        stage=True,
        **payload.model_dump(exclude={"application_id", "capture_reason"}),
    )
    # flag_out() is FlagOut's shape (the API and fuzzing tests hold every response to
    # the schema), so it is rendered as it is: validating 27 fields again on every
    # ingest cost a sixth of this endpoint's time.
    response = api.create_response(request, flag_out(result.flag), status=201 if result.created else 200)
    if result.staged:
        after_answer(response)  # the receipt goes into the queue once the answer is sent
    return response


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
    flag = flag_get_by_public_id(public_id=flag_id)
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
    flag = flag_get_by_public_id(public_id=flag_id)
    principal.require_member(flag.application, role=Role.CURATOR)
    reviewer = principal.require_human("Reviewing a flag")
    flag = flag_review(flag=flag, reviewer=reviewer, **payload.model_dump())
    return flag_out(flag)

