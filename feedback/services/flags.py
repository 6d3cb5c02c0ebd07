"""Flags and captures submitted: one (flag_submit) or a batch (flags_submit_batch),
validated, deduplicated by (message_id, region) and written whole with their
created event in one transaction."""

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from consoles.errors import Conflict, DomainError, InvalidInput, PermissionDeniedError
from consoles.models import Application

from ..history import history_written
from ..models import (
    PUBLIC_ID_PREFIX,
    AuthorKind,
    CaptureReason,
    EventAction,
    Flag,
    FlagEvent,
    FlagStatus,
    Region,
)
from .captures import _make_room_for_capture
from .events import MAX_ID, MAX_TEXT, NOTE_LIMIT, Actor, _event_row, _text


@dataclass(frozen=True)
class FlagSubmission:
    flag: Flag
    created: bool
    dropped: list[str] = field(default_factory=list)  # public ids of captures dropped at capacity


def flag_public_id(*, application: Application, message_id: str, region: str, capture: bool) -> str:
    """`fb_` + 16 hex digits of a SHA-256 over what identifies the signal.

    Derived from content (the application, the message, the region, and whether
    it is a capture), so the same post always yields the same id, on any server.
    """
    kind = "capture" if capture else "flag"
    digest = hashlib.sha256(
        "\x1f".join([application.slug, kind, region, message_id]).encode()
    ).hexdigest()
    return PUBLIC_ID_PREFIX + digest[:16]


def _scores(value: Any, application: Application, errors: dict[str, str]) -> dict[str, float]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        errors["detector_scores"] = "Give an object of axis -> number."
        return {}
    scores: dict[str, float] = {}
    for axis, score in value.items():
        if axis not in application.axes:
            errors["detector_scores"] = f"Unknown axis {axis!r}; use one of {', '.join(application.axes)}."
            return {}
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score) \
                or not 0 <= score <= 1:
            errors["detector_scores"] = f"The score of {axis!r} must be a number from 0 to 1."
            return {}
        scores[axis] = float(score)
    return scores


def flag_prepare(
    *,
    application: Application,
    actor: Actor,
    region: str,
    message_id: str,
    problem: str = "",
    note: str = "",
    prompt: str = "",
    context: str = "",
    answer: str = "",
    detector_scores: dict[str, float] | None = None,
    session_id: str = "",
    end_user_ref: str = "",
    capture_reason: str = "",
    at: datetime | None = None,
) -> Flag:
    """Check a flag (or, with `capture_reason`, an automated capture) and build its
    row, unsaved: everything `flag_submit` does before it writes. Raises
    `InvalidInput` naming each bad field, or `PermissionDeniedError` while
    capture is off for that reason.
    """
    errors: dict[str, str] = {}
    if region not in Region.values:
        errors["region"] = f"Use one of {', '.join(Region.values)}."
    message_id = _text(message_id, "message_id", errors, limit=MAX_ID).strip()
    if not message_id and "message_id" not in errors:
        errors["message_id"] = "Required."
    session_id = _text(session_id, "session_id", errors, limit=MAX_ID)
    end_user_ref = _text(end_user_ref, "end_user_ref", errors, limit=MAX_ID)
    texts = {name: _text(value, name, errors, limit=NOTE_LIMIT if name == "note" else MAX_TEXT) for name, value in
             {"note": note, "prompt": prompt, "context": context, "answer": answer}.items()}
    scores = _scores(detector_scores, application, errors)
    problem = problem or ""
    if capture_reason:
        if capture_reason not in CaptureReason.values:
            errors["capture_reason"] = f"Use one of {', '.join(CaptureReason.values)}."
        elif actor.is_human:
            errors["capture_reason"] = "Only the runtime (an application token) posts captures."
    if problem and problem not in application.problem_axis_map:
        errors["problem"] = f"Unknown problem {problem!r}; use one of {', '.join(application.problem_keys)}."
    elif not problem and not capture_reason:
        errors["problem"] = "Required."
    if errors:
        raise InvalidInput("The flag is not valid: " + "; ".join(f"{k}: {v}" for k, v in errors.items()),
                           fields=errors)
    if capture_reason and not application.captures_reason(capture_reason):
        raise PermissionDeniedError(
            f"Capture is disabled for {capture_reason.replace('_', '-')} answers in this application; "
            "an admin must enable capture and that reason first.",
            code="capture_disabled",
            fields={"capture_reason": "capture disabled"},
        )

    is_capture = bool(capture_reason)
    if is_capture:
        author_kind = AuthorKind.AGENT
    elif actor.is_human:
        author_kind = AuthorKind.OPERATOR
    else:
        author_kind = AuthorKind.END_USER
    suggested = application.problem_axis_map.get(problem, "")
    # `at` lets imports and the demo keep the original time; clients never set it.
    now = at or timezone.now()
    return Flag(
        public_id=flag_public_id(application=application, message_id=message_id, region=region,
                                 capture=is_capture),
        application=application,
        region=region,
        problem=problem,
        suggested_axis=suggested,
        axis=suggested,
        status=FlagStatus.PENDING,
        detector_scores=scores,
        message_id=message_id,
        session_id=session_id,
        end_user_ref=end_user_ref,
        author_kind=author_kind,
        author_user=actor.user,
        author_token=actor.token,
        capture_reason=capture_reason,
        created_at=now,
        updated_at=now,
        **texts,
    )


def flag_submit(*, application: Application, actor: Actor, **fields: Any) -> FlagSubmission:
    """Record a flag (or, with `capture_reason`, an automated capture) with its
    `created` event, in one transaction; the fields are `flag_prepare`'s, and so
    are the errors. The row is committed (or the caller's transaction holds it)
    when this returns: what an answer reports is what every reader reads.

    Idempotent: the same (application, message_id, region) again returns the
    existing row with `created=False` and writes nothing. A capture is accepted
    only when the application opted in for that reason; at the application's
    capacity the oldest pending capture is dropped (seed 003), never a user flag.
    """
    flag = flag_prepare(application=application, actor=actor, **fields)
    created = _event_row(flag=flag, action=EventAction.CREATED, from_status="", to_status=FlagStatus.PENDING,
                         actor=actor, at=flag.created_at)
    try:
        with transaction.atomic():
            dropped = _make_room_for_capture(application, flag.created_at, incoming=1) if flag.is_capture else []
            history_written(application_id=application.pk, at=flag.created_at)
            flag.save(force_insert=True)
            created.flag = flag
            created.save()
    except IntegrityError:
        # The insert is the duplicate check (the unique constraint on application,
        # message and region), which saves a query on every new flag; an earlier
        # or concurrent post of the same message answers with its flag. The
        # atomic block (a savepoint inside a caller's transaction) rolled back
        # whatever this attempt wrote.
        existing = _existing(application, flag.message_id, flag.region, flag.is_capture)
        if existing is None:
            raise
        return FlagSubmission(flag=existing, created=False)
    return FlagSubmission(flag=flag, created=True, dropped=dropped)


# What one item of a batch may be answered: written, already there, refused.
BATCH_CREATED, BATCH_EXISTING = 201, 200
MAX_BATCH = 500


@dataclass
class BatchItem:
    """One item of `flags_submit_batch`: what was posted, and what became of it.

    The caller fills `fields` (or `error`, when it refused the item already,
    e.g. its schema); the service fills `status`, `flag` and `error`."""

    fields: dict[str, Any]
    status: int = 0
    flag: Flag | None = None
    error: DomainError | None = None


def flags_submit_batch(*, application: Application, actor: Actor, items: list[BatchItem],
                       at: datetime | None = None) -> list[BatchItem]:
    """Record many flags (and captures) of one application at once: each item is
    checked by `flag_prepare` exactly as `flag_submit` checks one, a repeat of a
    stored `(message_id, region)` (or of an earlier item of this batch) is
    answered with that flag, and the valid new ones are written with their
    `created` events in one transaction (`bulk_create`). A refused item writes
    nothing and leaves the others be. Returns `items`, filled in, in order.
    """
    now = at or timezone.now()
    fresh: dict[tuple[str, str, bool], BatchItem] = {}  # first item of each (message, region, kind)
    repeats: list[tuple[BatchItem, BatchItem]] = []
    for item in items:
        if item.error is not None:
            item.status = item.error.status
            continue
        try:
            # An import or the demo may date each item (`at`); an API client never does.
            flag = flag_prepare(application=application, actor=actor, **{"at": now, **item.fields})
        except (InvalidInput, PermissionDeniedError) as exc:
            item.status, item.error = exc.status, exc
            continue
        key = (flag.message_id, flag.region, flag.is_capture)
        if key in fresh:
            repeats.append((item, fresh[key]))
        else:
            item.flag = flag
            fresh[key] = item
    for _ in range(3):
        # Everything but the writes happens before the transaction: on SQLite the
        # write lock is held from its first statement, and every other worker's
        # write waits for it.
        new = _unstored(application, fresh)
        created = [_event_row(flag=flag, action=EventAction.CREATED, from_status="", to_status=FlagStatus.PENDING,
                              actor=actor, at=flag.created_at) for flag in new]
        try:
            with transaction.atomic():
                _batch_write(application, new, created, now)
            break
        except IntegrityError:
            # A concurrent post wrote one of these messages between the check and
            # the insert: the whole attempt rolled back; check again and retry.
            for flag in new:
                flag.pk, flag._state.adding = None, True
            continue
    else:
        raise Conflict("The batch kept meeting concurrent writes of the same messages; post it again.")
    for item, first in repeats:
        item.status, item.flag = BATCH_EXISTING, first.flag
    return items


def _unstored(application: Application, fresh: dict[tuple[str, str, bool], BatchItem]) -> list[Flag]:
    """Answer the items already stored with their flags (200); return the flags of
    the others, marked to be written (201). The insert's unique constraint is
    what decides: a message stored after this read makes the insert fail, and
    the caller reads again."""
    stored: dict[tuple[str, str, bool], Flag] = {}
    for is_capture in (False, True):
        keys = [key for key in fresh if key[2] == is_capture]
        if not keys:
            continue
        qs = Flag.objects.filter(application=application, message_id__in={m for m, _, _ in keys})
        qs = qs.exclude(capture_reason="") if is_capture else qs.filter(capture_reason="")
        for flag in qs:
            stored[(flag.message_id, flag.region, is_capture)] = flag
    new = []
    for key, item in fresh.items():
        if key in stored:
            item.status, item.flag = BATCH_EXISTING, stored[key]
        else:
            item.status = BATCH_CREATED
            new.append(item.flag)
    return new


def _batch_write(application: Application, new: list[Flag], created: list[FlagEvent], now: datetime) -> None:
    """In the caller's transaction: write the new flags and their `created` events;
    captures over the capacity drop the oldest pending ones (those just written
    included), as one by one would."""
    if not new:
        return
    history_written(application_id=application.pk, at=min(flag.created_at for flag in new))
    Flag.objects.bulk_create(new)  # sets each flag's key (RETURNING, on both databases)
    FlagEvent.objects.bulk_create(created)  # each event takes its flag's new key
    if any(flag.is_capture for flag in new):
        _make_room_for_capture(application, now, incoming=0)


def _existing(application: Application, message_id: str, region: str, is_capture: bool) -> Flag | None:
    qs = Flag.objects.filter(application=application, message_id=message_id, region=region)
    qs = qs.exclude(capture_reason="") if is_capture else qs.filter(capture_reason="")
    return qs.first()
