"""Reads for exports and data governance: the export stream, manifests, erasure records."""

from collections.abc import Iterable, Iterator, Set
from contextlib import closing, nullcontext
from datetime import datetime

from django.db import connection, transaction
from django.db.models import OuterRef, QuerySet, Subquery

from consoles.models import Application

from ..drafts import ReviewedItem
from ..exports import (
    CLASSIFIER,
    FORMAT_RECORDS,
    ExportTally,
    encoded_batches,
    id_set_intersection,
)
from ..models import (
    ErasureRecord,
    ExportManifest,
    Flag,
    FlagReview,
    FlagStatus,
)
from .flags import FlagFilters, flag_list

EXPORT_CHUNK_SIZE = 5000


def flag_export_queryset(
    *, application: Application, filters: FlagFilters, changed_since: datetime | None = None
) -> QuerySet[Flag]:
    """The flags an export holds, oldest first (the (application, status,
    created_at, id) index serves filter and order: rows stream without a sort).

    Approved flags are exported only with their resolved axis; `changed_since`
    keeps rows written after that moment (an incremental export).
    """
    filters.validate(application)
    qs = flag_list(application=application, filters=filters)
    if filters.status == FlagStatus.APPROVED:
        qs = qs.exclude(axis="")
    if changed_since is not None:
        qs = qs.filter(updated_at__gt=changed_since)
    return qs.order_by("created_at", "id")


def flag_export_batches(
    *,
    application: Application,
    filters: FlagFilters,
    changed_since: datetime | None = None,
    chunk_size: int = EXPORT_CHUNK_SIZE,
    export_format: str = CLASSIFIER,
    tally: ExportTally | None = None,
    only_public_ids: Set[str] | None = None,
) -> Iterator[list[tuple[int, str, int, bytes]]]:
    """Batches of `(pk, public_id, version, json_line)` per exported flag, oldest first.

    `export_format` is one of `feedback.exports.EXPORT_FORMATS`; the flags it
    leaves out (nothing to train on) are counted in `tally.left_out`.
    `only_public_ids` keeps just those flags (a snapshot read again).

    Plain ORM rows (`values_list(...).iterator()`: a chunked cursor on SQLite,
    a server-side cursor on PostgreSQL), encoded by `feedback.exports` with
    orjson. Rows arrive `chunk_size` at a time, so memory stays flat in the
    number of rows. (Issue 29's 2x rule: the database building the JSON itself,
    `bench/export_sql.py`, was measured beside this and was not twice as fast.)
    """
    columns, _record = FORMAT_RECORDS[export_format]
    qs = flag_export_queryset(application=application, filters=filters, changed_since=changed_since)
    # PostgreSQL: in autocommit Django declares the server-side cursor WITH HOLD,
    # and the server then materialises the whole result before the first row; in
    # a transaction it streams (one snapshot, too). SQLite reads its WAL snapshot
    # without one: an (IMMEDIATE) transaction would block every writer meanwhile.
    reading = transaction.atomic() if connection.vendor == "postgresql" else nullcontext()
    # The cursor closes before the transaction ends, also when the consumer stops
    # early (a download cut short): closed after, it would fail the connection.
    with reading, closing(qs.values_list(*columns).iterator(chunk_size=chunk_size)) as rows:
        if only_public_ids is not None:
            rows = (row for row in rows if row[1] in only_public_ids)
        yield from encoded_batches(rows, application_id=application.slug, batch_size=chunk_size,
                                   export_format=export_format, tally=tally)


def reviewed_items(*, application: Application) -> Iterator[ReviewedItem]:
    """Approved flags and labelled captures with their deciding review (for the YAML drafts).

    The reviewer and the decision time come from the newest review that moved
    the flag to its current status, fetched in the same query (no N+1).
    """
    deciding = FlagReview.objects.filter(flag=OuterRef("pk"), to_status=OuterRef("status")).order_by(
        "-created_at", "-id"
    )
    rows = (
        Flag.objects.filter(application=application, status__in=[FlagStatus.APPROVED, FlagStatus.LABELLED])
        .annotate(
            reviewer_name=Subquery(deciding.values("reviewer__username")[:1]),
            decided_at=Subquery(deciding.values("created_at")[:1]),
        )
        .filter(decided_at__isnull=False)
        .order_by("created_at", "id")
        .values_list(
            "pk", "public_id", "capture_reason", "region", "problem", "prompt", "context", "answer",
            "note", "reviewer_name", "decided_at", "axis", "verdict", "capture_label", "detector_scores",
        )
    )
    for (pk, public_id, capture_reason, region, problem, prompt, context, answer, note, reviewer,
         decided_at, axis, verdict, capture_label, scores) in rows.iterator(chunk_size=EXPORT_CHUNK_SIZE):
        if isinstance(decided_at, str):  # a Subquery over SQLite may hand back the raw text
            decided_at = datetime.fromisoformat(decided_at)
        yield ReviewedItem(
            flag_id=public_id,
            pk=pk,
            is_capture=bool(capture_reason),
            region=region,
            problem=problem,
            prompt=prompt,
            context=context,
            answer=answer,
            note=note,
            reviewer=reviewer,
            decided_at=decided_at,
            axis=axis or None,
            verdict=verdict or None,
            capture_reason=capture_reason or None,
            capture_label=capture_label or None,
            detector_scores=scores or {},
        )


def export_manifest_previous(
    *, application: Application, kind: str, filters_key: str
) -> ExportManifest | None:
    """The newest export of the same series (same application, kind and filters)."""
    return (
        ExportManifest.objects.filter(application=application, kind=kind, filters_key=filters_key)
        .defer("flag_set")
        .order_by("-generated_at", "-id")
        .first()
    )


def export_manifest_list(*, application: Application) -> QuerySet[ExportManifest]:
    return ExportManifest.objects.filter(application=application).defer("flag_set").order_by(
        "-generated_at", "-id"
    )


def export_manifests_containing(
    *, application: Application, flag_pks: Iterable[int], earliest_created_at: datetime | None = None
) -> list[tuple[ExportManifest, int]]:
    """Every export of the application that held any of `flag_pks`, with how many.

    An export generated before the oldest of these flags existed cannot hold
    it, so `earliest_created_at` narrows the scan.
    """
    pks = set(flag_pks)
    if not pks:
        return []
    qs = ExportManifest.objects.filter(application=application).order_by("generated_at", "id")
    if earliest_created_at is not None:
        qs = qs.filter(generated_at__gte=earliest_created_at)
    found = []
    for manifest in qs.iterator(chunk_size=50):
        hits = id_set_intersection(manifest.flag_set, pks)
        if hits:
            found.append((manifest, len(hits)))
    return found


def erasure_record_list(*, application: Application) -> QuerySet[ErasureRecord]:
    return ErasureRecord.objects.filter(application=application).order_by("-performed_at", "-id")
