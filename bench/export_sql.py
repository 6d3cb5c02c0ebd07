"""The export built as JSON by the database: the comparator of the 2x rule (issue 29).

The application exports through the ORM (`feedback.selectors.flag_export_batches`:
`values_list(...).iterator()` encoded with orjson). This module is the
alternative it replaced, kept only so `bench/bench_export.py` measures both in
one run: SQLite's `json_object` over a chunked cursor, PostgreSQL's
`row_to_json` streamed with `COPY ... TO STDOUT (FORMAT BINARY)`, with sorting
switched off so rows stream in index order. The SQL was to stay in the
application only if it were at least twice as fast. It yields the same
`(pk, public_id, version, line)` batches and the same bytes (the bench checks
the two files are identical).
"""

from collections.abc import Iterator
from datetime import datetime

from django.db import connection, transaction

from consoles.models import Application
from feedback.exports import LABEL_BY_VERDICT, SOURCE_BY_AUTHOR_KIND
from feedback.selectors import EXPORT_CHUNK_SIZE, FlagFilters, flag_export_queryset


def flag_export_batches_sql(
    *,
    application: Application,
    filters: FlagFilters,
    changed_since: datetime | None = None,
    chunk_size: int = EXPORT_CHUNK_SIZE,
    export_format: str = "classifier",
    tally: object = None,
) -> Iterator[list[tuple[int, str, int, str | bytes]]]:
    """The database builds each line (SQLite `json_object`, PostgreSQL
    `row_to_json` with COPY): kept only while the 2x rule is measured, and
    for the classifier format only (it leaves nothing out, so `tally` is unused)."""
    if export_format != "classifier":
        raise ValueError("the in-database JSON export builds classifier lines only")
    qs = flag_export_queryset(application=application, filters=filters, changed_since=changed_since)
    vendor = connection.vendor
    inner, inner_params = qs.order_by().values_list(*_EXPORT_SOURCE_COLUMNS).query.sql_with_params()
    line_sql, line_params = _export_line_sql(vendor, application.slug)
    sql = f"{line_sql.format(inner=inner)} ORDER BY s.created_at, s.id"
    if vendor == "postgresql":
        yield from _copy_batches(sql, (*inner_params, *line_params), chunk_size)
        return
    # SQLite reads from its WAL snapshot without a transaction (an IMMEDIATE one
    # would block every writer for the length of the export).
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, (*line_params, *inner_params))
        while batch := cursor.fetchmany(chunk_size):
            yield batch


def _copy_batches(sql: str, params: tuple, chunk_size: int) -> Iterator[list[tuple[int, str, int, bytes]]]:
    """PostgreSQL: stream the rows with `COPY (...) TO STDOUT` in binary format.

    COPY is one statement (one snapshot) and the server streams rows without
    waiting for FETCH round trips; the JSON line comes as bytea, i.e. the raw
    UTF-8 bytes, never decoded and re-encoded. This is the protocol `psql \\copy`
    uses; a named cursor with `fetchmany` was 1.5x slower.

    Sorting is switched off for the statement, so the planner reads the rows in
    index order (application, created_at, id) instead of sorting the whole result
    first: the first row leaves at once, and the server builds lines while this
    process writes the previous batch (at a million rows the sort alone held the
    first row back for 7 s). The setting is restored afterwards, also inside an
    outer transaction.
    """
    connection.ensure_connection()
    sql = sql.replace("row_to_json(j)::text", "convert_to(row_to_json(j)::text, 'UTF8')", 1)
    with connection.wrap_database_errors, connection.connection.cursor() as cursor, transaction.atomic():
        cursor.execute("SELECT current_setting('enable_sort'), set_config('enable_sort', 'off', true)")
        (previous, _), = cursor.fetchall()
        try:
            # Values are bound client-side by psycopg (COPY takes no server-side parameters).
            with cursor.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
                copy.set_types(["int8", "text", "int4", "bytea"])
                batch: list[tuple[int, str, int, bytes]] = []
                for row in copy.rows():
                    batch.append(row)
                    if len(batch) >= chunk_size:
                        yield batch
                        batch = []
                if batch:
                    yield batch
        finally:
            if not connection.needs_rollback and cursor.connection.info.transaction_status == 2:  # INTRANS
                cursor.execute("SELECT set_config('enable_sort', %s, true)", [previous])


_EXPORT_SOURCE_COLUMNS = (
    "id", "public_id", "version", "region", "axis", "verdict", "prompt", "context", "answer",
    "problem", "note", "created_at", "author_kind",
)


def _export_line_sql(vendor: str, application_id: str) -> tuple[str, list]:
    """SELECT building seed 001's line over a subquery `s` of `_EXPORT_SOURCE_COLUMNS`.

    The label and source mappings come from `feedback.exports`, so SQL and the
    Python reference share one definition.
    """
    label_cases = " ".join("WHEN %s THEN %s" for _ in LABEL_BY_VERDICT)
    label_params = [v for pair in LABEL_BY_VERDICT.items() for v in pair]
    source_cases = " ".join("WHEN %s THEN %s" for _ in SOURCE_BY_AUTHOR_KIND)
    source_params = [v for pair in SOURCE_BY_AUTHOR_KIND.items() for v in pair] + ["human_feedback"]
    label = f"CASE s.verdict {label_cases} END"
    source = f"CASE s.author_kind {source_cases} ELSE %s END"
    if vendor == "sqlite":
        # Django stores UTC as "YYYY-MM-DD HH:MM:SS[.ffffff]": cut the text rather
        # than strftime(), which rounds milliseconds into the seconds.
        created = "substr(s.created_at, 1, 10) || 'T' || substr(s.created_at, 12, 8) || '+00:00'"
        # Only constant SQL is interpolated here; every value is a bound parameter.
        fields = (
            "'id', s.public_id, 'region', s.region, 'axis', NULLIF(s.axis, ''), "
            f"'label', {label}, 'verdict', NULLIF(s.verdict, ''), 'prompt', s.prompt, "
            "'context', s.context, 'answer', s.answer, 'problem', s.problem, 'note', s.note, "
            f"'application_id', %s, 'created_at', {created}, 'source', {source}"
        )
        # As a BLOB the line reaches Python as UTF-8 bytes, never decoded and re-encoded.
        sql = f"SELECT s.id, s.public_id, s.version, CAST(json_object({fields}) AS BLOB) FROM ({{inner}}) s"  # noqa: S608
        return sql, [*label_params, application_id, *source_params]
    label = label.replace("THEN %s", "THEN %s::integer")
    created = (
        "to_char(date_trunc('second', s.created_at AT TIME ZONE 'UTC'), "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')"
    )
    # A LATERAL row named column by column: row_to_json keeps that order, compact.
    # Only constant SQL is interpolated here; every value is a bound parameter.
    columns = (
        f"s.public_id AS id, s.region AS region, NULLIF(s.axis, '') AS axis, {label} AS label, "
        "NULLIF(s.verdict, '') AS verdict, s.prompt AS prompt, s.context AS context, "
        "s.answer AS answer, s.problem AS problem, s.note AS note, "
        f"%s::text AS application_id, {created} AS created_at, {source} AS source"
    )
    sql = f"SELECT s.id, s.public_id, s.version, row_to_json(j)::text FROM ({{inner}}) s CROSS JOIN LATERAL (SELECT {columns}) j"  # noqa: S608
    return sql, [*label_params, application_id, *source_params]
