"""Faults, for real:

- restart: gunicorn is killed (SIGKILL to master and workers, mid-load) and
  started again; every flag acknowledged before the crash is still there, and no
  flag is stored without its history;
- database away (PostgreSQL): mid-load the database stops accepting connections
  and every open one is terminated; requests then get 503 (never 500, never a
  hang), nothing is half-written, and the service recovers when it is back.
"""

import threading
import time

from .driver import client_jobs, flag_ids_in_database, post_all
from .server import Server, issue_token, migrate, psql, scratch_database, server_env
from .table import Row


def restart(vendor: str, total: int) -> list[Row]:
    with scratch_database(vendor, "reliability_restart") as url:
        env = server_env(url)
        migrate(env)
        token = issue_token(env, slug="restart")
        current = {"server": Server(env, workers=2).start()}
        acks = {"n": 0}
        crashed = threading.Event()
        lock = threading.Lock()

        def on_ack(n: int) -> None:
            with lock:
                acks["n"] += n
                due = acks["n"] >= total // 3 and not crashed.is_set()
                if due:
                    crashed.set()
            if due:
                threading.Thread(target=crash_and_restart).start()

        def crash_and_restart() -> None:
            current["server"].crash()
            current["server"] = Server(env, workers=2).start()

        def url() -> str:
            if not crashed.is_set() or current["server"].process.poll() is None:
                return current["server"].url("/api/v1/flags")
            time.sleep(0.05)  # down: the client's post fails and it goes on, as a real client would
            return current["server"].url("/api/v1/flags")

        try:
            outcome = post_all(url, token, client_jobs("restart", 4, total), on_ack=on_ack)
        finally:
            time.sleep(0.5)
            current["server"].stop()
        stored, orphans = flag_ids_in_database(env, "restart")
    lost = outcome.acknowledged - stored
    return [Row(
        "faults: server killed and restarted mid-load", vendor,
        f"{len(outcome.acknowledged)} acknowledged, {len(lost)} lost, {orphans} without history, "
        f"{outcome.statuses[0]} posts failed while it was down, {outcome.five_xx} x 5xx",
        "0 lost, 0 without history",
        crashed.is_set() and not lost and orphans == 0 and outcome.five_xx == 0,
    )]


def database_away(total: int) -> list[Row]:
    name = "reliability_faults"
    with scratch_database("postgresql", name) as url:
        env = server_env(url)
        migrate(env)
        token = issue_token(env, slug="faults")
        with Server(env, workers=2) as server:
            phases = {}
            jobs = client_jobs("before", 4, total)
            phases["before"] = post_all(lambda: server.url("/api/v1/flags"), token, jobs)
            psql(f"ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false")
            psql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
            try:
                phases["away"] = post_all(lambda: server.url("/api/v1/flags"), token,
                                          client_jobs("away", 4, max(40, total // 10)))
            finally:
                psql(f"ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true")
            phases["after"] = post_all(lambda: server.url("/api/v1/flags"), token, client_jobs("after", 4, total))
            log = server.log()
        stored, orphans = flag_ids_in_database(env, "faults")
    away, after = phases["away"], phases["after"]
    acked = set().union(*(p.acknowledged for p in phases.values()))
    other_5xx = sum(n for p in phases.values() for s, n in p.statuses.items() if s >= 500 and s != 503)
    hangs = sum(p.statuses[0] for p in phases.values())
    return [
        Row("faults: database away mid-load", "postgresql",
            f"{away.statuses[503]} of {sum(away.statuses.values())} posts got 503 while it was away; "
            f"{other_5xx} other 5xx, {hangs} failed connections",
            "503 only", away.statuses[503] > 0 and other_5xx == 0 and hangs == 0),
        Row("faults: nothing half-written, nothing lost", "postgresql",
            f"{orphans} flags without history, {len(acked - stored)} acknowledged but missing, "
            f"{len(stored - acked)} stored but not acknowledged",
            "0, 0, 0", orphans == 0 and not (acked - stored) and not (stored - acked)),
        Row("faults: service back with the database", "postgresql",
            f"{after.count(201)} of {total} posts accepted after; 'Traceback' in log: {log.count('Traceback')}",
            f"{total}", after.count(201) == total),
    ]


def run(quick: bool) -> list[Row]:
    total = 200 if quick else 1_000
    rows = restart("sqlite", total)
    if not quick:
        rows += restart("postgresql", total)
    return rows + database_away(total // 2)
