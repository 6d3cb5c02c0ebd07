"""The overview page at a million flags.

    make bench overview                                  # SQLite, then PostgreSQL
    BENCH_OVERVIEW_ROWS=200000 python -m bench overview  # a smaller table
    BENCH_OVERVIEW_PARTS=sqlite python -m bench overview

BENCH_OVERVIEW_ROWS flags (default 1,000,000) in one application, loaded by
`bench_flags`' set-based loader, one every 31 seconds over the last 360 days
(a busy application's year); then, set-based as well, the history the overview
reads: a `created` event per flag, a decision event and a review for every
decided flag (three curators, each at their own speed), so ~2.8 M more rows.

Measured: server time of GET /a/<app>/overview/ through the Django test client
(every query, the charts, the template), p95 over BENCH_OVERVIEW_SAMPLES
requests after warm-up (the range's ended days are summed on the first view and
kept, feedback.history; the first view's time is printed too), for the default range (the last 30 days: ~83,000 flags,
~230,000 history rows in range) and, as a stress figure, for the longest range
the form accepts (366 days: every row). Reference in the same run: the flag
queue's first page and a bare `SELECT COUNT(*)` of the application's flags.
Target: the default overview under 200 ms. The machine's load average is
printed with the figures (the machine is shared).
"""

import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_OVERVIEW_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_overview")
ROWS = int(os.environ.get("BENCH_OVERVIEW_ROWS", "1000000"))
SAMPLES = int(os.environ.get("BENCH_OVERVIEW_SAMPLES", "25"))
COLD_SAMPLES = int(os.environ.get("BENCH_OVERVIEW_COLD_SAMPLES", "5"))
SPAN_DAYS = 360
TARGET_MS = 200.0


def _history(vendor: str, application_id: int, reviewers: list[int]) -> None:
    """Events and reviews for the loaded flags, in three INSERT … SELECT statements.

    A decision lands (id % 3 + 1) × up to 12 hours after the flag: curators at
    three speeds. The events and reviews carry the flag's status, so replaying
    them gives exactly the current counts (as the services would have written).
    """
    from django.db import connection

    if vendor == "postgresql":
        decided = "f.created_at + ((f.id % 3 + 1) * ((f.id * 7919) % 43200)) * INTERVAL '1 second'"  # = wait
        empty = "'{}'::jsonb"
    else:
        decided = ("strftime('%Y-%m-%d %H:%M:%S', f.created_at, '+' || ((f.id % 3 + 1) * ((f.id * 7919) % 43200))"
                   " || ' seconds')")
        empty = "'{}'"
    wait = "((f.id % 3 + 1) * ((f.id * 7919) % 43200))"
    reviewer = f"CASE f.id % 3 WHEN 0 THEN {reviewers[0]} WHEN 1 THEN {reviewers[1]} ELSE {reviewers[2]} END"
    statements = [
        f"""INSERT INTO feedback_flagevent (application_id, flag_id, action, from_status, to_status, actor_kind,
                actor_user_id, actor_token_id, changes, created_at)
            SELECT f.application_id, f.id, 'created', '', 'pending', 'token', NULL, f.author_token_id, {empty},
                f.created_at
            FROM feedback_flag f WHERE f.application_id = {application_id}""",
        f"""INSERT INTO feedback_flagevent (application_id, flag_id, action, from_status, to_status, actor_kind,
                actor_user_id, actor_token_id, changes, created_at)
            SELECT f.application_id, f.id, f.status, 'pending', f.status, 'user', {reviewer}, NULL, {empty},
                {decided}
            FROM feedback_flag f WHERE f.application_id = {application_id} AND f.status <> 'pending'""",
        f"""INSERT INTO feedback_flagreview (application_id, flag_id, reviewer_id, from_status, to_status, axis,
                verdict, capture_label, note, flag_version, created_at, wait_seconds)
            SELECT f.application_id, f.id, {reviewer}, 'pending', f.status, f.axis, f.verdict, f.capture_label,
                '', 2, {decided}, {wait}
            FROM feedback_flag f WHERE f.application_id = {application_id} AND f.status <> 'pending'""",
    ]
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
        if vendor == "postgresql":
            # The steady state autovacuum keeps: a visibility map, so index-only
            # scans read no heap (a fresh bulk load has none yet).
            cursor.execute("VACUUM ANALYZE")
            # Write the load's dirty pages out now: otherwise the checkpointer
            # flushes gigabytes during the measurements, which then time the disk.
            cursor.execute("CHECKPOINT")
        else:
            cursor.execute("ANALYZE")


def _fresh_pg_database() -> str:
    name = PG_URL.rsplit("/", 1)[1]
    subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", name], check=True)
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
    return PG_URL


def _measure(fn) -> tuple[float, float, float]:
    """(wall p95, wall median, cpu p95) in ms over SAMPLES calls after 3 warm-ups."""
    from bench.common import p95

    walls, cpus = [], []
    for _ in range(SAMPLES + 3):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    walls, cpus = walls[3:], cpus[3:]
    return p95(walls) * 1000, statistics.median(walls) * 1000, p95(cpus) * 1000


def run(database: str) -> None:
    from bench.common import setup_django

    setup_django(_fresh_pg_database() if database == "postgresql" else None)
    from django.db import connection
    from django.test import Client

    from bench.bench_flags import _populate
    from consoles.models import ApiToken, Role
    from consoles.services import application_create, membership_set, token_issue
    from consoles.tests.factories import UserFactory

    app = application_create(slug="bench", name="Bench")
    app.capture_enabled = True
    app.save(update_fields=["capture_enabled"])
    token_issue(name="bench", application=app)
    token = ApiToken.objects.get(application=app)
    viewer = UserFactory(username="bench-viewer")
    membership_set(application=app, user=viewer, role=Role.VIEWER)
    reviewers = [UserFactory(username=f"bench-curator-{i}").pk for i in range(3)]
    now = datetime.now(UTC).replace(microsecond=0)
    first_at = (now - timedelta(days=SPAN_DAYS)).strftime("%Y-%m-%d %H:%M:%S")
    seconds_per_row = max(1, SPAN_DAYS * 86400 // ROWS)
    started = time.perf_counter()
    _populate(connection.vendor, app.pk, token.pk, ROWS, first_at=first_at, seconds_per_row=seconds_per_row)
    _history(connection.vendor, app.pk, reviewers)
    fill = time.perf_counter() - started
    from feedback.models import FlagEvent, FlagReview

    events, reviews = FlagEvent.objects.count(), FlagReview.objects.count()

    client = Client()
    client.force_login(viewer)
    base = f"/a/{app.slug}/overview/"
    today = now.date()
    year = f"?from={(today - timedelta(days=365)).isoformat()}&to={today.isoformat()}"

    def get(url: str):
        def call() -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        return call

    def count() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM feedback_flag WHERE application_id = %s", [app.pk])
            cursor.fetchone()

    html = client.get(base).content.decode()
    charts = html.count("<svg")
    print(f"overview on {connection.vendor}: {ROWS:,} flags, {events:,} events, {reviews:,} reviews "
          f"(filled in {fill:.0f} s); {charts} charts drawn; {SAMPLES} requests each")
    print(f"  load average (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  {'what':<40} {'wall p95':>10} {'wall p50':>10} {'cpu p95':>10}")
    results = {}
    for label, fn in (
        ("reference: SELECT COUNT(*) of the flags", count),
        ("reference: flag queue, first page", get(f"/a/{app.slug}/flags/?sort=-created")),
        ("overview, default range (last 30 days)", get(base)),
        ("overview, 366 days (every row; stress)", get(base + year)),
    ):
        wall, median, cpu = _measure(fn)
        results[label] = wall
        print(f"  {label:<40} {wall:8.1f}ms {median:8.1f}ms {cpu:8.1f}ms")
    # The first view after the stored days were forgotten (an erasure, a purge)
    # sums the range's ended days again: the worst a lead waits, once.
    from feedback.history import history_days_forget

    cold_walls = []
    for _ in range(COLD_SAMPLES):
        history_days_forget(application_id=app.pk)
        w0 = time.perf_counter()
        get(base)()
        cold_walls.append((time.perf_counter() - w0) * 1000)
    print(f"  {'overview, 30 days, first view (cold)':<40} {max(cold_walls):8.1f}ms {statistics.median(cold_walls):8.1f}ms"
          f"   (max and median of {COLD_SAMPLES} views, each after forgetting the stored days)")
    overview = results["overview, default range (last 30 days)"]
    for ref in ("reference: SELECT COUNT(*) of the flags", "reference: flag queue, first page"):
        print(f"  overview (30 days) / {ref.removeprefix('reference: ')}: x{overview / results[ref]:.1f}")
    verdict = "PASS" if overview < TARGET_MS else "FAIL"
    print(f"  overview, default range: p95 {overview:.1f} ms, target < {TARGET_MS:.0f} ms: {verdict}")
    print(f"  load average after (1, 5, 15 min): {', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if database == "postgresql":
        connection.close()
        subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", PG_URL.rsplit("/", 1)[1]],
                       check=False)


PARTS = {"sqlite": lambda: run("sqlite"), "postgresql": lambda: run("postgresql")}


def main() -> None:
    wanted = os.environ.get("BENCH_OVERVIEW_PARTS", ",".join(PARTS)).split(",")
    for part in wanted:
        # Each part in its own process: Django is configured once per process.
        subprocess.run([sys.executable, "-c", f"from bench.bench_overview import PARTS; PARTS[{part!r}]()"],
                       cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
