"""The flags' free-text search (feedback.search) at a million flags.

    make bench search                                  # SQLite, then PostgreSQL
    BENCH_SEARCH_ROWS=200000 python -m bench search    # a smaller table
    BENCH_SEARCH_PARTS=sqlite python -m bench search

BENCH_SEARCH_ROWS flags (default 1,000,000) in one application, loaded by one
INSERT … SELECT through the migrated schema, so the search index is written as
every write path writes it (the FTS5 triggers on SQLite, the GIN index on
PostgreSQL). Each flag's prompt, answer and note are a few words of a small
vocabulary plus the row's number; one flag in 1,000 holds the rare word
`zephyrine` (in its answer), one in 10 the word `refund`.

Measured: server time of `GET /api/v1/flags?q=…` through the Django test client
with the application's token (auth, the selector, the keyset page of 50, the
JSON), p95 over BENCH_SEARCH_SAMPLES requests after 3 warm-ups, for the rare
word (1,000 matches at a million flags), the rare word with a status filter, a
common word (100,000 matches: a stress figure) and, as the reference, the same
page with no search. Target: the rare word under 100 ms. The load average is
printed beside the figures (the machine is shared).
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_NAME = os.environ.get("BENCH_SEARCH_PG_DB", "bench_search")
ROWS = int(os.environ.get("BENCH_SEARCH_ROWS", "1000000"))
SAMPLES = int(os.environ.get("BENCH_SEARCH_SAMPLES", "30"))
TARGET_MS = 100.0
WORDS = ["store", "opens", "sunday", "citation", "prize", "widget", "harbour", "velvet", "question", "account"]


def _populate(vendor: str, application_id: int, token_id: int, rows: int) -> None:
    from django.db import connection

    word = "CASE n % 10 " + " ".join(f"WHEN {i} THEN '{w}'" for i, w in enumerate(WORDS)) + " END"
    word2 = "CASE (n / 10) % 10 " + " ".join(f"WHEN {i} THEN '{w}'" for i, w in enumerate(WORDS)) + " END"
    rare = "CASE WHEN n % 1000 = 7 THEN ' zephyrine' ELSE '' END"
    common = "CASE WHEN n % 10 = 3 THEN ' refund' ELSE '' END"
    if vendor == "postgresql":
        series = f"SELECT generate_series(1, {rows}) AS n"
        public_id = "'fb_' || lpad(to_hex(n), 16, '0')"
        created = f"TIMESTAMPTZ '2026-01-01 00:00:00+00' + n * INTERVAL '{max(1, 300 * 86400 // rows)} second'"
    else:
        series = f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) SELECT n FROM s"
        public_id = "printf('fb_%016x', n)"
        created = (f"strftime('%Y-%m-%d %H:%M:%S', '2026-01-01 00:00:00', '+' || (n * "
                   f"{max(1, 300 * 86400 // rows)}) || ' seconds')")
    status = "CASE WHEN n % 10 = 1 THEN 'pending' WHEN n % 10 BETWEEN 2 AND 6 THEN 'approved' ELSE 'rejected' END"
    sql = f"""
        INSERT INTO feedback_flag (
            public_id, application_id, region, problem, suggested_axis, axis, verdict, status,
            prompt, context, answer, detector_scores, note, message_id, session_id, end_user_ref,
            author_kind, author_user_id, author_token_id, capture_reason, capture_label,
            twin_prompt, twin_answer, weight, attack_family, review_note, version,
            claimed_by_id, claimed_until, created_at, updated_at)
        SELECT {public_id}, {application_id}, 'answer', 'fabricated', 'hallucination', 'hallucination',
            CASE WHEN n % 10 BETWEEN 2 AND 6 THEN 'false_negative' ELSE '' END, {status},
            'When does the ' || {word} || ' open, question ' || n || '?', '',
            'The ' || {word2} || ' answer number ' || n || {rare}, '{{}}',
            'note about ' || {word} || {common}, 'm' || n, 's' || (n % 997), '',
            'end_user', NULL, {token_id}, '', '', '', '', NULL, '', '', 1, NULL, NULL, {created}, {created}
        FROM ({series}) AS series
    """
    with connection.cursor() as cursor:
        cursor.execute(sql)
        if vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE feedback_flag")
            cursor.execute("CHECKPOINT")  # the load's dirty pages out now, not during the measurements
        else:
            cursor.execute("ANALYZE")
            cursor.execute("INSERT INTO feedback_flag_fts(feedback_flag_fts) VALUES ('optimize')")


def _measure(fn) -> tuple[float, float]:
    from bench.common import p95

    walls = []
    for _ in range(SAMPLES + 3):
        w0 = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - w0)
    walls = walls[3:]
    return p95(walls) * 1000, statistics.median(walls) * 1000


def run(database: str) -> None:
    from bench.common import setup_django

    if database == "postgresql":
        from reliability.server import drop_pg_database, fresh_pg_database

        setup_django(fresh_pg_database(PG_NAME))
    else:
        setup_django(None)
    from django.db import connection
    from django.test import Client

    from consoles.services import application_create, token_issue

    app = application_create(slug="bench", name="Bench")
    issued = token_issue(name="bench", application=app)
    token, secret = issued.token, issued.secret
    started = time.perf_counter()
    _populate(connection.vendor, app.pk, token.pk, ROWS)
    fill = time.perf_counter() - started
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}

    def get(params: dict, expect: int | None = None):
        def call() -> None:
            response = client.get("/api/v1/flags", params, **headers)
            assert response.status_code == 200, (params, response.status_code, response.content[:300])
            if expect is not None:
                assert len(response.json()["items"]) == expect, params

        return call

    print(f"search on {connection.vendor}: {ROWS:,} flags (filled, index included, in {fill:.0f} s); "
          f"{SAMPLES} requests each; a page is 50 flags")
    print(f"  load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  {'what':<58} {'wall p95':>10} {'wall p50':>10}")
    rare_matches = ROWS // 1000
    results = {}
    for label, fn in (
        ("reference: first page, no search", get({})),
        (f"q=zephyrine (1 flag in 1,000: {rare_matches:,} match)", get({"q": "zephyrine"}, min(50, rare_matches))),
        ("q=zephyrine&status=pending (none match: all read)", get({"q": "zephyrine", "status": "pending"})),
        ("q=zephyrine velvet (two words)", get({"q": "zephyrine velvet"})),
        ("q=zephyr (a prefix of the rare word)", get({"q": "zephyr"})),
        (f"q=refund (1 in 10: {ROWS // 10:,} match; stress)", get({"q": "refund"}, 50)),
    ):
        wall, median = _measure(fn)
        results[label] = wall
        print(f"  {label:<58} {wall:8.1f}ms {median:8.1f}ms")
    rare = next(v for k, v in results.items() if k.startswith("q=zephyrine ("))
    verdict = "PASS" if rare < TARGET_MS else "FAIL"
    print(f"  rare word: p95 {rare:.1f} ms, target < {TARGET_MS:.0f} ms: {verdict}")
    print(f"  load average after (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if database == "postgresql" and not os.environ.get("BENCH_SEARCH_KEEP"):
        connection.close()
        drop_pg_database(PG_NAME)


PARTS = {"sqlite": lambda: run("sqlite"), "postgresql": lambda: run("postgresql")}


def main() -> None:
    wanted = os.environ.get("BENCH_SEARCH_PARTS", ",".join(PARTS)).split(",")
    for part in wanted:
        # Each part in its own process: Django is configured once per process.
        subprocess.run([sys.executable, "-c", f"from bench.bench_search import PARTS; PARTS[{part!r}]()"],
                       cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
