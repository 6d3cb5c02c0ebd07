"""Reads of dataset snapshots: the list with each one's difference from the
previous snapshot of its format, one snapshot, and whether its file can still
be produced byte for byte from the current data."""

from dataclasses import dataclass, field
from datetime import date

from consoles.errors import NotFound
from consoles.models import Application

from ..exports import EntriesDiff, ExportTally, entries_diff, jsonl_chunks, recording_entries
from ..models import DatasetSnapshot, ErasureRecord, Flag
from .exports import flag_export_batches
from .flags import FlagFilters

_DAYS = ("created_from", "created_to")


@dataclass(frozen=True)
class SnapshotRow:
    snapshot: DatasetSnapshot
    previous: DatasetSnapshot | None
    diff: EntriesDiff | None  # None for the first snapshot of its format


@dataclass
class SnapshotCheck:
    """A snapshot read again from the current data, restricted to the flags it holds."""

    snapshot: DatasetSnapshot
    sha256: str
    # Flags of the snapshot that no longer exist: only erasure and purge delete flags.
    erased: list[str] = field(default_factory=list)
    # Flags still there that the filters no longer select (reviewed again since).
    no_longer_selected: list[str] = field(default_factory=list)
    # Flags whose line is different now (a later review changed what they say).
    changed: list[str] = field(default_factory=list)
    erasures: list[ErasureRecord] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return self.sha256 == self.snapshot.sha256


def snapshot_filters(snapshot: DatasetSnapshot) -> FlagFilters:
    """The filters a snapshot was taken with, as the export reads them."""
    values = {name: value for name, value in snapshot.filters.items() if name in FlagFilters.__dataclass_fields__}
    for name in _DAYS:
        if values.get(name):
            values[name] = date.fromisoformat(values[name])
    return FlagFilters(**values)


def dataset_snapshot_list(*, application: Application) -> list[SnapshotRow]:
    """The application's snapshots, newest first, each with its difference from the
    previous snapshot of the same format (lines of two formats never compare), as
    it was taken when the snapshot was recorded: one query, which reads no entries."""
    snapshots = (DatasetSnapshot.objects.filter(application=application)
                 .select_related("previous", "manifest")
                 .defer("entries", "previous__entries", "manifest__flag_set")
                 .order_by("-created_at", "-id"))
    return [SnapshotRow(snapshot=snapshot, previous=snapshot.previous,
                        diff=EntriesDiff(**snapshot.diff) if snapshot.diff is not None else None)
            for snapshot in snapshots]


def dataset_snapshot_get(*, application: Application, name: str) -> DatasetSnapshot:
    """One snapshot of the application (another tenant's is not found, like a missing one)."""
    snapshot = DatasetSnapshot.objects.filter(application=application, name=name).select_related("manifest").first()
    if snapshot is None:
        raise NotFound("No such snapshot.", fields={"name": "not found"})
    return snapshot


def dataset_snapshot_batches(*, snapshot: DatasetSnapshot, tally: ExportTally | None = None):
    """The snapshot's lines as the current data gives them (only the flags it holds)."""
    ids = {public_id for public_id, _ in snapshot.entries}
    return flag_export_batches(application=snapshot.application, filters=snapshot_filters(snapshot),
                               export_format=snapshot.export_format, tally=tally, only_public_ids=ids)


def dataset_snapshot_check(*, snapshot: DatasetSnapshot) -> SnapshotCheck:
    """Read the snapshot again and say what, if anything, changed since it was taken."""
    tally = ExportTally()
    entries: list[list[str]] = []
    for _chunk in jsonl_chunks(recording_entries(dataset_snapshot_batches(snapshot=snapshot, tally=tally),
                                                 entries), tally=tally):
        pass
    check = SnapshotCheck(snapshot=snapshot, sha256=tally.sha256)
    if check.intact:
        return check
    diff = entries_diff(snapshot.entries, entries)
    missing = diff.removed
    existing: set[str] = set()
    for start in range(0, len(missing), 1000):
        existing.update(Flag.objects.filter(application=snapshot.application,
                                            public_id__in=missing[start:start + 1000])
                        .values_list("public_id", flat=True))
    check.erased = [pid for pid in missing if pid not in existing]
    check.no_longer_selected = [pid for pid in missing if pid in existing]
    check.changed = diff.changed
    if check.erased:
        check.erasures = list(ErasureRecord.objects.filter(
            application=snapshot.application, performed_at__gte=snapshot.created_at).order_by("performed_at", "id"))
    return check
