"""Writes of the feedback app. Each service is keyword-only, runs in one
transaction, validates before writing and appends its FlagEvent (and, for a
human decision, its FlagReview) in that same transaction.
"""

import hashlib
import hmac
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Min, Q
from django.utils import timezone

from consoles import webhooks
from consoles.appendonly import history_delete_allowed
from consoles.errors import Conflict, DomainError, InvalidInput, PermissionDeniedError
from consoles.files import MANIFEST_SCHEMA, check_writable, publish, stage_write
from consoles.models import ApiToken, Application
from consoles.timestamps import iso_utc

from .drafts import commit_drafts, contradictions, discard_drafts, render_drafts, stage_drafts
from .exports import (
    EXPORT_FIELDS,
    ExportTally,
    encode_id_set,
    jsonl_chunks,
)
from .history import history_days_forget, history_written
from .models import (
    PUBLIC_ID_PREFIX,
    ActorKind,
    AuthorKind,
    CaptureReason,
    CaseFeedback,
    Disposition,
    ErasureKind,
    ErasureRecord,
    EventAction,
    ExportKind,
    ExportManifest,
    Flag,
    FlagEvent,
    FlagReview,
    FlagStatus,
    Region,
    Verdict,
)
from .selectors import (
    FlagFilters,
    export_manifest_previous,
    export_manifests_containing,
    flag_export_batches,
    reviewed_items,
)

CLAIM_DURATION = timedelta(minutes=5)
MAX_TEXT = 100_000  # characters per text field; the body limit caps the total anyway
# A note (the flagger's, a reviewer's) is a person's words, not a transcript: one limit
# for the API, the screens and every other caller.
NOTE_LIMIT = 10_000
MAX_ID = 200


@dataclass(frozen=True)
class Actor:
    """Who is writing: a human user or an application token (never both)."""

    user: AbstractBaseUser | None = None
    token: ApiToken | None = None

    def __post_init__(self) -> None:
        if (self.user is None) == (self.token is None):
            raise ValueError("An actor is a user or a token, exactly one.")

    @property
    def is_human(self) -> bool:
        return self.user is not None


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


def _event_row(
    *,
    flag: Flag,
    action: str,
    from_status: str,
    to_status: str,
    actor: Actor | None,
    changes: dict[str, Any] | None = None,
    at=None,
) -> FlagEvent:
    """The history row of one transition, not yet written."""
    if actor is None:
        kind, user, token = ActorKind.SYSTEM, None, None
    elif actor.is_human:
        kind, user, token = ActorKind.USER, actor.user, None
    else:
        kind, user, token = ActorKind.TOKEN, None, actor.token
    return FlagEvent(
        application_id=flag.application_id,
        flag=flag,
        action=action,
        from_status=from_status,
        to_status=to_status,
        actor_kind=kind,
        actor_user=user,
        actor_token=token,
        changes=changes or {},
        created_at=at or timezone.now(),
    )


def _event(**transition: Any) -> FlagEvent:
    """Append the history row of one transition (in the caller's transaction)."""
    row = _event_row(**transition)
    history_written(application_id=row.application_id, at=row.created_at)
    row.save()  # a new row: FlagEvent.save() refuses only changing an old one
    return row


def _text(value: Any, name: str, errors: dict[str, str], *, limit: int = MAX_TEXT) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[name] = "Must be a string."
        return ""
    if len(value) > limit:
        errors[name] = f"At most {limit} characters."
    elif "\x00" in value:
        # The API's schema refuses it first; any other caller must not reach
        # PostgreSQL, which cannot store NUL and would fail the insert.
        errors[name] = "Must not contain NUL (\\u0000) characters."
    return value


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
        try:
            with transaction.atomic():
                _batch_write(application, actor, fresh, now)
            break
        except IntegrityError:
            # A concurrent post wrote one of these messages between the check and
            # the insert: the whole attempt rolled back; check again and retry.
            for item in fresh.values():
                item.flag.pk, item.flag._state.adding, item.status = None, True, 0
            continue
    else:
        raise Conflict("The batch kept meeting concurrent writes of the same messages; post it again.")
    for item, first in repeats:
        item.status, item.flag = BATCH_EXISTING, first.flag
    return items


def _batch_write(application: Application, actor: Actor, fresh: dict[tuple[str, str, bool], BatchItem],
                 now: datetime) -> None:
    """In the caller's transaction: answer the items already stored with their
    flags, write the others with their events; captures over the capacity drop
    the oldest pending ones (those just written included), as one by one would."""
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
    if not new:
        return
    history_written(application_id=application.pk, at=min(flag.created_at for flag in new))
    Flag.objects.bulk_create(new)  # sets each flag's key (RETURNING, on both databases)
    FlagEvent.objects.bulk_create([
        _event_row(flag=flag, action=EventAction.CREATED, from_status="", to_status=FlagStatus.PENDING,
                   actor=actor, at=flag.created_at)
        for flag in new
    ])
    if any(flag.is_capture for flag in new):
        _make_room_for_capture(application, now, incoming=0)


def _existing(application: Application, message_id: str, region: str, is_capture: bool) -> Flag | None:
    qs = Flag.objects.filter(application=application, message_id=message_id, region=region)
    qs = qs.exclude(capture_reason="") if is_capture else qs.filter(capture_reason="")
    return qs.first()


def _make_room_for_capture(application: Application, now, *, incoming: int) -> list[str]:
    """Drop the oldest pending captures so `incoming` more fit under capture_max_items.

    Runs inside the caller's transaction. On PostgreSQL the application row is
    locked so two concurrent captures cannot both see room; SQLite's immediate
    transactions already serialize writers.
    """
    if connection.vendor == "postgresql":
        Application.objects.select_for_update().filter(pk=application.pk).first()
    pending = Flag.objects.filter(
        application=application, status=FlagStatus.PENDING, author_kind=AuthorKind.AGENT
    )
    excess = pending.count() - application.capture_max_items + incoming
    if excess <= 0:
        return []
    victims = list(pending.order_by("created_at", "id")[:excess])
    dropped: list[str] = []
    for victim in victims:
        # The text goes (capacity bounds what is stored); the row and its
        # history stay, so the drop is auditable. Only while still pending: a
        # curator's decision committed since the read keeps its capture (and
        # leaves the room the drop would have made).
        if not Flag.objects.filter(pk=victim.pk, status=FlagStatus.PENDING, version=victim.version).update(
            status=FlagStatus.DROPPED, prompt="", context="", answer="", note="", detector_scores={},
            claimed_by=None, claimed_until=None, version=F("version") + 1, updated_at=now,
        ):
            continue
        dropped.append(victim.public_id)
        _event(flag=victim, action=EventAction.DROPPED, from_status=FlagStatus.PENDING,
               to_status=FlagStatus.DROPPED, actor=None, at=now,
               changes={"reason": "capture_max_items", "capture_max_items": application.capture_max_items})
    return dropped


def flag_as_dict(flag: Flag) -> dict[str, Any]:
    """The state a conflict reports back (what the other curator decided)."""
    return {
        "id": flag.public_id,
        "status": flag.status,
        "axis": flag.axis,
        "verdict": flag.verdict,
        "capture_label": flag.capture_label,
        "note": flag.review_note,
        "version": flag.version,
        "updated_at": iso_utc(flag.updated_at),  # the API's one timestamp shape
    }


_ACTIONS = {
    FlagStatus.APPROVED: EventAction.APPROVED,
    FlagStatus.REJECTED: EventAction.REJECTED,
    FlagStatus.PENDING: EventAction.REOPENED,
    FlagStatus.LABELLED: EventAction.LABELLED,
}


def flag_review(
    *,
    flag: Flag,
    reviewer: AbstractBaseUser,
    status: str,
    version: int,
    axis: str | None = None,
    verdict: str | None = None,
    label: str | None = None,
    note: str = "",
    twin_prompt: str | None = None,
    twin_answer: str | None = None,
    weight: float | None = None,
    attack_family: str | None = None,
    at: datetime | None = None,
) -> Flag:
    """A curator's decision: approve (axis + verdict), reject, re-open, or label a capture.

    `version` is the version the curator saw; if the flag changed since, a
    Conflict carries the current state and nothing is written. `at` is when it
    was decided (now unless given: the demo data's history is decided in the past).
    """
    if reviewer is None or not getattr(reviewer, "is_authenticated", False):
        raise PermissionDeniedError("Only a human curator reviews flags.", code="human_required")
    application = flag.application
    errors: dict[str, str] = {}
    if status not in _ACTIONS:
        errors["status"] = f"Use one of {', '.join(_ACTIONS)}."
    note = _text(note, "note", errors, limit=NOTE_LIMIT)
    values: dict[str, Any] = {"review_note": note}
    if status == FlagStatus.APPROVED:
        if flag.is_capture:
            errors["status"] = "A capture is labelled (status \"labelled\" with a label), not approved."
        axis = axis or flag.suggested_axis
        if not axis:
            errors["axis"] = "Required."
        elif axis not in application.axes:
            errors["axis"] = f"Unknown axis {axis!r}; use one of {', '.join(application.axes)}."
        verdict = verdict or Verdict.FALSE_NEGATIVE
        if verdict not in Verdict.values:
            errors["verdict"] = f"Use one of {', '.join(Verdict.values)}."
        if weight is not None and (isinstance(weight, bool) or not 0 <= weight <= 1):
            errors["weight"] = "A weight between 0 and 1."
        values.update(
            axis=axis, verdict=verdict, capture_label="",
            twin_prompt=_text(twin_prompt, "twin_prompt", errors),
            twin_answer=_text(twin_answer, "twin_answer", errors),
            weight=weight,
            attack_family=_text(attack_family, "attack_family", errors, limit=100),
        )
    elif status == FlagStatus.LABELLED:
        if not flag.is_capture:
            errors["status"] = "Only automated captures are labelled; approve or reject a flag."
        elif label not in application.capture_labels:
            errors["label"] = f"Use one of {', '.join(application.capture_labels)}."
        values.update(capture_label=label or "", verdict="")
    else:
        if axis:
            if axis not in application.axes:
                errors["axis"] = f"Unknown axis {axis!r}; use one of {', '.join(application.axes)}."
            values["axis"] = axis
        values.update(verdict="", capture_label="")
    if errors:
        raise InvalidInput("The decision is not valid: " + "; ".join(f"{k}: {v}" for k, v in errors.items()),
                           fields=errors)
    if flag.status == FlagStatus.DROPPED:
        raise Conflict("This capture was dropped at capacity; it cannot be reviewed.",
                       code="dropped", current=flag_as_dict(flag))
    if status == FlagStatus.PENDING and flag.status == FlagStatus.PENDING:
        raise InvalidInput(
            "This flag is already pending, so there is nothing to re-open and nothing was changed; "
            "approve or reject it instead.",
            fields={"status": "already pending: nothing to re-open; approve or reject it instead"},
        )

    now = at or timezone.now()
    old = {name: getattr(flag, name) for name in ("status", "axis", "verdict", "capture_label")}
    # The write transaction holds only the writes: on SQLite it holds the
    # database's one write lock (BEGIN IMMEDIATE), and every other curator's
    # decision waits for it in the busy handler's sleeps. Reads (the row as
    # written, the current state on a conflict) happen outside it.
    with transaction.atomic():
        # Optimistic concurrency: the update only applies to the version the
        # curator saw; a concurrent decision makes it match no row. It also
        # applies only to the state the event will name as "from": a copy of the
        # flag older than `version` must not log a transition the row never made.
        written = dict(status=status, updated_at=now, claimed_by=None, claimed_until=None, **values)
        updated = Flag.objects.filter(pk=flag.pk, version=version, **old).exclude(status=FlagStatus.DROPPED).update(
            version=F("version") + 1, **written,
        )
        if updated:
            # The row matched `version` and `old`, so it now holds exactly this: no
            # need to read it back (claims, which change no version, are cleared).
            for name, value in written.items():
                setattr(flag, name, value)
            flag.version = version + 1
            FlagReview.objects.create(
                application_id=flag.application_id, flag=flag, reviewer=reviewer,
                from_status=old["status"], to_status=status, axis=flag.axis, verdict=flag.verdict,
                capture_label=flag.capture_label, note=note, flag_version=flag.version, created_at=now,
                # A clock set back must not make a negative wait (the column refuses it).
                wait_seconds=(None if status == FlagStatus.PENDING
                              else max(0, int((now - flag.created_at).total_seconds()))),
            )
            changes = {name: [before, getattr(flag, name)] for name, before in old.items()
                       if before != getattr(flag, name)}
            if note:
                changes["note"] = note
            _event(flag=flag, action=_ACTIONS[status], from_status=old["status"], to_status=status,
                   actor=Actor(user=reviewer), changes=changes, at=now)
            webhooks.event_record(application=flag.application_id, type=webhooks.FLAG_EVENTS[status],
                                  data=webhooks.flag_data(flag, reviewer))
    if not updated:
        current = Flag.objects.get(pk=flag.pk)
        now_at = f"{current.get_status_display().lower()}, version {current.version}"
        if version > current.version:
            # Bad input, not a race: nobody decided meanwhile, the flag never had it.
            raise InvalidInput(
                f"Version {version} is not one this flag has had (it is {now_at}); your decision was not saved.",
                fields={"version": f"higher than the flag's version ({current.version})"},
            )
        raise Conflict(
            f"Someone else changed this flag meanwhile (now {now_at}); your decision was not saved.",
            current=flag_as_dict(current),
        )
    return flag


def flag_bulk_reject(
    *, application: Application, public_ids: Iterable[str], reviewer: AbstractBaseUser, note: str = ""
) -> tuple[list[str], list[str]]:
    """Reject the selected pending flags. Returns (rejected ids, skipped ids).

    A flag that is no longer pending (someone decided it meanwhile) is skipped,
    never overwritten.
    """
    ids = list(dict.fromkeys(public_ids))
    if not ids:
        raise InvalidInput("Select at least one flag.", fields={"ids": "required"})
    if len(ids) > 500:
        raise InvalidInput("At most 500 flags at once.", fields={"ids": "too many"})
    rejected: list[str] = []
    skipped: list[str] = []
    with transaction.atomic():
        flags = {f.public_id: f for f in Flag.objects.select_related("application").filter(
            application=application, public_id__in=ids)}
        for public_id in ids:
            flag = flags.get(public_id)
            # A capture is labelled one by one (its label is the truth it carries), never
            # rejected in bulk with the flags around it.
            if flag is None or flag.status != FlagStatus.PENDING or flag.is_capture:
                skipped.append(public_id)
                continue
            try:
                flag_review(flag=flag, reviewer=reviewer, status=FlagStatus.REJECTED,
                            version=flag.version, note=note)
            except Conflict:
                skipped.append(public_id)
            else:
                rejected.append(public_id)
    return rejected, skipped


def flag_bulk_reopen(
    *, application: Application, versions: dict[str, int], reviewer: AbstractBaseUser
) -> tuple[list[str], list[str]]:
    """Undo a bulk reject: re-open each flag still at the version the reject left it
    at. Returns (re-opened ids, skipped ids); a flag changed since is skipped, so an
    undo never overwrites a later decision."""
    if not versions:
        raise InvalidInput("Nothing to re-open.", fields={"ids": "required"})
    reopened: list[str] = []
    skipped: list[str] = []
    with transaction.atomic():
        flags = {f.public_id: f for f in Flag.objects.select_related("application").filter(
            application=application, public_id__in=list(versions))}
        for public_id, version in versions.items():
            flag = flags.get(public_id)
            if flag is None or flag.status != FlagStatus.REJECTED or flag.version != version:
                skipped.append(public_id)
                continue
            try:
                flag_review(flag=flag, reviewer=reviewer, status=FlagStatus.PENDING, version=version)
            except Conflict:
                skipped.append(public_id)
            else:
                reopened.append(public_id)
    return reopened, skipped


def flag_claim(*, flag: Flag, user: AbstractBaseUser, duration: timedelta = CLAIM_DURATION) -> bool:
    """Claim a pending flag for `user` for a few minutes; False if another curator holds it.

    A claim is advisory (it steers "next", it blocks no decision), so it is
    not a transition and appends no event.
    """
    if flag.status != FlagStatus.PENDING:
        return False
    now = timezone.now()
    with transaction.atomic():
        claimed = Flag.objects.filter(
            Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lt=now),
            pk=flag.pk, status=FlagStatus.PENDING,
        ).update(claimed_by=user, claimed_until=now + duration)
    if claimed:
        flag.claimed_by = user
        flag.claimed_until = now + duration
    return bool(claimed)


def flag_release(*, flag: Flag, user: AbstractBaseUser) -> None:
    with transaction.atomic():
        Flag.objects.filter(pk=flag.pk, claimed_by=user).update(claimed_by=None, claimed_until=None)


# --- Case feedback ---------------------------------------------------------------

MAX_NOTE = 5_000


def case_feedback_submit(
    *,
    application: Application,
    case_ref: str,
    manifest: dict[str, Any],
    disposition: str,
    note: str = "",
    actor: Actor,
) -> CaseFeedback:
    """Record a disposition on a case, freezing the case's replay manifest into
    the row. The caller looks the case up and passes its manifest as a value;
    nothing here reads or changes a case, its labels or its gold label."""
    errors: dict[str, str] = {}
    if disposition not in Disposition.values:
        errors["disposition"] = f"choose one of: {', '.join(Disposition.values)}"
    note = (note or "").strip()
    if len(note) > MAX_NOTE:
        errors["note"] = f"at most {MAX_NOTE} characters"
    if not case_ref or len(case_ref) > MAX_ID:
        errors["case_ref"] = "required, at most 200 characters"
    if not isinstance(manifest, dict):
        errors["bound_manifest"] = "the case's replay manifest must be an object"
    if errors:
        raise InvalidInput("The feedback is not valid.", fields=errors)
    with transaction.atomic():
        return CaseFeedback.objects.create(
            application=application,
            case_ref=case_ref,
            disposition=disposition,
            note=note,
            bound_manifest=json.loads(json.dumps(manifest)),  # a detached copy, never a shared reference
            author_kind=AuthorKind.OPERATOR if actor.is_human else AuthorKind.AGENT,
            author_user=actor.user,
            author_token=actor.token,
        )
# --- Exports and data governance ---------------------------------------------
#
# Exports stream from the database into a staged file; the manifest row that
# records exactly which flags the file holds is written before the file
# appears, so an erasure or a purge can always find every file an erased flag
# is in. Erasure and retention delete the flags with their events and reviews
# (the one sanctioned exception to append-only history) and record what they
# did without the erased content.

# `--since-last` re-reads this much before the previous export's watermark: a
# review committing while that export was reading is then never missed (a
# consumer keeps the last line per id).
SINCE_LAST_OVERLAP = timedelta(minutes=2)
PURGE_BATCH = 1000

ErasureHook = Callable[..., int]
_erasure_hooks: list[ErasureHook] = []


def register_erasure_hook(hook: ErasureHook) -> None:
    """Derived stores (the exemplar bank) register `hook(*, application, flag_pks) -> int`
    in their AppConfig.ready(); erasure calls it in its transaction and records
    how many entries it removed."""
    if hook not in _erasure_hooks:
        _erasure_hooks.append(hook)


def export_filters_dict(filters: FlagFilters) -> dict[str, str]:
    """The filters as recorded in a manifest: only those set, dates as ISO days."""
    return {
        name: value.isoformat() if isinstance(value, date) else value
        for name, value in sorted(asdict(filters).items())
        if value
    }


def export_filters_key(filters: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()


def _as_utc(moment: datetime | None) -> str | None:
    return iso_utc(moment) if moment is None else moment.astimezone(UTC).isoformat()


def export_manifest_document(manifest: ExportManifest) -> dict[str, Any]:
    """The manifest as written next to the file and printed by `--json`."""
    return {
        "schema": MANIFEST_SCHEMA,
        "manifest_id": manifest.pk,
        "application_id": manifest.application.slug,
        "kind": manifest.kind,
        "path": manifest.path,
        "file": Path(manifest.path).name if manifest.path else None,
        "format": "jsonl" if manifest.kind != ExportKind.DRAFTS else "yaml",
        "fields": list(EXPORT_FIELDS) if manifest.kind != ExportKind.DRAFTS else None,
        "rows": manifest.row_count,
        "bytes": manifest.byte_count,
        "sha256": manifest.sha256,
        "corpus_version": manifest.corpus_version,
        "filters": manifest.filters,
        "since": _as_utc(manifest.since),
        "watermark": _as_utc(manifest.watermark),
        "generated_at": _as_utc(manifest.generated_at),
        "stale": manifest.is_stale,
    }


def _export_manifest_create(
    *,
    application: Application,
    kind: str,
    path: str,
    filters: dict[str, str],
    tally: ExportTally,
    since: datetime | None,
    watermark: datetime,
    requested_by: AbstractBaseUser | None = None,
    requested_by_token: ApiToken | None = None,
    requested_by_label: str = "",
    sha256: str | None = None,
) -> ExportManifest:
    return ExportManifest.objects.create(
        application=application,
        kind=kind,
        path=path,
        filters=filters,
        filters_key=export_filters_key(filters),
        row_count=tally.rows,
        byte_count=tally.bytes,
        sha256=tally.sha256 if sha256 is None else sha256,
        corpus_version=tally.corpus_version,
        flag_set=encode_id_set(tally.flag_pks),
        since=since,
        watermark=watermark,
        generated_at=timezone.now(),
        requested_by=requested_by,
        requested_by_token=requested_by_token,
        requested_by_label=requested_by_label[:200],
    )


def flags_export_file(
    *,
    application: Application,
    filters: FlagFilters,
    out: Path,
    since_last: bool = False,
    requested_by_label: str = "",
    on_rows: Callable[[int], None] | None = None,
) -> ExportManifest:
    """Export flags as JSONL to `out`, atomically, with its manifest next to it.

    A reader of `out` sees the previous file or the complete new one, never a
    partial file: the rows go to a temporary file in the same directory, the
    manifest row is recorded, then the file is renamed into place. Any failure
    (unwritable path, the database mid-export) leaves nothing at `out`.
    """
    out = check_writable(Path(out))
    filters.validate(application)
    recorded = export_filters_dict(filters)
    since = None
    if since_last:
        previous = export_manifest_previous(
            application=application, kind=ExportKind.FLAGS_FILE, filters_key=export_filters_key(recorded)
        )
        if previous is not None:
            since = previous.watermark - SINCE_LAST_OVERLAP
    watermark = timezone.now()
    tally = ExportTally()
    rows = flag_export_batches(application=application, filters=filters, changed_since=since)
    staged = stage_write(out, jsonl_chunks(rows, tally=tally, on_rows=on_rows))
    try:
        with transaction.atomic():
            manifest = _export_manifest_create(
                application=application, kind=ExportKind.FLAGS_FILE, path=str(out.resolve()),
                filters=recorded, tally=tally, since=since, watermark=watermark,
                requested_by_label=requested_by_label,
            )
    except BaseException:
        staged.discard()
        raise
    try:
        publish(staged, export_manifest_document(manifest))
    except BaseException:
        # No file appeared: the record of it goes too.
        ExportManifest.objects.filter(pk=manifest.pk).delete()
        raise
    return manifest


def flags_download_record(
    *,
    application: Application,
    filters: FlagFilters,
    tally: ExportTally,
    watermark: datetime,
    principal_user: AbstractBaseUser | None,
    principal_token: ApiToken | None,
    label: str,
) -> ExportManifest:
    """Record a streamed download (API or queue button) once it ended, so erasure
    can tell the operator who holds a copy. A download cut short is recorded
    with what was sent and no checksum."""
    with transaction.atomic():
        return _export_manifest_create(
            application=application, kind=ExportKind.FLAGS_DOWNLOAD, path="",
            filters=export_filters_dict(filters), tally=tally, since=None, watermark=watermark,
            requested_by=principal_user, requested_by_token=principal_token, requested_by_label=label,
            sha256=tally.sha256 if tally.finished else "",
        )


def drafts_export(*, application: Application, out_dir: Path, requested_by_label: str = "") -> ExportManifest:
    """Write the three YAML draft files under `out_dir` (never over a file that is
    not one of our drafts) and record which flags they hold.

    As for the JSONL file: the drafts are staged in full, the manifest row is
    recorded, then the files are renamed into place, so a failure leaves the
    previous drafts and no record, and erasure never misses a draft that exists.
    """
    watermark = timezone.now()
    items = list(reviewed_items(application=application))
    contradicted = contradictions(items)
    files = render_drafts(items, application_id=application.slug, contradicted=contradicted)
    staged = stage_drafts(Path(out_dir), files)
    tally = ExportTally()
    for item in items:
        tally.flag_pks.append(item.pk)
        tally._corpus.update(f"{item.flag_id}:{item.decided_at.isoformat()}\n".encode())
    tally.rows = len(items)
    digest = hashlib.sha256()
    for _, text in sorted(files.items()):
        data = text.encode()
        tally.bytes += len(data)
        digest.update(data)
    try:
        with transaction.atomic():
            manifest = _export_manifest_create(
                application=application, kind=ExportKind.DRAFTS, path=str(Path(out_dir).resolve()),
                filters={"files": sorted(files), "contradicted_items": len(contradicted)},
                tally=tally, since=None,
                watermark=watermark, requested_by_label=requested_by_label, sha256=digest.hexdigest(),
            )
    except BaseException:
        discard_drafts(staged)
        raise
    try:
        commit_drafts(staged)
    except BaseException:
        if not any(draft.committed for draft in staged):  # no draft appeared: the record of them goes too
            ExportManifest.objects.filter(pk=manifest.pk).delete()
        raise
    return manifest


def _delete_flags(application: Application, pks: list[int]) -> tuple[int, int, int]:
    """Delete flags with their events and reviews: (flags, events, reviews).

    Events are append-only; retention and erasure are the one sanctioned
    exception (`erase()`), and only for flags that go entirely.
    """
    if not pks:
        return 0, 0, 0
    history_days_forget(application_id=application.pk)
    with history_delete_allowed():  # the database refuses it to anyone else
        events = FlagEvent.objects.filter(application=application, flag_id__in=pks).erase()
        reviews = FlagReview.objects.filter(application=application, flag_id__in=pks).delete()[0]
        flags = Flag.objects.filter(application=application, pk__in=pks).delete()[1].get(Flag._meta.label, 0)
    return flags, events, reviews


def _mark_exports_stale(
    hits: list[tuple[ExportManifest, int]], *, reason: str, now: datetime
) -> list[str]:
    """Mark exports stale (those not already) and describe each file for the operator."""
    fresh = [manifest.pk for manifest, _ in hits if manifest.stale_at is None]
    if fresh:
        ExportManifest.objects.filter(pk__in=fresh).update(stale_at=now, stale_reason=reason[:200])
    # One line per file: a path exported twice (the later run replaced the file) is named once.
    return list(dict.fromkeys(_describe_export(manifest) for manifest, _ in hits))


def _describe_export(manifest: ExportManifest) -> str:
    if manifest.path:
        return manifest.path
    who = manifest.requested_by_label or "unknown"
    return f"download #{manifest.pk} by {who} at {iso_utc(manifest.generated_at)}"


def subject_digest(*, application: Application, kind: str, value: str) -> str:
    """A keyed digest of an erased subject: confirms "was X erased?" without keeping X."""
    message = f"{application.pk}\x1f{kind}\x1f{value}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def subject_erase(
    *, application: Application, session_id: str = "", end_user_ref: str = "", requested_by: str
) -> ErasureRecord:
    """Erase everything the console holds about one subject (a session or an end user).

    In one transaction: removes the subject's flags from derived stores (the
    exemplar bank, via erasure hooks), deletes the flags with their events and
    reviews, marks every export that held them stale and records the erasure
    (who, when, how many, which files) without the erased content.
    """
    errors: dict[str, str] = {}
    given = {k: v for k, v in {"session_id": session_id, "end_user_ref": end_user_ref}.items() if v}
    blank = [kind for kind, value in given.items() if not value.strip()]
    for kind in blank:
        errors[kind] = "must not be blank"
    if len(given) != 1:
        errors["subject"] = "Give exactly one of a session id or an end-user reference."
    if not (requested_by or "").strip():
        errors["requested_by"] = "Say who asked for the erasure."
    if errors:
        # A blank subject would record an erasure of nobody.
        message = f"{blank[0]}: must not be blank." if blank else next(iter(errors.values()))
        raise InvalidInput(message, fields=errors)
    kind, value = next(iter(given.items()))
    now = timezone.now()
    with transaction.atomic():
        subject = Flag.objects.filter(application=application, **{kind: value})
        pks = list(subject.values_list("pk", flat=True))
        earliest = subject.aggregate(earliest=Min("created_at"))["earliest"]
        hits = export_manifests_containing(application=application, flag_pks=pks, earliest_created_at=earliest)
        bank = sum(hook(application=application, flag_pks=pks) for hook in _erasure_hooks) if pks else 0
        flags, events, reviews = _delete_flags(application, pks)
        record = ErasureRecord.objects.create(
            application=application, kind=kind,
            subject_digest=subject_digest(application=application, kind=kind, value=value),
            requested_by=requested_by.strip()[:200], performed_at=now, flags_deleted=flags,
            events_deleted=events, reviews_deleted=reviews, bank_entries_removed=bank,
        )
        record.stale_exports = _mark_exports_stale(hits, reason=f"erasure #{record.pk}", now=now)
        ErasureRecord.objects.filter(pk=record.pk).update(stale_exports=record.stale_exports)
    return record


@dataclass(frozen=True)
class PurgeReport:
    application: Application
    cutoff: datetime
    record: ErasureRecord | None  # None when nothing had expired

    @property
    def flags_deleted(self) -> int:
        return self.record.flags_deleted if self.record else 0


def flags_purge_expired(
    *, requested_by: str = "purge_expired", now: datetime | None = None, batch_size: int = PURGE_BATCH
) -> list[PurgeReport]:
    """Delete every flag older than its application's `retention_days` (blank: kept).

    Works in batches, each in its own transaction (deletions, stale marks), so a
    big first purge never holds a long lock and an interrupted run simply
    continues next time: safe to run from cron as often as you like.
    """
    now = now or timezone.now()
    reports = []
    for application in Application.objects.filter(retention_days__isnull=False).order_by("slug"):
        cutoff = now - timedelta(days=application.retention_days)
        reports.append(_purge_application(application, cutoff=cutoff, now=now, batch_size=batch_size,
                                          requested_by=requested_by))
    return reports


def _purge_application(
    application: Application, *, cutoff: datetime, now: datetime, batch_size: int, requested_by: str
) -> PurgeReport:
    expired = Flag.objects.filter(application=application, created_at__lt=cutoff).order_by("created_at", "id")
    totals = {"flags": 0, "events": 0, "reviews": 0, "bank": 0}
    stale: dict[str, None] = {}
    record = None
    while True:
        with transaction.atomic():
            batch = list(expired.values_list("pk", "created_at")[:batch_size])
            if not batch:
                break
            pks = [pk for pk, _ in batch]
            hits = export_manifests_containing(
                application=application, flag_pks=pks, earliest_created_at=batch[0][1]
            )
            totals["bank"] += sum(hook(application=application, flag_pks=pks) for hook in _erasure_hooks)
            flags, events, reviews = _delete_flags(application, pks)
            totals["flags"] += flags
            totals["events"] += events
            totals["reviews"] += reviews
            if record is None:
                record = ErasureRecord.objects.create(
                    application=application, kind=ErasureKind.RETENTION, cutoff=cutoff,
                    requested_by=requested_by, performed_at=now,
                )
            stale.update(dict.fromkeys(_mark_exports_stale(hits, reason=f"retention purge #{record.pk}", now=now)))
            # The record grows with each batch, in the batch's own transaction.
            ErasureRecord.objects.filter(pk=record.pk).update(
                flags_deleted=totals["flags"], events_deleted=totals["events"],
                reviews_deleted=totals["reviews"], bank_entries_removed=totals["bank"],
                stale_exports=list(stale),
            )
    if record is not None:
        record.refresh_from_db()
    return PurgeReport(application=application, cutoff=cutoff, record=record)
