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
TRUST = ("host_observed", "agent_adjacent", "model_internal", "independent_external")


def _populate(application, n: int, rng: random.Random) -> int:
    """n cases with 0 to 4 evidence records each (mean 2.5); returns the evidence count."""
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
        evidence = []
        for case in cases:
            for position in range(rng.randrange(5)):
                evidence.append(
                    Evidence(
                        case=case,
                        position=position,
                        evidence_id=f"e{position}",
                        relation=rng.choice(("supports", "supports", "contradicts")),
                        trust_class=rng.choice(TRUST),
                        source_event_id=f"evt-{rng.randrange(4)}" if rng.random() < 0.8 else None,
                        correlation_group=None,
                        sensor=f"sensor-{position}",
                    )
                )
        Evidence.objects.bulk_create(evidence)
        evidence_total += len(evidence)
    return evidence_total


def _time_plan(application) -> tuple[float, float, int]:
    """(seconds to compute the plan, seconds to store it too, selected)."""
    from sampling.services import plan_create, plan_draft

    started = time.perf_counter()
    draft = plan_draft(application=application, budget=200)
    computed = time.perf_counter() - started
    started = time.perf_counter()
    plan, created = plan_create(application=application, budget=200, actor=None)
    stored = time.perf_counter() - started
    assert created and plan.plan_digest == draft.plan.digest
    return computed, stored, plan.selected_count


def main() -> None:
    from bench.common import setup_django

    setup_django(os.environ.get("BENCH_SAMPLING_DATABASE_URL"))
    from django.db import connection

    from consoles.models import Application

    sizes = [int(x) for x in os.environ.get("BENCH_SAMPLING_ROWS", "10000,100000").split(",")]
    print(f"database: {connection.vendor}")
    rng = random.Random(2026)
    times: dict[int, float] = {}
    for n in sizes:
        slug = f"bench-{n}-{int(time.time())}"
        application = Application.objects.create(slug=slug, name=slug)
        started = time.perf_counter()
        evidence = _populate(application, n, rng)
        print(f"{n:>7} cases, {evidence} evidence rows loaded in {time.perf_counter() - started:.1f} s")
        computed, stored, selected = _time_plan(application)
        times[n] = stored
        print(
            f"{n:>7} cases: plan computed in {computed:.2f} s (preview); "
            f"made and stored in {stored:.2f} s; {selected} selected"
            + ("  [target < 5 s: MET]" if n == 100_000 and stored < 5 else "")
            + ("  [target < 5 s: MISSED]" if n == 100_000 and stored >= 5 else "")
        )
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        ratio = times[large] / times[small]
        nlogn = (large * math.log(large)) / (small * math.log(small))
        print(
            f"time ratio {large}/{small}: {ratio:.2f}  vs n log n ratio {nlogn:.2f}  "
            f"({'no worse than n log n' if ratio <= nlogn else 'WORSE than n log n'})"
        )
