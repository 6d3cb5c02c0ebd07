"""Plan time at 10,000 and 100,000 cases with evidence.

Target: under 5 s at 100,000 cases; growth no worse than n log n, printed as
the ratio of the two times next to the n log n ratio (12.5 for 10k -> 100k).

    python -m bench sampling                      # SQLite scratch file
    BENCH_SAMPLING_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_sampling python -m bench sampling
    BENCH_SAMPLING_ROWS=20000,200000 python -m bench sampling
"""

import hashlib
import math
import os
import random
import time

SUBJECTS = 800
STRATEGIES = ("sensor_disagreement", "high_uncertainty", "verdict_changed_across_findings")
VERDICTS = ("corroborated", "refuted", "qualified", "verified")
# A mining pipeline's sensor suite: each sensor has one trust class (seed 002's
# bash exit code and git outcome read the agent's own turn; the git tree is
# observed on the host; CI is external; the model's self-report is internal).
SENSORS = (
    ("bash_exit", "agent_adjacent"),
    ("git_outcome", "agent_adjacent"),
    ("git_tree", "host_observed"),
    ("ci_status", "independent_external"),
    ("self_report", "model_internal"),
)


def _evidence_for(case, rng: random.Random) -> list:
    """0 to 4 records from distinct sensors; agent-channel records usually read
    the same agent turn; about one record in five has no recorded provenance."""
    from adjudication.models import Evidence

    records = []
    turn = f"evt-{case.case_id}"
    for position, (sensor, trust) in enumerate(rng.sample(SENSORS, rng.randrange(5))):
        if rng.random() < 0.2:
            event = ""
        elif trust in ("agent_adjacent", "model_internal") and rng.random() < 0.8:
            event = turn
        else:
            event = f"{turn}-{sensor}"
        records.append(
            Evidence(
                case=case,
                position=position,
                evidence_id=f"{case.case_id}-{sensor}",
                relation="contradicts" if rng.random() < 0.25 else "supports",
                trust_class=trust,
                source_event_id=event,
                sensor=sensor,
            )
        )
    return records


def _populate(application, n: int, rng: random.Random) -> int:
    """n cases with 0 to 4 evidence records each (mean 2); returns the evidence count."""
    from adjudication.models import Case, Evidence

    evidence_total = 0
    batch = 5000
    for start in range(0, n, batch):
        cases = []
        for i in range(start, min(n, start + batch)):
            case_id = f"{application.slug}-{i:07}"
            cases.append(
                Case(
                    application=application,
                    case_id=case_id,
                    claim_subject=f"subject {rng.randrange(SUBJECTS)}",
                    claim_text="bench claim",
                    local_verdict=rng.choice(VERDICTS),
                    mined_by=sorted(rng.sample(STRATEGIES, rng.randrange(len(STRATEGIES) + 1))),
                    sanitization_altered_outcome=rng.random() < 0.05,
                    digest=hashlib.sha256(case_id.encode()).hexdigest(),
                )
            )
        Case.objects.bulk_create(cases)
        evidence = [record for case in cases for record in _evidence_for(case, rng)]
        Evidence.objects.bulk_create(evidence)
        evidence_total += len(evidence)
    return evidence_total


def _time_plan(application) -> tuple[float, float, float, int]:
    """(wall s to compute the plan, wall s to make and store it, CPU s of the latter, selected).

    CPU time is printed next to wall time because this machine is shared: on
    SQLite the database work runs in this process, so CPU time is the cost of
    the plan itself and wall time adds the waiting for a core.
    """
    from sampling.services import plan_create, plan_draft

    started = time.perf_counter()
    draft = plan_draft(application=application, budget=200)
    computed = time.perf_counter() - started
    started, cpu_started = time.perf_counter(), time.process_time()
    plan, created = plan_create(application=application, budget=200, actor=None)
    stored, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert created and plan.plan_digest == draft.plan.digest
    return computed, stored, cpu, plan.selected_count


def main() -> None:
    from bench.common import setup_django

    setup_django(os.environ.get("BENCH_SAMPLING_DATABASE_URL"))
    from django.db import connection

    from consoles.models import Application

    sizes = [int(x) for x in os.environ.get("BENCH_SAMPLING_ROWS", "10000,100000").split(",")]
    print(f"database: {connection.vendor}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rng = random.Random(2026)
    times: dict[int, float] = {}
    for n in sizes:
        slug = f"bench-{n}-{int(time.time())}"
        application = Application.objects.create(slug=slug, name=slug)
        started = time.perf_counter()
        evidence = _populate(application, n, rng)
        if connection.vendor == "postgresql":
            # Production tables have planner statistics; freshly bulk-loaded ones do not yet.
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        print(f"{n:>7} cases, {evidence} evidence rows loaded in {time.perf_counter() - started:.1f} s")
        computed, stored, cpu, selected = _time_plan(application)
        times[n] = stored
        verdict = ""
        if n == 100_000:
            verdict = f"  [target < 5 s: {'MET' if stored < 5 else 'MISSED'} (wall)]"
        print(
            f"{n:>7} cases: plan computed in {computed:.2f} s (preview); made and stored in "
            f"{stored:.2f} s wall, {cpu:.2f} s CPU; {selected} selected{verdict}"
        )
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        ratio = times[large] / times[small]
        nlogn = (large * math.log(large)) / (small * math.log(small))
        print(
            f"time ratio {large}/{small}: {ratio:.2f}  vs n log n ratio {nlogn:.2f}  "
            f"({'no worse than n log n' if ratio <= nlogn else 'WORSE than n log n'})"
        )
