"""A curator's decisions on flags: review (one at a time, version-checked), bulk
reject and reopen, and the short claims that keep two curators off one flag."""

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from consoles import webhooks
from consoles.errors import Conflict, InvalidInput, PermissionDeniedError
from consoles.models import Application
from consoles.timestamps import iso_utc

from ..models import (
    EventAction,
    Flag,
    FlagReview,
    FlagStatus,
    Region,
    Verdict,
)
from .events import CLAIM_DURATION, NOTE_LIMIT, Actor, _event, _text


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
    correction: str | None = None,
    at: datetime | None = None,
) -> Flag:
    """A curator's decision: approve (axis + verdict), reject, re-open, or label a capture.

    `version` is the version the curator saw; if the flag changed since, a
    Conflict carries the current state and nothing is written. `at` is when it
    was decided (now unless given: the demo data's history is decided in the past).
    `correction` (approving an answer-region flag only) is the answer the
    assistant should have given; each approval sets it anew (empty: none), and
    rejecting or re-opening clears the flag's (its reviews keep theirs).
    """
    if reviewer is None or not getattr(reviewer, "is_authenticated", False):
        raise PermissionDeniedError("Only a human curator reviews flags.", code="human_required")
    application = flag.application
    errors: dict[str, str] = {}
    if status not in _ACTIONS:
        errors["status"] = f"Use one of {', '.join(_ACTIONS)}."
    note = _text(note, "note", errors, limit=NOTE_LIMIT)
    values: dict[str, Any] = {"review_note": note}
    correction = _text(correction, "correction", errors)
    if correction and status != FlagStatus.APPROVED:
        errors["correction"] = "Only an approval carries a correction."
    elif correction and flag.region != Region.ANSWER:
        errors["correction"] = "Only an answer-region flag takes a correction (the answer it should have been)."
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
            correction=correction,
        )
    elif status == FlagStatus.LABELLED:
        if not flag.is_capture:
            errors["status"] = "Only automated captures are labelled; approve or reject a flag."
        elif label not in application.capture_labels:
            errors["label"] = f"Use one of {', '.join(application.capture_labels)}."
        values.update(capture_label=label or "", verdict="")
    else:
        # A correction belongs to an approval: a flag rejected or re-opened carries none
        # (its reviews keep the one given; the approve form offers it again).
        values["correction"] = ""
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
    # Not matched in the update (a long text): `version` already names the state seen.
    old_correction = flag.correction
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
                capture_label=flag.capture_label, note=note, correction=flag.correction, flag_version=flag.version, created_at=now,
                # A clock set back must not make a negative wait (the column refuses it).
                wait_seconds=(None if status == FlagStatus.PENDING
                              else max(0, int((now - flag.created_at).total_seconds()))),
            )
            changes = {name: [before, getattr(flag, name)] for name, before in old.items()
                       if before != getattr(flag, name)}
            if old_correction != flag.correction:
                changes["correction"] = [old_correction, flag.correction]
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
