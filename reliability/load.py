"""Load: N flags posted by 16 concurrent clients to gunicorn on loopback, on SQLite
and on PostgreSQL. Zero 5xx, zero "database is locked" (answers and server log),
and the flags in the database are exactly the acknowledged ones (201 + the 200s
of replayed posts), compared as sets of ids. Throughput and p95 are reported."""

from bench.common import p95

from .driver import client_jobs, flag_ids_in_database, post_all
from .server import Server, issue_token, migrate, scratch_database, server_env
from .table import Row

CLIENTS = 16
REPLAY_EVERY = 20  # one post in twenty is retried by its client: the idempotent 200 path
SERVER_ERRORS = ("database is locked", "Internal Server Error", "Traceback")


def load(vendor: str, total: int) -> list[Row]:
    with scratch_database(vendor, "reliability_load") as url:
        env = server_env(url)
        migrate(env)
        token = issue_token(env, slug="load")
        jobs = client_jobs("load", CLIENTS, total, replay_every=REPLAY_EVERY)
        with Server(env, workers=4) as server:
            outcome = post_all(lambda: server.url("/api/v1/flags"), token, jobs)
            log = server.log()
        stored, orphans = flag_ids_in_database(env, "load")
    posts = sum(len(j) for j in jobs)
    log_hits = sum(log.count(marker) for marker in SERVER_ERRORS)
    failed_connections = outcome.statuses[0]
    acked = outcome.count(200, 201)
    bad = outcome.five_xx + failed_connections
    rows = [
        Row("load: 5xx / failed connections", vendor,
            f"{outcome.five_xx} / {failed_connections} of {posts} posts ({total} flags + {posts - total} replays, "
            f"{CLIENTS} clients); statuses {dict(sorted(outcome.statuses.items()))}",
            "0 / 0", bad == 0),
        Row("load: 'database is locked' / errors in server log", vendor,
            f"{outcome.locked} / {log_hits}", "0 / 0", outcome.locked == 0 and log_hits == 0),
        Row("load: flags stored = acknowledged ids", vendor,
            f"{len(stored)} stored, {len(outcome.acknowledged)} acknowledged ids "
            f"({outcome.count(201)} x 201 + {outcome.count(200)} x 200), "
            f"{len(stored ^ outcome.acknowledged)} differ, {orphans} without history",
            f"equal sets of {total}, 0 without history",
            stored == outcome.acknowledged and len(stored) == total and orphans == 0),
        Row("load: throughput", vendor, f"{acked / outcome.wall:.0f} flags/s ({outcome.wall:.1f} s)",
            "reported", acked > 0),
        Row("load: p95 latency", vendor, f"{p95(outcome.latencies) * 1000:.0f} ms", "reported", acked > 0),
    ]
    for sample in outcome.server_errors:
        print(f"  5xx sample ({vendor}): {sample}")
    return rows


def run(quick: bool) -> list[Row]:
    total = 1_000 if quick else 10_000
    return load("sqlite", total) + load("postgresql", total)
