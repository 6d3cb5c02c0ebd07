"""Database functions the apps share for per-day aggregates.

`UtcDay` is the calendar day (UTC) of a timestamp column, computed by the
database itself. Django's `TruncDate` does the same, but on SQLite it calls
back into Python for every row (`django_datetime_cast_date`), which costs
seconds over a few hundred thousand rows; here SQLite cuts the stored UTC text
("YYYY-MM-DD HH:MM:SS...") and PostgreSQL casts at time zone UTC, both native.
The overview's days are UTC days (the console's TIME_ZONE is UTC).
"""

from datetime import UTC, date, datetime, time, timedelta

from django.db.models import DateField, Func
from django.utils import timezone


class UtcDay(Func):
    output_field = DateField()
    arity = 1

    def as_sqlite(self, compiler, connection, **extra_context):
        return self.as_sql(compiler, connection, template="substr(%(expressions)s, 1, 10)", **extra_context)

    def as_postgresql(self, compiler, connection, **extra_context):
        return self.as_sql(
            compiler, connection, template="((%(expressions)s) AT TIME ZONE 'UTC')::date", **extra_context
        )


FIRST_DAY = date(1970, 1, 1)


def day_out_of_reach(day: date) -> str | None:
    """Why a day typed into a date filter is refused, or None. A day far outside any
    data (year 1 or 9999) would overflow the day arithmetic of the queries."""
    last = timezone.now().date() + timedelta(days=366)
    if FIRST_DAY <= day <= last:
        return None
    return f"Choose a day from {FIRST_DAY:%Y-%m-%d} to {last:%Y-%m-%d}."


def day_start(day: date) -> datetime:
    """The first instant of a UTC day."""
    return datetime.combine(day, time.min, tzinfo=UTC)


def day_bounds(first: date, last: date) -> tuple[datetime, datetime]:
    """[start, end) of the UTC days first..last inclusive."""
    return day_start(first), day_start(last + timedelta(days=1))


def as_date(value: date | str) -> date:
    """A day from a database row (a date, or ISO text from a raw SQLite query)."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value)[:10])
