"""User flags taken in as receipts, and settled into the queue in batches.

POST /api/v1/flags is the hot path of the product: every integration posts each
flag a user raises. A flag row carries the queue's sixteen B-trees (the indexes
that keep every filter of the queue fast at a million flags) and its `created`
event five more; written one flag per transaction, that was most of the
request (issue #3: ingest at half the throughput of a bare endpoint).

So an integration's user flag is written, before its 201, as one narrow
`FlagReceipt` row (one statement, which is also the duplicate check), and
moved into `Flag` with its event later, many at a time: one transaction, one
commit and one walk down each index for the whole batch.

- Nothing acknowledged is lost: the receipt is committed before the answer.
- What was acknowledged is what is read: every selector that reads flags (and
  every service that changes them) settles the application's receipts first.
- The same message posted again is answered 200: the receipt (or the flag, once
  settled) is found by the same statement that would write it. On PostgreSQL
  a settled receipt is kept for `KEEP_MOVED` so a repost racing its settle
  still finds it; SQLite's one writer at a time needs no such wait.
- The writer settles after its answer has gone (`settle_after_answer`), at most
  once every `FLAG_SETTLE_INTERVAL` seconds per process, so under load one
  settle moves what several workers took in meanwhile.

A receipt's flag is the one `flag_prepare` built: the same id, values and
`created_at` the 201 reported. Captures, operators' flags and imports do not
come through here (a capture may drop another at capacity, in its own
transaction); they settle the application's receipts before they write.
"""

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection, transaction
from django.db.models import Field, Model
from django.utils import timezone

from consoles import rowsql
from consoles.models import Application

from .history import history_written
from .models import ActorKind, AuthorKind, EventAction, Flag, FlagEvent, FlagReceipt, FlagStatus

logger = logging.getLogger(__name__)

# PostgreSQL: how long a settled receipt stays. A repost's statement reads the
# flags as they were when it began; if that was before the settle committed,
# it must still meet the receipt, so the receipt outlives any one statement.
KEEP_MOVED = timedelta(seconds=2)
SETTLE_BATCH = 2000

# The flag's columns a receipt does not carry, as a new user flag has them.
_FLAG_FROM_RECEIPT = {"axis": "suggested_axis", "updated_at": "created_at"}
_FLAG_FIXED = {"status": FlagStatus.PENDING.value, "author_kind": AuthorKind.END_USER.value}
_EVENT_FIXED = {"action": EventAction.CREATED.value, "from_status": "", "to_status": FlagStatus.PENDING.value,
                "actor_kind": ActorKind.TOKEN.value, "actor_user_id": None, "changes": "{}"}

_sql: dict[str, dict[str, str]] = {}  # per vendor: built once from the models' metadata


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _table(model: type[Model]) -> str:
    return _q(model._meta.db_table)


def _mark(f: Field) -> str:
    # PostgreSQL types a bound value in a SELECT list by itself; say the column's type.
    return f"CAST(%s AS {f.cast_db_type(connection)})" if connection.vendor == "postgresql" else "%s"


def _prepared(f: Field, value: Any) -> Any:
    return f.get_db_prep_save(value, connection)


def _receipt_fields() -> tuple[Field, ...]:
    return tuple(FlagReceipt._meta.concrete_fields)


def _build_sql() -> dict[str, str]:
    receipt, flag, event = _table(FlagReceipt), _table(Flag), _table(FlagEvent)
    fields = _receipt_fields()
    unique = "application_id = %s AND message_id = %s AND region = %s AND capture_reason = ''"
    stage = (
        f"INSERT INTO {receipt} ({', '.join(_q(f.column) for f in fields)}) "  # noqa: S608 - model metadata only
        f"SELECT {', '.join(_mark(f) for f in fields)} "
        f"WHERE NOT EXISTS (SELECT 1 FROM {flag} WHERE {unique}) ON CONFLICT DO NOTHING"
    )
    receipt_columns = {f.attname: f.column for f in fields}
    flag_fields = [f for f in Flag._meta.concrete_fields if f is not Flag._meta.auto_field]
    selected = []
    for f in flag_fields:
        source = _FLAG_FROM_RECEIPT.get(f.attname, f.attname)
        if source in receipt_columns:
            selected.append(f"r.{_q(receipt_columns[source])}")
        else:
            selected.append(_mark(f))
    flag_columns = ", ".join(_q(f.column) for f in flag_fields)
    event_fields = [f for f in FlagEvent._meta.concrete_fields if f is not FlagEvent._meta.auto_field]
    event_columns = ", ".join(_q(f.column) for f in event_fields)
    app = _mark(FlagReceipt._meta.get_field("application"))
    due = f"NOT moved AND ({app} IS NULL OR application_id = {app}) ORDER BY created_at, public_id LIMIT {SETTLE_BATCH}"
    made = "RETURNING id, application_id, author_token_id, created_at"
    sql = {
        "stage": stage,
        "pending": f"SELECT 1 FROM {receipt} WHERE NOT moved AND application_id = %s LIMIT 1",  # noqa: S608
        "owner": f"SELECT application_id FROM {receipt} WHERE public_id = %s",  # noqa: S608
    }
    if connection.vendor == "postgresql":
        event_values = ", ".join(
            {"application_id": "application_id", "flag_id": "id", "actor_token_id": "author_token_id",
             "created_at": "created_at"}.get(f.attname) or _mark(f) for f in event_fields)
        # One statement, atomic on its own (no BEGIN and COMMIT round trips): let
        # go of receipts settled more than KEEP_MOVED ago, lock a batch, mark it
        # moved, insert its flags in arrival order and their events; first how
        # many receipts it moved. A settle after an answer skips a batch another
        # process holds; a reader waits for it (then finds it moved), so it
        # reads what that settle made.
        cutoff = _mark(FlagReceipt._meta.get_field("created_at"))
        for name, lock in (("settle", "FOR UPDATE"), ("settle_skip", "FOR UPDATE SKIP LOCKED")):
            sql[name] = (
                f"WITH gone AS (DELETE FROM {receipt} WHERE moved AND created_at < {cutoff}), "  # noqa: S608
                f"batch AS (SELECT public_id FROM {receipt} WHERE {due} {lock}), "
                f"marked AS (UPDATE {receipt} u SET moved = true FROM batch b WHERE u.public_id = b.public_id "
                f"RETURNING u.*), "
                f"made AS (INSERT INTO {flag} ({flag_columns}) SELECT {', '.join(selected)} FROM marked r "
                f"ORDER BY r.created_at, r.public_id ON CONFLICT DO NOTHING {made}), "
                f"ev AS (INSERT INTO {event} ({event_columns}) SELECT {event_values} FROM made "
                "RETURNING application_id, created_at) "
                "SELECT (SELECT count(*) FROM marked), ev.application_id, ev.created_at "
                "FROM (SELECT 1) AS one LEFT JOIN ev ON true"
            )
    else:
        # SQLite: one writer at a time (the settle's BEGIN IMMEDIATE), so the
        # batch the INSERT reads is the batch the DELETE removes.
        batch = f"SELECT public_id FROM {receipt} WHERE {due}"  # noqa: S608
        sql["settle"] = (
            f"INSERT INTO {flag} ({flag_columns}) SELECT {', '.join(selected)} FROM {receipt} r "  # noqa: S608
            f"WHERE r.public_id IN ({batch}) ORDER BY r.created_at, r.public_id ON CONFLICT DO NOTHING {made}"
        )
        # Settled receipts go at once: with one writer at a time, a repost's
        # statement runs wholly before the settle (and meets the receipt) or
        # after it (and meets the flag).
        sql["mark"] = f"DELETE FROM {receipt} WHERE public_id IN ({batch})"  # noqa: S608
        sql["event"] = (f"INSERT INTO {event} ({event_columns}) "  # noqa: S608
                        f"VALUES ({', '.join(['%s'] * len(event_fields))})")
    return sql


def _statements() -> dict[str, str]:
    return _sql.get(connection.vendor) or _sql.setdefault(connection.vendor, _build_sql())


_flag_params: dict[str, list[Any]] = {}


def _flag_fixed_params() -> list[Any]:
    """The bound values of the flag's columns a receipt does not carry, in order."""
    found = _flag_params.get(connection.vendor)
    if found is None:
        receipt = {f.attname for f in _receipt_fields()}
        found = []
        for f in Flag._meta.concrete_fields:
            if f is Flag._meta.auto_field or _FLAG_FROM_RECEIPT.get(f.attname, f.attname) in receipt:
                continue
            found.append(_prepared(f, _FLAG_FIXED[f.attname] if f.attname in _FLAG_FIXED else f.get_default()))
        _flag_params[connection.vendor] = found
    return found


def _event_fixed_params() -> list[Any]:
    """PostgreSQL: the bound values of the event's columns not taken from the new flag."""
    taken = {"application_id", "flag_id", "actor_token_id", "created_at"}
    return [_prepared(f, _EVENT_FIXED[f.attname]) if f.attname != "changes" else _prepared(f, {})
            for f in FlagEvent._meta.concrete_fields
            if f is not FlagEvent._meta.auto_field and f.attname not in taken]


def _adapters() -> list[Callable[[Any], Any]]:
    """Per receipt column, what turns the flag's value into the bound one: what
    `get_db_prep_save` ends in for these fields (a moment, JSON, plain values),
    without its generic steps around it."""
    ops = connection.ops
    adapters: list[Callable[[Any], Any]] = []
    for f in _receipt_fields():
        if f.get_internal_type() == "JSONField":
            adapters.append(lambda value, encoder=f.encoder: ops.adapt_json_value(value, encoder))
        elif f.get_internal_type() == "DateTimeField":
            adapters.append(ops.adapt_datetimefield_value)
        elif f.attname == "moved":
            adapters.append(lambda value: False)
        else:
            adapters.append(lambda value: value)
    return adapters


_stage_adapters: dict[str, list[Callable[[Any], Any]]] = {}


def flag_stage(flag: Flag) -> bool:
    """Write `flag` (a new user flag `flag_prepare` built, unsaved) as a receipt.

    True when it was taken in; False when the same message and region is
    already a flag or a receipt of the application (nothing is written).
    One statement, atomic on its own.
    """
    adapters = _stage_adapters.get(connection.vendor) or _stage_adapters.setdefault(connection.vendor, _adapters())
    state = flag.__dict__
    values = [adapt(state.get(f.attname)) for f, adapt in zip(_receipt_fields(), adapters, strict=True)]
    with rowsql.prepared_cursor() as cursor:
        cursor.execute(_statements()["stage"], [*values, flag.application_id, flag.message_id, flag.region])
        return cursor.rowcount == 1


def _aware(value: datetime | str) -> datetime:
    if isinstance(value, str):  # SQLite returns the stored text (UTC)
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def flags_settle(*, application_id: int | None = None, wait: bool = True) -> int:
    """Move receipts into the queue (all applications', or one's): their flags
    and `created` events, in arrival order, in one transaction per batch.
    Returns how many receipts were moved.

    `wait=False` (PostgreSQL) passes over receipts another process is settling
    now; a reader waits for them, so it then reads their flags.
    """
    sql = _statements()
    if application_id is not None:
        with rowsql.prepared_cursor() as cursor:
            cursor.execute(sql["pending"], [application_id])
            if cursor.fetchone() is None:
                return 0
    total = 0
    while True:
        moved = _settle_batch(sql, application_id, wait)
        total += moved
        if moved < SETTLE_BATCH:
            return total


def _settle_batch(sql: dict[str, str], application_id: int | None, wait: bool) -> int:
    scope = [application_id, application_id]
    if connection.vendor == "postgresql":
        cutoff = _prepared(FlagReceipt._meta.get_field("created_at"), timezone.now() - KEEP_MOVED)
        with rowsql.prepared_cursor() as cursor:
            cursor.execute(sql["settle" if wait else "settle_skip"],
                           [cutoff, *scope, *_flag_fixed_params(), *_event_fixed_params()])
            rows = cursor.fetchall()
        _history_written([(app, _aware(at)) for _, app, at in rows if app is not None])
        return rows[0][0]
    with transaction.atomic(), rowsql.prepared_cursor() as cursor:
        cursor.execute(sql["settle"], [*_flag_fixed_params(), *scope])
        rows = cursor.fetchall()
        if rows:
            cursor.executemany(sql["event"], [_event_row(row) for row in rows])
        cursor.execute(sql["mark"], scope)
        _history_written([(app, _aware(at)) for _, app, _, at in rows])
        return cursor.rowcount


def _history_written(made: list[tuple[int, datetime]]) -> None:
    """A flag received before a day ended and settled after that day was summed
    changes the stored day. (On PostgreSQL this follows the settle's statement:
    a reader that summed the day in between stored it under the epoch this
    moves on from, so nobody reads it.)"""
    earliest: dict[int, datetime] = {}
    for app, at in made:
        earliest[app] = min(at, earliest.get(app, at))
    for app, at in earliest.items():
        history_written(application_id=app, at=at)


def _event_row(row: tuple) -> list[Any]:
    flag_id, application_id, token_id, created_at = row
    given = {"application_id": application_id, "flag_id": flag_id, "actor_token_id": token_id,
             "created_at": created_at, **_EVENT_FIXED}
    return [given[f.attname] for f in FlagEvent._meta.concrete_fields if f is not FlagEvent._meta.auto_field]


# Within one request, an application's receipts are settled once: the views
# that read flags through several selectors (the queue, the overview) ask once.
_request = threading.local()


def _request_started(**kwargs: Any) -> None:
    _request.settled = set()


def _request_finished(**kwargs: Any) -> None:
    _request.settled = None


request_started.connect(_request_started, dispatch_uid="feedback.receipts.request_started")
request_finished.connect(_request_finished, dispatch_uid="feedback.receipts.request_finished")


def flags_settle_for(application: Application) -> int:
    """What every read of an application's flags calls first: its receipts
    settled (waiting for a settle another process has under way); once per
    request, every time outside one (a command, the shell)."""
    settled = getattr(_request, "settled", None)
    if settled is not None:
        if application.pk in settled:
            return 0
        settled.add(application.pk)
    return flags_settle(application_id=application.pk)


def receipt_owner(public_id: str) -> int | None:
    """The application of an unsettled (or just settled) receipt with this id."""
    with rowsql.prepared_cursor() as cursor:
        cursor.execute(_statements()["owner"], [public_id])
        row = cursor.fetchone()
    return row[0] if row else None


_last_settle = 0.0


def settle_after_answer() -> None:
    """Run once a staged flag's answer has gone (the response's close): settle
    everything received, at most once per FLAG_SETTLE_INTERVAL in this process.

    A failure here loses nothing (the receipts stay, and the next read or
    settle moves them), so it is logged, never raised into the server.
    """
    global _last_settle
    now = time.monotonic()
    if now - _last_settle < settings.FLAG_SETTLE_INTERVAL:
        return
    _last_settle = now
    try:
        flags_settle(wait=False)
    except Exception:
        logger.exception("Settling flag receipts failed; they stay and are settled by the next read.")


def after_answer(response: Any, callback: Callable[[], None] = settle_after_answer) -> None:
    """Have `callback` run when `response` is closed, after its bytes are sent."""
    response._resource_closers.append(callback)
