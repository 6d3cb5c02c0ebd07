"""Load: N flags posted by 16 concurrent clients to gunicorn on loopback, on SQLite
and on PostgreSQL, one by one (POST /api/v1/flags) and then as many again in
batches of BATCH_SIZE (POST /api/v1/flags/batch). Zero 5xx, zero "database is
locked" (answers and server log), and the flags in the database are exactly the
acknowledged ones (201 + the 200s of replayed posts and repeated items),
compared as sets of ids. Throughput and p95 are reported."""

from bench.common import p95

from .driver import batch_jobs, client_jobs, flag_ids_in_database, post_all, post_batches
from .server import Server, issue_token, migrate, scratch_database, server_env
from .table import Row

CLIENTS = 16
REPLAY_EVERY = 20  # one post in twenty is retried by its client: the idempotent 200 path
BATCH_SIZE = 250
BATCH_CLIENTS = 4
SERVER_ERRORS = ("database is locked", "Internal Server Error", "Traceback")


def load(vendor: str, total: int) -> list[Row]:
    with scratch_database(vendor, "reliability_load") as url:
        env = server_env(url)
        migrate(env)
        token = issue_token(env, slug="load")
        jobs = client_jobs("load", CLIENTS, total, replay_every=REPLAY_EVERY)
        batches = batch_jobs("batch", BATCH_CLIENTS, total, BATCH_SIZE, repeat_every=REPLAY_EVERY)
        with Server(env, workers=4) as server:
            outcome = post_all(lambda: server.url("/api/v1/flags"), token, jobs)
            batched = post_batches(lambda: server.url("/api/v1/flags/batch"), token, batches)
            log = server.log()
        stored, orphans = flag_ids_in_database(env, "load")
    single_ids = stored - batched.acknowledged  # the flags the batches did not acknowledge
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
            f"{len(single_ids)} stored, {len(outcome.acknowledged)} acknowledged ids "
            f"({outcome.count(201)} x 201 + {outcome.count(200)} x 200), "
            f"{len(outcome.acknowledged - stored)} acknowledged but not stored, {orphans} without history",
            f"equal sets of {total}, 0 without history",
            single_ids == outcome.acknowledged and len(single_ids) == total and orphans == 0),
        Row("load: throughput", vendor, f"{acked / outcome.wall:.0f} flags/s ({outcome.wall:.1f} s)",
            "reported", acked > 0),
        Row("load: p95 latency", vendor, f"{p95(outcome.latencies) * 1000:.0f} ms", "reported", acked > 0),
    ]
    items = sum(len(b["flags"]) for job in batches for b in job)
    batch_acked = batched.count("item 200", "item 201")
    rows += [
        Row("load: batch 5xx / failed connections", vendor,
            f"{batched.five_xx} / {batched.statuses[0]} of {sum(len(j) for j in batches)} batches of up to "
            f"{BATCH_SIZE} ({items} items, {BATCH_CLIENTS} clients); statuses {dict(sorted(batched.statuses.items(), key=str))}",
            "0 / 0", batched.five_xx + batched.statuses[0] == 0 and batched.locked == 0),
        Row("load: batch flags stored = acknowledged ids", vendor,
            f"{len(stored - outcome.acknowledged)} stored, {len(batched.acknowledged)} acknowledged ids "
            f"({batched.count('item 201')} x 201 + {batched.count('item 200')} x 200)",
            f"equal sets of {total}",
            stored - outcome.acknowledged == batched.acknowledged and len(batched.acknowledged) == total),
        Row("load: batch throughput", vendor, f"{batch_acked / batched.wall:.0f} flags/s ({batched.wall:.1f} s)",
            "reported", batch_acked > 0),
    ]
    for sample in outcome.server_errors + batched.server_errors:
        print(f"  5xx sample ({vendor}): {sample}")
    return rows


def run(quick: bool) -> list[Row]:
    total = 1_000 if quick else 10_000
    return load("sqlite", total) + load("postgresql", total)
