"""Concurrent clients posting flags, and what they were told."""

import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .server import request


@dataclass
class Outcome:
    statuses: Counter = field(default_factory=Counter)
    acknowledged: set[str] = field(default_factory=set)  # ids answered 201 or 200
    latencies: list[float] = field(default_factory=list)
    locked: int = 0  # answers that mention "database is locked"
    server_errors: list[str] = field(default_factory=list)  # a few 5xx bodies, for the report
    wall: float = 0.0

    @property
    def five_xx(self) -> int:
        return sum(n for status, n in self.statuses.items() if isinstance(status, int) and status >= 500)

    def count(self, *statuses: int) -> int:
        return sum(self.statuses[s] for s in statuses)


def flag_body(label: str, client: int, i: int) -> dict:
    return {
        "region": "answer", "problem": "fabricated", "note": "invented a citation",
        "prompt": "Who won the 1923 Paris Review prize? " * 4,
        "answer": "The 1923 Paris Review prize went to ... " * 8,
        "detector_scores": {"hallucination": 0.12, "jailbreak": 0.01},
        "message_id": f"{label}-{client}-{i}", "session_id": f"sess-{client}",
    }


def client_jobs(label: str, clients: int, total: int, replay_every: int = 0) -> list[list[dict]]:
    """`total` distinct flags split over `clients`; every `replay_every`-th post is
    followed by a replay of the same flag (a client retrying), answered 200."""
    jobs: list[list[dict]] = [[] for _ in range(clients)]
    for n in range(total):
        c = n % clients
        body = flag_body(label, c, n)
        jobs[c].append(body)
        if replay_every and n % replay_every == replay_every - 1:
            jobs[c].append(body)
    return jobs


def _run_clients(url: Callable[[], str], token: str, jobs: list[list[dict]],
                 acknowledge: Callable[[int, bytes, "Outcome"], int]) -> Outcome:
    """Each job list is one client, posting in order; all clients at once.
    `acknowledge(status, body, outcome)` records what one answer acknowledged and
    returns how many flags that was."""
    import time

    outcome = Outcome()
    lock = threading.Lock()

    def client(bodies: list[dict]) -> None:
        mine = Outcome()
        for body in bodies:
            status, raw, elapsed = request("POST", url(), body, token)
            mine.statuses[status] += 1
            mine.latencies.append(elapsed)
            if b"database is locked" in raw:
                mine.locked += 1
            if status < 300:
                acknowledge(status, raw, mine)
            elif status >= 500 and len(mine.server_errors) < 3:
                mine.server_errors.append(f"{status} {raw[:200]!r}")
        with lock:
            outcome.statuses.update(mine.statuses)
            outcome.acknowledged |= mine.acknowledged
            outcome.latencies.extend(mine.latencies)
            outcome.locked += mine.locked
            outcome.server_errors.extend(mine.server_errors[: max(0, 3 - len(outcome.server_errors))])

    threads = [threading.Thread(target=client, args=(bodies,)) for bodies in jobs]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcome.wall = time.perf_counter() - started
    return outcome


def post_all(url: Callable[[], str], token: str, jobs: list[list[dict]],
             on_ack: Callable[[int], None] | None = None) -> Outcome:
    """Each job list is one client, posting in order; all clients at once."""

    def acknowledge(status: int, raw: bytes, mine: Outcome) -> int:
        if status not in (200, 201):
            return 0
        mine.acknowledged.add(json.loads(raw)["id"])
        if on_ack is not None:
            on_ack(1)
        return 1

    return _run_clients(url, token, jobs, acknowledge)


def batch_jobs(label: str, clients: int, total: int, size: int, repeat_every: int = 0) -> list[list[dict]]:
    """`total` distinct flags in batches of `size` over `clients`; every
    `repeat_every`-th flag appears again in the next batch (a client resending
    part of a batch), answered 200 with its id."""
    bodies = [flag_body(label, n % clients, n) for n in range(total)]
    batches: list[list[dict]] = []
    carried: list[dict] = []
    taken = 0
    while taken < total:
        fresh = bodies[taken:taken + size - len(carried)]
        taken += len(fresh)
        batches.append(carried + fresh)
        carried = [b for n, b in enumerate(fresh) if repeat_every and n % repeat_every == repeat_every - 1][:1]
    jobs: list[list[dict]] = [[] for _ in range(clients)]
    for n, batch in enumerate(batches):
        jobs[n % clients].append({"flags": batch})
    return jobs


def post_batches(url: Callable[[], str], token: str, jobs: list[list[dict]]) -> Outcome:
    """As `post_all`, for POST /api/v1/flags/batch: each item answered 201 or 200
    is acknowledged; `statuses` counts the requests' statuses and the items' (as
    `item 201`, ...)."""

    def acknowledge(status: int, raw: bytes, mine: Outcome) -> int:
        if status != 200:
            return 0
        acknowledged = 0
        for item in json.loads(raw)["items"]:
            mine.statuses[f"item {item['status']}"] += 1
            if item["status"] in (200, 201):
                mine.acknowledged.add(item["id"])
                acknowledged += 1
        return acknowledged

    return _run_clients(url, token, jobs, acknowledge)


def flag_ids_in_database(env: dict[str, str], slug: str) -> tuple[set[str], int]:
    """(public ids of the application's flags, flags without their `created` event):
    every acknowledged flag is a row, written with its event before its answer."""
    from .server import django_script

    out = django_script(env, (
        "import json\n"
        "from feedback.models import Flag, FlagEvent\n"
        f"flags = Flag.objects.filter(application__slug={slug!r})\n"
        "ids = list(flags.values_list('public_id', flat=True))\n"
        "orphans = flags.exclude(pk__in=FlagEvent.objects.filter(action='created').values('flag_id')).count()\n"
        "print(json.dumps({'ids': ids, 'orphans': orphans}))"
    ))
    data = json.loads(out.splitlines()[-1])
    return set(data["ids"]), data["orphans"]
