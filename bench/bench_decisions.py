"""Decisions: 8 curators at once, each `POST /api/v1/flags/{id}/review` on its own
flags (distinct flags: no conflicts), through gunicorn with 4 workers, on SQLite
and on PostgreSQL. Target (issue 29): p95 <= 100 ms on both databases.

    .venv/bin/python -m bench decisions
    BENCH_DECISIONS_DBS=sqlite BENCH_DECISIONS_PER_CURATOR=100 .venv/bin/python -m bench decisions

Each curator has a personal token and decides its own pending flags one after
the other (approve or reject, with the version it read when seeding), as fast
as the server answers. Shown per database: decisions/s, p50, p95, p99 and the
slowest, over every request after a warm-up round; every answer must be 200.
Reference in the same run: GET /healthz by the same 8 clients (the framework
and the HTTP stack, no database write).

BENCH_DECISIONS_SERVERS=gunicorn,runserver also serves SQLite as `make run`
does (`manage.py runserver`, a thread and a new connection per request, the
default SQLite settings without DATABASE_URL), where the issue first saw the tail.
"""

import json
import os
import statistics
import threading
import time

from bench.common import p95

CURATORS = int(os.environ.get("BENCH_DECISIONS_CURATORS", "8"))
PER_CURATOR = int(os.environ.get("BENCH_DECISIONS_PER_CURATOR", "150"))
WARM = 10  # per curator, not counted
WORKERS = int(os.environ.get("BENCH_DECISIONS_WORKERS", "4"))
DBS = [d for d in os.environ.get("BENCH_DECISIONS_DBS", "sqlite,postgresql").split(",") if d]
SERVERS = [s for s in os.environ.get("BENCH_DECISIONS_SERVERS", "gunicorn").split(",") if s]
TARGET_P95_MS = 100.0

SEED = """
import json
from django.contrib.auth import get_user_model
from consoles.models import Role
from consoles.services import application_create, membership_set, token_issue
from feedback.services import Actor, flag_submit

app = application_create(slug="bench-decisions", name="Decisions benchmark")
integration = Actor(token=token_issue(name="integration", application=app).token)
curators = {}
for n in range(CURATORS):
    user = get_user_model().objects.create_user(f"bench-curator{n}")
    membership_set(application=app, user=user, role=Role.CURATOR)
    flags = []
    for i in range(PER_CURATOR):
        result = flag_submit(application=app, actor=integration, region="answer", problem="fabricated",
                             note="invented a citation", prompt="Who won the 1923 prize? " * 4,
                             answer="It went to ... " * 8, message_id=f"decide-{n}-{i}")
        flags.append([result.flag.public_id, result.flag.version])
    curators[user.username] = {"token": token_issue(name="laptop", user=user).secret, "flags": flags}
print(json.dumps(curators))
"""


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _run(server, curators: dict, *, healthz: bool = False) -> dict:
    from reliability.server import request

    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    barrier = threading.Barrier(len(curators))

    def curator(n: int, seat: dict) -> None:
        mine, codes = [], {}
        barrier.wait()
        for i, (public_id, version) in enumerate(seat["flags"]):
            if healthz:
                status, _, seconds = request("GET", server.url("/healthz"))
            else:
                body = {"status": "approved" if i % 3 else "rejected", "version": version, "note": f"c{n}"}
                status, _, seconds = request("POST", server.url(f"/api/v1/flags/{public_id}/review"), body,
                                             seat["token"])
            if i >= WARM:
                mine.append(seconds)
            codes[status] = codes.get(status, 0) + 1
        with lock:
            latencies.extend(mine)
            for code, count in codes.items():
                statuses[code] = statuses.get(code, 0) + count

    threads = [threading.Thread(target=curator, args=(n, seat)) for n, seat in enumerate(curators.values())]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    ms = [s * 1000 for s in latencies]
    return {"rps": sum(statuses.values()) / wall, "p50": statistics.median(ms), "p95": p95(ms),
            "p99": _percentile(ms, 0.99), "max": max(ms), "statuses": statuses}


class _Runserver:
    """`manage.py runserver` as `make run` starts it (threaded, no autoreload)."""

    def __init__(self, env: dict[str, str]) -> None:
        from reliability.server import free_port

        self.env, self.port = env, free_port()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> "_Runserver":
        import subprocess
        import sys
        import urllib.request

        from reliability.server import ROOT

        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"],
            cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url("/healthz"), timeout=2)  # noqa: S310 - loopback
                return self
            except OSError:
                time.sleep(0.2)
        self.process.kill()
        raise RuntimeError("runserver did not answer within 60 s")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def one(database: str, server_kind: str = "gunicorn") -> None:
    from reliability.server import Server, django_script, migrate, scratch_database, server_env

    with scratch_database(database, "bench_decisions") as url:
        env = server_env(url)
        if server_kind == "runserver" and database == "sqlite":
            # As `make run`: the settings' own SQLite block, no DATABASE_URL.
            env.pop("DATABASE_URL")
            env["SQLITE_PATH"] = url.removeprefix("sqlite:///")
        migrate(env)
        head = f"CURATORS = {CURATORS}\nPER_CURATOR = {PER_CURATOR + WARM}\n"
        curators = json.loads(django_script(env, head + SEED).splitlines()[-1])
        serving = _Runserver(env) if server_kind == "runserver" else Server(env, workers=WORKERS)
        with serving as server:
            reference = _run(server, curators, healthz=True)
            result = _run(server, curators)
    ok = result["p95"] <= TARGET_P95_MS and set(result["statuses"]) == {200}
    how = f"gunicorn {WORKERS} workers" if server_kind == "gunicorn" else "runserver (make run)"
    print(f"decisions on {database}: {CURATORS} curators x {PER_CURATOR} distinct flags, {how}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  POST /flags/{{id}}/review: {result['rps']:6.1f} decisions/s  p50 {result['p50']:6.1f} ms  "
          f"p95 {result['p95']:6.1f} ms  p99 {result['p99']:6.1f} ms  max {result['max']:6.1f} ms  "
          f"{result['statuses']}  (target p95 <= {TARGET_P95_MS:.0f} ms: {'PASS' if ok else 'FAIL'})")
    print(f"  reference GET /healthz:   {reference['rps']:6.1f} req/s        p50 {reference['p50']:6.1f} ms  "
          f"p95 {reference['p95']:6.1f} ms  p99 {reference['p99']:6.1f} ms", flush=True)


def main() -> None:
    for server_kind in SERVERS:
        for database in DBS if server_kind == "gunicorn" else ["sqlite"]:
            one(database, server_kind)
