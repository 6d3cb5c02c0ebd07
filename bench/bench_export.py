"""JSONL export: rows/s and peak memory at 1,000,000 approved flags, against a raw
dump of the same rows by the database's own client, measured in the same run.

    make bench                                   # every benchmark
    .venv/bin/python -m bench export             # this one (SQLite, then PostgreSQL)
    BENCH_EXPORT_ROWS=100000 .venv/bin/python -m bench export    # a quick run
    BENCH_EXPORT_DBS=sqlite .venv/bin/python -m bench export      # one database

What is measured, per database:

- ours: `manage.py export_flags --application bench-export --out FILE` as a
  child process (what cron runs: Django start-up, the query, encoding, the
  atomic write, the manifest). rows/s = rows / wall time; peak memory is the
  child's maximum resident set (`wait4` rusage), so it includes the
  interpreter and Django. It is measured again on a 10% slice (by date) to
  show that memory does not grow with the number of rows.
- in-database JSON (the 2x rule of issue 29): the same command with the line
  built by the database instead (`bench/export_sql.py`: SQLite `json_object`,
  PostgreSQL `row_to_json` over `COPY ... TO STDOUT`), measured alike. The
  application keeps the ORM unless the SQL is at least twice as fast; the two
  files must be byte-identical.
- reference: the database's own client dumping the same rows (same filter,
  same order, same columns) as JSON: `sqlite3 -json` (Debian's `sqlite3`
  package; installed with apt-get only if missing) and
  `psql -c "\\copy (select row_to_json(t) from (...) t) to FILE"`.

- the `preference` format (issue 34): `export_flags --format preference` on
  the same flags, a third of them with a correction, a third with a benign
  twin answer and a third with neither (left out and counted): lines/s,
  flags read/s and peak memory beside the classifier export's.

Targets: ratio (ours rows/s / reference rows/s) >= 0.5; peak memory < 200 MB;
in-database JSON / ORM < 2 (else the SQL would earn its place back).

PostgreSQL uses its own scratch database `bench_export` on
127.0.0.1:5432, dropped and created afresh each run (`dropdb`/`createdb`;
override with BENCH_EXPORT_PG_URL).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = int(os.environ.get("BENCH_EXPORT_ROWS", "1000000"))
DBS = [d for d in os.environ.get("BENCH_EXPORT_DBS", "sqlite,postgres").split(",") if d]
PG_URL = os.environ.get("BENCH_EXPORT_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_export")
SLUG = "bench-export"
_BASE_DAY = datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 100  # created_at spreads over this many days (the 10% slice is the first 10)
TARGET_RATIO = 0.5
TARGET_PEAK_MB = 200

# Text of realistic length (a chat prompt, RAG context, an answer, a note), with
# quotes, a newline and non-ASCII so both encoders have escaping to do.
PROMPT = 'Can you summarise the "refund policy" for orders shipped to Zürich last week? ' * 2
CONTEXT = "Policy 4.2: refunds within 30 days of delivery; customs fees are not refunded.\n" * 3
ANSWER = "Orders shipped to Zürich can be refunded within 30 days; customs fees — not refunded. " * 4
NOTE = "invented a clause about customs"
# The preference format's chosen answers (issue 34): a correction, else a benign twin.
CORRECTION = "Orders shipped to Zuerich can be refunded within 30 days of delivery; customs fees are not. " * 2
TWIN = "I can only refund orders within 30 days of delivery; please check the customs note. " * 2


def main() -> None:
    """Run each database in its own process (Django is configured once per process)."""
    for db in DBS:
        subprocess.run([sys.executable, "-m", "bench.bench_export", db], cwd=ROOT, check=True)


def run_one(db: str) -> None:
    from bench.common import setup_django

    if db == "postgres":
        _ensure_pg_database(PG_URL)
        setup_django(PG_URL)
    else:
        _ensure_sqlite_cli()
        setup_django()
    from django.db import connection

    started = time.perf_counter()
    application = _populate()
    print(f"[{db}] {ROWS:,} approved flags loaded in {time.perf_counter() - started:.1f} s", flush=True)

    workdir = Path(tempfile.mkdtemp(prefix="bench-export-"))
    try:
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="consoles.settings")
        if db == "postgres":
            env["DATABASE_URL"] = PG_URL
        else:
            env.pop("DATABASE_URL", None)
            env["SQLITE_PATH"] = connection.settings_dict["NAME"]
        connection.close()

        # Warm the page cache for both sides alike: one untimed read first.
        _reference_dump(db, workdir / "warm.json", env)
        ref_seconds = _reference_dump(db, workdir / "reference.json", env)
        ours_seconds, peak_kb, rows = _our_export(workdir / "ours.jsonl", env)
        sql_seconds, sql_peak_kb, sql_rows = _our_export(workdir / "sql.jsonl", env, engine="sql")
        identical = _same_bytes(workdir / "ours.jsonl", workdir / "sql.jsonl")
        slice_to = (_BASE_DAY + timedelta(days=DAYS // 10 - 1)).date().isoformat()
        _, slice_peak_kb, slice_rows = _our_export(workdir / "slice.jsonl", env, "--created-to", slice_to)
        assert rows == ROWS, f"exported {rows} rows, expected {ROWS}"

        ours_rate = rows / ours_seconds
        ref_rate = ROWS / ref_seconds
        ratio = ours_rate / ref_rate
        size_mb = (workdir / "ours.jsonl").stat().st_size / 1e6
        client = "sqlite3 -json" if db == "sqlite" else "psql \\copy row_to_json"
        print(f"[{db}] export_flags: {rows:,} rows in {ours_seconds:.1f} s = {ours_rate:,.0f} rows/s "
              f"({size_mb:,.0f} MB of JSONL)")
        print(f"[{db}] reference ({client}): {ref_seconds:.1f} s = {ref_rate:,.0f} rows/s")
        print(f"[{db}] ratio ours/reference = {ratio:.2f} (target >= {TARGET_RATIO}) "
              f"{'OK' if ratio >= TARGET_RATIO else 'BELOW TARGET'}")
        print(f"[{db}] peak memory (child max RSS): {peak_kb / 1024:.0f} MB at {rows:,} rows, "
              f"{slice_peak_kb / 1024:.0f} MB at {slice_rows:,} rows (target < {TARGET_PEAK_MB} MB) "
              f"{'OK' if peak_kb / 1024 < TARGET_PEAK_MB else 'ABOVE TARGET'}", flush=True)
        sql_rate = sql_rows / sql_seconds
        print(f"[{db}] in-database JSON (json_object / row_to_json + COPY): {sql_rows:,} rows in "
              f"{sql_seconds:.1f} s = {sql_rate:,.0f} rows/s, peak {sql_peak_kb / 1024:.0f} MB; "
              f"files {'byte-identical' if identical else 'DIFFER'}")
        print(f"[{db}] 2x rule: in-database / ORM = {sql_rate / ours_rate:.2f} "
              f"({'SQL would earn its place' if sql_rate >= 2 * ours_rate else 'ORM kept'})", flush=True)
        pref_seconds, pref_peak_kb, pref_rows = _our_export(workdir / "pref.jsonl", env, "--format", "preference")
        import json

        left_out = json.loads((workdir / "pref.jsonl.manifest.json").read_text())["left_out"]
        assert pref_rows + left_out == ROWS, f"{pref_rows} lines + {left_out} left out != {ROWS}"
        print(f"[{db}] export_flags --format preference: {pref_rows:,} lines ({left_out:,} flags left out) in "
              f"{pref_seconds:.1f} s = {pref_rows / pref_seconds:,.0f} lines/s, "
              f"{ROWS / pref_seconds:,.0f} flags read/s; peak memory {pref_peak_kb / 1024:.0f} MB "
              f"(classifier: {ours_rate:,.0f} rows/s, {peak_kb / 1024:.0f} MB) "
              f"{'OK' if pref_peak_kb / 1024 < TARGET_PEAK_MB else 'ABOVE TARGET'}", flush=True)
        del application
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _populate():
    """Fresh application with ROWS approved flags, inserted by set-based SQL.

    The flag table's secondary indexes are dropped for the load and rebuilt
    after it (building an index once is far cheaper than a million inserts into
    fourteen of them); the export then reads the same indexes as in production.
    """
    from django.db import connection, transaction

    from consoles.models import Application

    Application.objects.filter(slug=SLUG).delete()
    application = Application.objects.create(slug=SLUG, name="Export benchmark")
    seconds_per_row = DAYS * 86400 / ROWS
    columns = (
        "public_id, application_id, region, problem, suggested_axis, axis, verdict, status, prompt, "
        "context, answer, detector_scores, note, message_id, session_id, end_user_ref, author_kind, "
        "capture_reason, capture_label, twin_prompt, twin_answer, attack_family, review_note, version, "
        "created_at, updated_at, correction"
    )
    # A third corrected, a third with a twin answer, a third with neither.
    twin = f"CASE WHEN n %% 3 = 1 THEN '{TWIN}' ELSE '' END"
    correction = f"CASE WHEN n %% 3 = 0 THEN '{CORRECTION}' ELSE '' END"
    with transaction.atomic(), connection.cursor() as cursor:
        indexes = _drop_flag_indexes(cursor, connection.vendor)
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""
                INSERT INTO feedback_flag ({columns})
                SELECT 'fb_' || lpad(to_hex(n), 16, '0'), %s, 'answer', 'fabricated', 'hallucination',
                       CASE WHEN n %% 7 = 0 THEN 'toxicity' ELSE 'hallucination' END,
                       CASE WHEN n %% 4 = 0 THEN 'false_positive' ELSE 'false_negative' END,
                       'approved', %s || n, %s, %s, '{{"hallucination": 0.31}}'::jsonb, %s, 'msg_' || n,
                       'sess_' || (n %% 50000), '', 'end_user', '', '', '', {twin}, '', '', 2,
                       %s::timestamptz + make_interval(secs => n * %s),
                       %s::timestamptz + make_interval(secs => n * %s), {correction}
                FROM generate_series(1, %s) AS n
                """,
                [application.pk, PROMPT, CONTEXT, ANSWER, NOTE, _BASE_DAY, seconds_per_row,
                 _BASE_DAY, seconds_per_row, ROWS],
            )
        else:
            # Django stores UTC text "YYYY-MM-DD HH:MM:SS.ffffff".
            base = _BASE_DAY.strftime("%Y-%m-%d %H:%M:%S")
            at = f"strftime('%%Y-%%m-%%d %%H:%%M:%%f000', '{base}', '+' || (n * {seconds_per_row!r}) || ' seconds')"
            cursor.execute(
                f"""
                WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < %s)
                INSERT INTO feedback_flag ({columns})
                SELECT printf('fb_%%016x', n), %s, 'answer', 'fabricated', 'hallucination',
                       CASE WHEN n %% 7 = 0 THEN 'toxicity' ELSE 'hallucination' END,
                       CASE WHEN n %% 4 = 0 THEN 'false_positive' ELSE 'false_negative' END,
                       'approved', %s || n, %s, %s, '{{"hallucination": 0.31}}', %s, 'msg_' || n,
                       'sess_' || (n %% 50000), '', 'end_user', '', '', '', {twin}, '', '', 2, {at}, {at},
                       {correction}
                FROM seq
                """,
                [ROWS, application.pk, PROMPT, CONTEXT, ANSWER, NOTE],
            )
    # After the load commits: PostgreSQL refuses CREATE INDEX while the load's
    # deferred foreign-key checks are pending in the same transaction.
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in indexes:
            cursor.execute(statement)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE feedback_flag")
    return application


def _drop_flag_indexes(cursor, vendor: str) -> list[str]:
    """Drop the flag table's plain secondary indexes; return the statements recreating them."""
    if vendor == "postgresql":
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'feedback_flag' "
            "AND indexname NOT IN (SELECT conname FROM pg_constraint)"
        )
        found = cursor.fetchall()
    else:
        cursor.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'feedback_flag' "
            "AND sql IS NOT NULL"
        )
        found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f'DROP INDEX "{name}"')
    return [definition.replace("%", "%%") for _, definition in found]


def _reference_sql(application_pk: int, vendor: str) -> str:
    """The same rows as the export (approved, axis resolved, oldest first), as columns."""
    label = "CASE verdict WHEN 'false_negative' THEN 1 WHEN 'false_positive' THEN 0 END"
    if vendor == "postgresql":
        created = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')"
    else:
        created = "strftime('%Y-%m-%dT%H:%M:%S+00:00', created_at)"
    return (
        f"SELECT public_id AS id, region, axis, {label} AS label, verdict, prompt, context, answer, "
        f"problem, note, '{SLUG}' AS application_id, {created} AS created_at, "
        f"'human_feedback' AS source FROM feedback_flag "
        f"WHERE application_id = {int(application_pk)} AND status = 'approved' AND axis <> '' "
        f"ORDER BY feedback_flag.created_at, feedback_flag.id"
    )


def _reference_dump(db: str, out: Path, env: dict) -> float:
    from consoles.models import Application

    pk = Application.objects.get(slug=SLUG).pk
    if db == "postgres":
        sql = _reference_sql(pk, "postgresql")
        command = ["psql", "-X", "-q", PG_URL, "-c", f"\\copy (SELECT row_to_json(t) FROM ({sql}) t) TO '{out}'"]
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env)
    else:
        sql = _reference_sql(pk, "sqlite")
        started = time.perf_counter()
        with out.open("wb") as handle:
            subprocess.run(["sqlite3", "-json", env["SQLITE_PATH"], sql], stdout=handle, check=True)
    return time.perf_counter() - started


def _our_export(out: Path, env: dict, *extra: str, engine: str = "orm") -> tuple[float, int, int]:
    """(seconds, peak RSS in kB, rows) of one export_flags child process.

    engine "orm" is the application as shipped (`manage.py export_flags`);
    "sql" runs the same command with the lines built by the database.
    """
    import json

    arguments = ["export_flags", "--application", SLUG, "--out", str(out), "--json", *extra]
    if engine == "sql":
        command = [sys.executable, "-m", "bench.bench_export", "sql-export", *arguments]
    else:
        command = [sys.executable, "manage.py", *arguments]
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE)
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"export_flags failed with status {child.returncode}")
    return seconds, usage.ru_maxrss, json.loads(stdout)["rows"]


def _same_bytes(a: Path, b: Path) -> bool:
    import hashlib

    def digest(path: Path) -> str:
        with path.open("rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()

    return digest(a) == digest(b)


def _sql_export(arguments: list[str]) -> None:
    """`export_flags` with `bench/export_sql.py` feeding the file instead of the ORM."""
    import django

    django.setup()
    from django.core.management import call_command

    import feedback.services.exports
    from bench.export_sql import flag_export_batches_sql

    feedback.services.exports.flag_export_batches = flag_export_batches_sql
    call_command(*arguments)


def _ensure_sqlite_cli() -> None:
    if shutil.which("sqlite3"):
        return
    # Debian's sqlite3 package provides the client; installed only when missing.
    print("installing Debian's sqlite3 client (apt-get install sqlite3)", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "sqlite3"], check=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def _ensure_pg_database(url: str) -> None:
    """A fresh scratch database for each run (the schema follows the migrations)."""
    import dj_database_url

    settings = dj_database_url.parse(url)
    args = ["-h", settings["HOST"] or "127.0.0.1", "-p", str(settings["PORT"] or 5432),
            "-U", settings["USER"] or "postgres"]
    subprocess.run(["dropdb", *args, "--if-exists", settings["NAME"]], check=True)
    subprocess.run(["createdb", *args, settings["NAME"]], check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["sql-export"]:
        _sql_export(sys.argv[2:])
    else:
        run_one(sys.argv[1] if len(sys.argv) > 1 else "sqlite")
