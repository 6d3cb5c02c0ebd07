"""Overview aggregates over the flags' history."""

from dataclasses import dataclass
from datetime import date

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Count
from django.utils import timezone

from consoles.dbfunctions import UtcDay, as_date, day_bounds
from consoles.models import Application

from ..history import history_days
from ..models import (
    AuthorKind,
    Flag,
)

# Per-day sums of the history: ended days are summed once and kept, today is
# summed live (feedback.history); only per-day rows come back to Python.


@dataclass(frozen=True)
class DelayQuantiles:
    """Seconds from a flag's creation to a decision on it, over some decisions."""

    count: int
    quantiles: dict[float, float]  # q -> seconds (as percentile_cont: linear interpolation)


@dataclass(frozen=True)
class DecisionDelays:
    overall: DelayQuantiles
    by_day: dict[date, DelayQuantiles]


def flag_count_in_status(*, application: Application, status: str) -> int:
    """Flags of the application in `status` now (a range of the (application, status, …) index)."""
    return Flag.objects.filter(application=application, status=status).count()


def flag_transitions_by_day(*, application: Application, since: date) -> list[tuple[date, str, str, int]]:
    """(day, from_status, to_status, count) of every flag transition from the UTC day `since` on.

    Replayed backwards from a current count, these give the flags in a status
    at the end of any day (the events are the append-only history).
    """
    last = timezone.now().date()
    days = history_days(application=application, first=since, last=last, columns=["transitions"])
    return [(day, a, b, n) for day, sums in days.items() for a, b, n in sums.transitions]


def flag_decisions_by_day(*, application: Application, first: date, last: date) -> list[tuple[date, str, int]]:
    """(day, reviewer username, decisions) for approvals, rejections and labels on UTC days first..last."""
    days = history_days(application=application, first=first, last=last, columns=["decisions"])
    reviewer_ids = {reviewer for sums in days.values() for reviewer, _ in sums.decisions}
    names = dict(get_user_model().objects.filter(pk__in=reviewer_ids).values_list("pk", "username"))
    return [(day, names.get(reviewer, "?"), n) for day, sums in days.items() for reviewer, n in sums.decisions]


def flag_approvals_by_axis_verdict(*, application: Application, first: date, last: date) -> list[tuple[str, str, int]]:
    """(axis, verdict, approvals) for the approvals decided on UTC days first..last."""
    totals: dict[tuple[str, str], int] = {}
    for sums in history_days(application=application, first=first, last=last, columns=["approvals"]).values():
        for axis, verdict, n in sums.approvals:
            totals[axis, verdict] = totals.get((axis, verdict), 0) + n
    return [(axis, verdict, n) for (axis, verdict), n in sorted(totals.items())]


def capture_volume_by_day(*, application: Application, first: date, last: date) -> list[tuple[date, str, str, int]]:
    """(day, status, capture label, count) of the automated captures created on UTC days first..last.

    Grouped by each capture's current status, which changes after its day has
    ended, so this one is aggregated live (captures are a small share of flags).
    """
    start, end = day_bounds(first, last)
    rows = (
        Flag.objects.filter(
            application=application, author_kind=AuthorKind.AGENT, created_at__gte=start, created_at__lt=end
        )
        .annotate(day=UtcDay("created_at"))
        .values("day", "status", "capture_label")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(as_date(r["day"]), r["status"], r["capture_label"], r["n"]) for r in rows]


def flag_decision_delays(
    *, application: Application, first: date, last: date, quantiles: tuple[float, ...] = (0.5, 0.9)
) -> DecisionDelays:
    """Quantiles of the time from a flag's creation to each decision on it on UTC
    days first..last, per day of decision and over the whole range.

    Each decision keeps its wait (`FlagReview.wait_seconds`); each day's waits
    come sorted from the day's sums, so a day's quantiles are read at their
    ranks and the range's come from one merge of the days. Linear interpolation
    between the closest ranks, exactly as PostgreSQL's percentile_cont (a test
    holds both to a reference).
    """
    for q in quantiles:
        if not 0 <= q <= 1:
            raise ValueError(f"quantile {q} is outside [0, 1]")
    days = history_days(application=application, first=first, last=last, columns=["waits"])
    by_day = {day: _quantiles(sums.waits, quantiles) for day, sums in days.items() if len(sums.waits)}
    waits = [sums.waits for sums in days.values() if len(sums.waits)]
    if not waits:
        return DecisionDelays(overall=DelayQuantiles(count=0, quantiles={}), by_day={})
    overall = np.sort(np.concatenate(waits), kind="stable")
    return DecisionDelays(overall=_quantiles(overall, quantiles), by_day=by_day)


def _quantiles(ordered: np.ndarray, quantiles: tuple[float, ...]) -> DelayQuantiles:
    n = len(ordered)
    values = {}
    for q in quantiles:
        position = q * (n - 1)
        low = int(position)
        high = min(low + 1, n - 1)
        values[q] = float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))
    return DelayQuantiles(count=n, quantiles=values)
