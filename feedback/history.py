"""Per-day aggregates of the flag history, each ended day summed once and kept.

The overview reads a range of days of transitions (events), decisions,
approvals and decision waits (reviews). At a million flags the last 30 days
hold about 230,000 such rows, and aggregating them again on every view kept
the page over its 200 ms budget however the indexes were laid out.

The history is append-only and written when it happens, so a UTC day that has
ended does not change: its aggregates are computed in the database on first
read, stored as one `HistoryDay` row, and read back from then on. Only today
(and nothing after it) is aggregated live, over one day of the same indexes.

An ended day changes only when history is deleted (erasure, retention purge)
or written with a past time (an import's `at`, the demo's clock). Those call
`history_days_forget`, which bumps the application's epoch and drops its rows
in the writer's transaction. Rows carry the epoch they were computed under and
readers use only the current epoch's, so a reader that was summing while an
erasure committed can still write its row, but nobody reads it.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import numpy as np
from django.db import connection, transaction
from django.db.models import CharField, Count, F, StringAgg, Subquery, Value
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from consoles.dbfunctions import UtcDay, as_date, day_bounds, day_start
from consoles.models import Application

from .models import FlagEvent, FlagReview, FlagStatus, HistoryDay, HistoryEpoch

DECIDED_STATUSES = (FlagStatus.APPROVED, FlagStatus.REJECTED, FlagStatus.LABELLED)
# A day is stored once it ended this long ago: a write that began before
# midnight and commits just after it is not missed.
STORE_AFTER = timedelta(minutes=10)
WAIT_DTYPE = np.dtype("<i8")
COLUMNS = ("transitions", "decisions", "approvals", "waits")


@dataclass
class DaySums:
    """What one UTC day of an application's history adds up to."""

    transitions: list[tuple[str, str, int]] = field(default_factory=list)  # (from, to, count)
    decisions: list[tuple[int, int]] = field(default_factory=list)  # (reviewer id, decisions)
    approvals: list[tuple[str, str, int]] = field(default_factory=list)  # (axis, verdict, approvals)
    waits: np.ndarray = field(default_factory=lambda: np.empty(0, WAIT_DTYPE))  # seconds, ascending


def history_days_forget(*, application_id: int) -> None:
    """Drop the stored days of an application; call it in the transaction that
    deletes history or writes it with a past time."""
    if not HistoryEpoch.objects.filter(application_id=application_id).update(epoch=F("epoch") + 1):
        epoch, created = HistoryEpoch.objects.get_or_create(application_id=application_id, defaults={"epoch": 1})
        if not created:  # made meanwhile by another writer: still move on from what it saw
            HistoryEpoch.objects.filter(application_id=application_id).update(epoch=F("epoch") + 1)
    HistoryDay.objects.filter(application_id=application_id).delete()


def _first_live_day(now: datetime) -> date:
    """Days before this one are stored; this one and later are summed live."""
    return (now - STORE_AFTER).date()


def history_dated_past(at: datetime) -> bool:
    """Whether a history row dated `at` falls on a day that may be stored already."""
    # The wall clock, not timezone.now(): the demo's clock moves the latter back.
    return at < day_start(_first_live_day(datetime.now(UTC)))


def history_written(*, application_id: int, at: datetime) -> None:
    """Called, in the writer's transaction, for every history row written: one
    dated on a stored day changes it."""
    if history_dated_past(at):
        history_days_forget(application_id=application_id)


def history_days(
    *, application: Application, first: date, last: date, columns: Iterable[str] = COLUMNS
) -> dict[date, DaySums]:
    """The sums of every UTC day first..last that has data, ended days from the
    store (computing and storing the missing ones) and today live."""
    columns = tuple(columns)
    now = timezone.now()
    live = _first_live_day(now)
    sums: dict[date, DaySums] = {}
    if first < live:
        sums.update(_ended_days(application, first, min(last, live - timedelta(days=1)), columns))
    live_first, live_last = max(first, live), min(last, now.date())
    if live_first <= live_last:
        sums.update(_compute(application, live_first, live_last, columns))
    return {day: s for day, s in sorted(sums.items()) if _has_data(s)}


def history_days_sum(*, application: Application, days: int) -> tuple[int, int]:
    """Sum and store the ended days among the last `days` UTC days (cron runs it
    after midnight, so no lead's first view of the day waits for them).
    Returns (days summed now, days that were stored already)."""
    live = _first_live_day(timezone.now())
    first, last = live - timedelta(days=days), live - timedelta(days=1)
    current = _current_epoch(application)
    before = HistoryDay.objects.filter(application=application, epoch=current, day__gte=first, day__lte=last).count()
    _ended_days(application, first, last, columns=("transitions",))
    return days - before, before


def _current_epoch(application: Application) -> int:
    return HistoryEpoch.objects.filter(application=application).values_list("epoch", flat=True).first() or 0


def _has_data(sums: DaySums) -> bool:
    return bool(sums.transitions or sums.decisions or sums.approvals or len(sums.waits))


def _ended_days(application: Application, first: date, last: date, columns: tuple[str, ...]) -> dict[date, DaySums]:
    current = Coalesce(
        Subquery(HistoryEpoch.objects.filter(application=application).values("epoch")[:1]), Value(0)
    )
    stored = HistoryDay.objects.filter(application=application, epoch=current, day__gte=first, day__lte=last)
    sums = {row["day"]: _from_row(row) for row in stored.values("day", *columns)}
    missing = [day for day in _days(first, last) if day not in sums]
    if missing:
        # Read before summing: if an erasure commits meanwhile, these rows carry
        # the epoch it left behind, and are never read.
        epoch = _current_epoch(application)
        computed = _compute(application, missing[0], missing[-1], COLUMNS)
        now = timezone.now()
        rows = []
        for day in missing:
            day_sums = computed.get(day, DaySums())
            sums[day] = day_sums
            rows.append(HistoryDay(
                application=application, day=day, epoch=epoch, computed_at=now,
                transitions=[list(t) for t in day_sums.transitions],
                decisions=[list(d) for d in day_sums.decisions],
                approvals=[list(a) for a in day_sums.approvals],
                waits=_pack_waits(day_sums.waits),
            ))
        _store(rows)
    return sums


def _store(rows: list[HistoryDay]) -> None:
    own_transaction = not connection.in_atomic_block
    with transaction.atomic():
        if own_transaction and connection.vendor == "postgresql":
            # Derived data, summed again if lost: not worth waiting for the WAL
            # flush (most of the first view's time on PostgreSQL otherwise).
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        # Another viewer may have stored the same days meanwhile: theirs are the same sums.
        HistoryDay.objects.bulk_create(rows, batch_size=200, ignore_conflicts=True)


def _from_row(row: dict) -> DaySums:
    sums = DaySums()
    if "transitions" in row:
        sums.transitions = [tuple(t) for t in row["transitions"]]
    if "decisions" in row:
        sums.decisions = [tuple(d) for d in row["decisions"]]
    if "approvals" in row:
        sums.approvals = [tuple(a) for a in row["approvals"]]
    if "waits" in row:
        sums.waits = _unpack_waits(bytes(row["waits"]))
    return sums


def _pack_waits(waits: np.ndarray) -> bytes:
    """One byte of width, then the waits as unsigned little-endian integers of
    that width: 4 bytes hold 136 years. Half of int64, and PostgreSQL stores
    (and compresses) the narrower value about ten times faster."""
    if not len(waits):
        return b""
    width = 4 if int(waits.max()) <= 0xFFFFFFFF else 8
    return bytes([width]) + waits.astype(f"<u{width}").tobytes()


def _unpack_waits(blob: bytes) -> np.ndarray:
    if not blob:
        return np.empty(0, WAIT_DTYPE)
    return np.frombuffer(blob, dtype=f"<u{blob[0]}", offset=1).astype(WAIT_DTYPE)


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def _compute(application: Application, first: date, last: date, columns: tuple[str, ...]) -> dict[date, DaySums]:
    """Each day's sums (of `columns`), aggregated in the database over indexes that
    start with (application, UTC day): the rows arrive grouped (and the waits in order)."""
    sums: dict[date, DaySums] = {}

    def day_of(value) -> DaySums:
        return sums.setdefault(as_date(value), DaySums())

    reviews = FlagReview.objects.annotate(day=UtcDay("created_at")).filter(
        application=application, day__gte=first, day__lte=last
    )

    if "transitions" in columns:
        events = (
            FlagEvent.objects.annotate(day=UtcDay("created_at"))
            .filter(application=application, day__gte=first, day__lte=last)
            .values_list("day", "from_status", "to_status")
            .annotate(n=Count("*"))
            .order_by()
        )
        for day, from_status, to_status, n in events:
            day_of(day).transitions.append((from_status, to_status, n))
    if "decisions" in columns:
        decided = reviews.filter(to_status__in=DECIDED_STATUSES).values_list("day", "reviewer_id")
        for day, reviewer_id, n in decided.annotate(n=Count("*")).order_by():
            day_of(day).decisions.append((reviewer_id, n))
    if "approvals" in columns:
        # By time, not by day: the (application, to_status, created_at, axis, verdict) index covers it.
        start, end = day_bounds(first, last)
        approved = (
            FlagReview.objects.filter(
                application=application, to_status=FlagStatus.APPROVED, created_at__gte=start, created_at__lt=end
            )
            .annotate(day=UtcDay("created_at"))
            .values_list("day", "axis", "verdict")
        )
        for day, axis, verdict, n in approved.annotate(n=Count("*")).order_by():
            day_of(day).approvals.append((axis, verdict, n))
    if "waits" in columns:
        # One text per day ("3600,120,…"), parsed in C and sorted by numpy: rows
        # by the ten thousand through the ORM cost several times the query.
        # Only decisions carry a wait (a re-opening has none): the partial index's condition.
        waits = (
            reviews.filter(wait_seconds__isnull=False)
            .values_list("day")
            .annotate(waits=StringAgg(Cast("wait_seconds", CharField()), delimiter=Value(",")))
            .order_by()
        )
        for day, text in waits:
            day_of(day).waits = np.sort(np.fromstring(text, dtype=WAIT_DTYPE, sep=","))
    return sums
