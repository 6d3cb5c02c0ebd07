"""Export files: the flags' JSONL corpus, downloads and the drafts, each with its manifest."""

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from consoles.errors import InvalidInput
from consoles.files import MANIFEST_SCHEMA, check_writable, publish, stage_write
from consoles.models import ApiToken, Application
from consoles.timestamps import iso_utc

from ..drafts import commit_drafts, contradictions, discard_drafts, render_drafts, stage_drafts
from ..exports import (
    CLASSIFIER,
    EXPORT_FORMATS,
    FORMAT_FIELDS,
    ExportTally,
    encode_id_set,
    entries_diff,
    jsonl_chunks,
    recording_entries,
)
from ..models import (
    DatasetSnapshot,
    ExportKind,
    ExportManifest,
)
from ..selectors import (
    FlagFilters,
    export_manifest_previous,
    flag_export_batches,
    reviewed_items,
)

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


def export_filters_dict(filters: FlagFilters) -> dict[str, str]:
    """The filters as recorded in a manifest: only those set, dates as ISO days."""
    return {
        name: value.isoformat() if isinstance(value, date) else value
        for name, value in sorted(asdict(filters).items())
        if value
    }


def export_filters_key(filters: dict[str, str], export_format: str = CLASSIFIER) -> str:
    """The series key: the filters, and the format unless it is the classifier's
    (so the classifier series of older exports continues unchanged)."""
    keyed = filters if export_format == CLASSIFIER else {**filters, "format": export_format}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()


def export_format_check(value: str | None) -> str:
    """The export format asked for (classifier when not given); InvalidInput naming `format`."""
    if value in (None, ""):
        return CLASSIFIER
    if value not in EXPORT_FORMATS:
        raise InvalidInput(f"Unknown export format {value!r}; use one of {', '.join(EXPORT_FORMATS)}.",
                           fields={"format": f"use one of {', '.join(EXPORT_FORMATS)}"})
    return value


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
        "export_format": manifest.export_format if manifest.kind != ExportKind.DRAFTS else None,
        "fields": list(FORMAT_FIELDS[manifest.export_format]) if manifest.kind != ExportKind.DRAFTS else None,
        "rows": manifest.row_count,
        "left_out": manifest.left_out,
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
    export_format: str = CLASSIFIER,
) -> ExportManifest:
    return ExportManifest.objects.create(
        application=application,
        kind=kind,
        path=path,
        filters=filters,
        filters_key=export_filters_key(filters, export_format),
        export_format=export_format,
        row_count=tally.rows,
        left_out=tally.left_out,
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
    export_format: str = CLASSIFIER,
    snapshot_name: str = "",
) -> ExportManifest:
    """Export flags as JSONL to `out`, atomically, with its manifest next to it.

    `export_format` is the lines' shape (`feedback.exports.EXPORT_FORMATS`); the
    manifest names it and counts the flags it left out. With `snapshot_name`,
    the file is also recorded as that named dataset snapshot (in the manifest's
    transaction: both or neither).

    A reader of `out` sees the previous file or the complete new one, never a
    partial file: the rows go to a temporary file in the same directory, the
    manifest row is recorded, then the file is renamed into place. Any failure
    (unwritable path, the database mid-export) leaves nothing at `out`.
    """
    export_format = export_format_check(export_format)
    if snapshot_name:
        snapshot_name = snapshot_name_check(application=application, name=snapshot_name)
        if since_last:
            raise InvalidInput("A snapshot holds the whole set, not the changes since the last export.",
                               fields={"since_last": "not with a snapshot"})
    out = check_writable(Path(out))
    filters.validate(application)
    recorded = export_filters_dict(filters)
    since = None
    if since_last:
        previous = export_manifest_previous(
            application=application, kind=ExportKind.FLAGS_FILE,
            filters_key=export_filters_key(recorded, export_format),
        )
        if previous is not None:
            since = previous.watermark - SINCE_LAST_OVERLAP
    watermark = timezone.now()
    tally = ExportTally()
    rows = flag_export_batches(application=application, filters=filters, changed_since=since,
                               export_format=export_format, tally=tally)
    entries: list[list[str]] = []
    if snapshot_name:
        rows = recording_entries(rows, entries)
    staged = stage_write(out, jsonl_chunks(rows, tally=tally, on_rows=on_rows))
    try:
        with transaction.atomic():
            manifest = _export_manifest_create(
                application=application, kind=ExportKind.FLAGS_FILE, path=str(out.resolve()),
                filters=recorded, tally=tally, since=since, watermark=watermark,
                requested_by_label=requested_by_label, export_format=export_format,
            )
            if snapshot_name:
                _snapshot_record(application=application, name=snapshot_name, manifest=manifest,
                                 entries=entries, created_by_label=requested_by_label)
    except BaseException:
        staged.discard()
        raise
    try:
        publish(staged, export_manifest_document(manifest))
    except BaseException:
        # No file appeared: the record of it goes too.
        DatasetSnapshot.objects.filter(manifest=manifest).delete()
        ExportManifest.objects.filter(pk=manifest.pk).delete()
        raise
    return manifest


SNAPSHOT_NAME_LIMIT = 100


def snapshot_name_check(*, application: Application, name: str) -> str:
    """A snapshot's name as given: not blank, at most 100 characters, not taken in
    this application. InvalidInput naming `name` otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("Name the snapshot.", fields={"name": "required"})
    name = name.strip()
    if len(name) > SNAPSHOT_NAME_LIMIT or "\x00" in name:
        raise InvalidInput(f"A snapshot's name is at most {SNAPSHOT_NAME_LIMIT} characters.",
                           fields={"name": f"at most {SNAPSHOT_NAME_LIMIT} characters"})
    if DatasetSnapshot.objects.filter(application=application, name=name).exists():
        raise InvalidInput(f"This application already has a snapshot named {name!r}; snapshots never change, "
                           "so give the new one a new name.", fields={"name": "already taken"})
    return name


def _snapshot_record(
    *,
    application: Application,
    name: str,
    manifest: ExportManifest,
    entries: list[list[str]],
    created_by: AbstractBaseUser | None = None,
    created_by_label: str = "",
) -> DatasetSnapshot:
    """The snapshot row of a finished export (in the caller's transaction), with its
    difference from the application's latest snapshot of the same format."""
    previous = (DatasetSnapshot.objects.filter(application=application, export_format=manifest.export_format)
                .order_by("-created_at", "-id").only("pk", "entries").first())
    diff = asdict(entries_diff(previous.entries, entries)) if previous is not None else None
    return DatasetSnapshot.objects.create(
        application=application, name=name, export_format=manifest.export_format, filters=manifest.filters,
        row_count=manifest.row_count, sha256=manifest.sha256, entries=entries, manifest=manifest,
        created_at=manifest.generated_at, created_by=created_by, created_by_label=created_by_label[:200],
        previous=previous, diff=diff,
    )


def dataset_snapshot_create(
    *,
    application: Application,
    name: str,
    filters: FlagFilters,
    export_format: str = CLASSIFIER,
    created_by: AbstractBaseUser | None = None,
) -> DatasetSnapshot:
    """Record a named snapshot of the export these filters and format give now,
    without writing a file (the screen's *Snapshot* button): its lines are read
    once, hashed, and can be downloaded again byte for byte later."""
    export_format = export_format_check(export_format)
    name = snapshot_name_check(application=application, name=name)
    filters.validate(application)
    watermark = timezone.now()
    tally = ExportTally()
    entries: list[list[str]] = []
    batches = flag_export_batches(application=application, filters=filters, export_format=export_format,
                                  tally=tally)
    for _chunk in jsonl_chunks(recording_entries(batches, entries), tally=tally):
        pass
    label = f"snapshot {name} by {created_by.get_username()}" if created_by is not None else f"snapshot {name}"
    with transaction.atomic():
        manifest = _export_manifest_create(
            application=application, kind=ExportKind.SNAPSHOT, path="", filters=export_filters_dict(filters),
            tally=tally, since=None, watermark=watermark, requested_by=created_by, requested_by_label=label,
            export_format=export_format,
        )
        return _snapshot_record(application=application, name=name, manifest=manifest, entries=entries,
                                created_by=created_by, created_by_label=label)


def flags_download_record(
    *,
    application: Application,
    filters: FlagFilters,
    tally: ExportTally,
    watermark: datetime,
    principal_user: AbstractBaseUser | None,
    principal_token: ApiToken | None,
    label: str,
    export_format: str = CLASSIFIER,
) -> ExportManifest:
    """Record a streamed download (API or queue button) once it ended, so erasure
    can tell the operator who holds a copy. A download cut short is recorded
    with what was sent and no checksum."""
    with transaction.atomic():
        return _export_manifest_create(
            application=application, kind=ExportKind.FLAGS_DOWNLOAD, path="",
            filters=export_filters_dict(filters), tally=tally, since=None, watermark=watermark,
            requested_by=principal_user, requested_by_token=principal_token, requested_by_label=label,
            sha256=tally.sha256 if tally.finished else "", export_format=export_format,
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
