"""Erasure of a subject and retention purges: the one sanctioned deletion of history."""

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from consoles.appendonly import history_delete_allowed
from consoles.errors import InvalidInput
from consoles.models import Application
from consoles.timestamps import iso_utc

from ..history import history_days_forget
from ..models import (
    ErasureKind,
    ErasureRecord,
    ExportKind,
    ExportManifest,
    Flag,
    FlagEvent,
    FlagReview,
)
from ..selectors import (
    export_manifests_containing,
)

PURGE_BATCH = 1000

ErasureHook = Callable[..., int]
_erasure_hooks: list[ErasureHook] = []


def register_erasure_hook(hook: ErasureHook) -> None:
    """Derived stores (the exemplar bank) register `hook(*, application, flag_pks) -> int`
    in their AppConfig.ready(); erasure calls it in its transaction and records
    how many entries it removed."""
    if hook not in _erasure_hooks:
        _erasure_hooks.append(hook)


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
    if manifest.kind == ExportKind.SNAPSHOT:
        return f"dataset snapshot #{manifest.pk} ({manifest.requested_by_label or 'unnamed'})"
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
