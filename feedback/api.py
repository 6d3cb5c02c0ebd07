"""JSON endpoints of the feedback app (mounted under /api/v1 by consoles.urls).

Thin: parse (ninja schemas) -> access check (Principal) -> service/selector -> serialise.
"""

from datetime import date, datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from consoles.access import Principal
from consoles.api import ERRORS, ErrorOut, api
from consoles.models import Role
from consoles.schemas import StrictIn

from .models import Flag, FlagEvent
from .selectors import FlagFilters, flag_events, flag_get_by_public_id, flag_page
from .services import MAX_ID, MAX_TEXT, Actor, flag_review, flag_submit

router = Router(tags=["feedback"])


class FlagIn(StrictIn):
    region: Literal["prompt", "answer"] = Field(description="Which message was flagged.")
    problem: str = Field("", max_length=64, description="One of the application's plain-language problems "
                         "(required for a flag, optional for a capture).")
    note: str = Field("", max_length=MAX_TEXT)
    prompt: str = Field("", max_length=MAX_TEXT)
    context: str = Field("", max_length=MAX_TEXT, description="RAG context shown to the model.")
    answer: str = Field("", max_length=MAX_TEXT)
    detector_scores: dict[str, float] = Field(default_factory=dict, description="axis -> score at flag time")
    message_id: str = Field(min_length=1, max_length=MAX_ID)
    session_id: str = Field("", max_length=MAX_ID)
    end_user_ref: str = Field("", max_length=MAX_ID)
    application_id: str | None = Field(
        None, description="The application's slug: optional with an application token (must match), "
        "required with a personal token or a session."
    )
    capture_reason: Literal["low_confidence", "refused"] | None = Field(
        None, description="Set by the runtime for an automated capture; needs capture enabled for that reason."
    )


class EventOut(Schema):
    action: str
    from_status: str
    to_status: str
    actor: str
    changes: dict
    at: datetime


class FlagOut(Schema):
    id: str
    application_id: str
    status: str
    region: str
    problem: str
    suggested_axis: str
    axis: str
    verdict: str
    note: str
    prompt: str
    context: str
    answer: str
    detector_scores: dict
    message_id: str
    session_id: str
    end_user_ref: str
    author_kind: str
    capture_reason: str
    capture_label: str
    twin_prompt: str
    twin_answer: str
    weight: float | None
    attack_family: str
    review_note: str
    version: int
    created_at: datetime
    updated_at: datetime


class FlagDetailOut(FlagOut):
    events: list[EventOut]


class FlagListOut(Schema):
    items: list[FlagOut]
    next_cursor: str | None
    previous_cursor: str | None


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
    note: str = Field("", max_length=MAX_TEXT)
    twin_prompt: str | None = Field(None, max_length=MAX_TEXT)
    twin_answer: str | None = Field(None, max_length=MAX_TEXT)
    weight: float | None = Field(None, ge=0, le=1)
    attack_family: str | None = Field(None, max_length=100)


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
    response={201: FlagOut, 200: FlagOut, **ERRORS},
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
        **payload.model_dump(exclude={"application_id", "capture_reason"}),
    )
    # flag_out() is FlagOut's shape (the API and fuzzing tests hold every response to
    # the schema), so it is rendered as it is: validating 27 fields again on every
    # ingest cost a sixth of this endpoint's time.
    return api.create_response(request, flag_out(result.flag), status=201 if result.created else 200)


@router.get("/flags", response={200: FlagListOut, **ERRORS}, summary="List flags (cursor pagination)")
def flag_list(
    request: HttpRequest,
    application_id: str | None = None,
    status: str = "",
    axis: str = "",
    region: str = "",
    problem: str = "",
    author_kind: str = "",
    created_from: date | None = None,
    created_to: date | None = None,
    sort: Literal["-created", "created"] = "-created",
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=200),
):
    """Newest first by default. Follow `next_cursor` (pass it as `cursor`) for the next page;
    no total is computed, so a page costs the same at any table size."""
    principal: Principal = request.auth
    application = principal.application_for(application_id, role=Role.VIEWER)
    filters = FlagFilters(status=status, axis=axis, region=region, problem=problem, author_kind=author_kind,
                          created_from=created_from, created_to=created_to)
    page = flag_page(application=application, filters=filters, order=sort, cursor=cursor, limit=limit)
    for flag in page.items:
        flag.application = application  # one application for the whole page: no per-row query
    return {
        "items": [flag_out(f) for f in page.items],
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }


@router.get("/flags/{flag_id}", response={200: FlagDetailOut, **ERRORS}, summary="One flag with its history")
def flag_detail(request: HttpRequest, flag_id: str):
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
    response={200: FlagOut, 409: ErrorOut, **ERRORS},
    summary="Review a flag: approve, reject, re-open, or label a capture (humans only)",
)
def flag_review_endpoint(request: HttpRequest, flag_id: str, payload: ReviewIn):
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

