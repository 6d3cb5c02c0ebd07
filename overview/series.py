"""Small per-day series combined in Python from the database's per-day rows.

Pure functions (no ORM): the selectors of each app aggregate in the database;
what arrives here is one row per day (and group), never one per flag.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date, timedelta


def days_between(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def status_levels(
    *,
    counts_now: dict[str, int],
    transitions: Iterable[tuple[date, str, str, int]],
    days: Sequence[date],
    statuses: Sequence[str],
) -> dict[str, list[int]]:
    """How many flags were in each status at the end of each of `days`.

    `counts_now` is the current count per status; `transitions` are
    (day, from_status, to_status, count) for every transition since the first
    of `days` (to today). Walking back from now, the level at the end of day D
    is the level now minus the net change of every later day.
    """
    delta: dict[date, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for day, from_status, to_status, n in transitions:
        delta[day][to_status] += n
        if from_status:
            delta[day][from_status] -= n
    later = sorted(delta, reverse=True)
    level = {status: counts_now.get(status, 0) for status in statuses}
    levels: dict[str, list[int]] = {status: [0] * len(days) for status in statuses}
    cursor = 0
    for index in range(len(days) - 1, -1, -1):
        day = days[index]
        while cursor < len(later) and later[cursor] > day:
            for status in statuses:
                level[status] -= delta[later[cursor]].get(status, 0)
            cursor += 1
        for status in statuses:
            levels[status][index] = level[status]
    return levels


def grid(
    rows: Iterable[tuple[date, str, int]], days: Sequence[date], keys: Sequence[str] | None = None
) -> tuple[list[str], dict[str, list[int]]]:
    """(day, key, count) rows as one list of counts per key over `days` (missing days are 0).
    Keys keep the order given, then any others in sorted order."""
    index = {day: i for i, day in enumerate(days)}
    values: dict[str, list[int]] = {}
    for key in keys or ():
        values[key] = [0] * len(days)
    for day, key, n in rows:
        if day not in index:
            continue
        values.setdefault(key, [0] * len(days))[index[day]] += n
    ordered = list(keys or ()) + sorted(k for k in values if k not in (keys or ()))
    return ordered, values
