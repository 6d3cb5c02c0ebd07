"""The hand-built reads, side by side with their ORM versions (the 2x rule).

    python -m bench selectors
    BENCH_SELECTORS_DATABASES=sqlite python -m bench selectors

Two reads keep hand-built SQL because the score endpoint runs them on every
call: feedback's approved-set marker (`approved_set_marker`) and exemplars'
`score_context` (the profile, the bank settings and that marker in one round
trip). Each is timed in process against its ORM version (`*_orm`, the same
query through the QuerySet API) on the demo data: median and p95 of
BENCH_SELECTORS_CALLS calls, in microseconds, and the ratio. The rule: the
hand-built read stays only while the ratio is 2x or more on both databases. Measured
on this 2-core machine (load ~4): SQLite 23 us against 638 us (marker) and 51 us
against 1,297 us (score context); PostgreSQL 287 us against 1,217 us and 443 us
against 2,000 us (4.2x, 4.5x).
PostgreSQL runs on a scratch database (bench_selectors, dropped and created).
"""

import io
import os
import statistics
import subprocess
import sys
import time

CALLS = int(os.environ.get("BENCH_SELECTORS_CALLS", "3000"))
PG_URL = os.environ.get("BENCH_SELECTORS_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_selectors")
DATABASES = os.environ.get("BENCH_SELECTORS_DATABASES", "sqlite,postgresql").split(",")


def _timed(fn) -> tuple[float, float]:
    from bench.common import p95

    for _ in range(200):
        fn()
    samples = []
    for _ in range(CALLS):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples), p95(samples)


def measure(database: str) -> None:
    """Run in a child process: one Django setup per database."""
    from bench.common import setup_django

    setup_django(PG_URL if database == "postgresql" else None)
    from django.core.management import call_command

    call_command("load_demo", verbosity=0, stdout=io.StringIO())
    from exemplars.models import DetectorProfile
    from exemplars.selectors import score_context, score_context_orm
    from feedback.selectors import approved_set_marker, approved_set_marker_orm

    profile = DetectorProfile.objects.select_related("application").order_by("pk").first()
    application, name = profile.application, profile.name
    pairs = {
        "approved_set_marker": (lambda: approved_set_marker(application=application),
                                lambda: approved_set_marker_orm(application=application)),
        "score_context": (lambda: score_context(application=application, name=name),
                          lambda: score_context_orm(application=application, name=name)),
    }
    for read, (hand_built, orm) in pairs.items():
        hand_median, hand_p95 = _timed(hand_built)
        orm_median, orm_p95 = _timed(orm)
        ratio = orm_median / hand_median
        verdict = "keeps its SQL" if ratio >= 2 else "REPLACE WITH THE ORM (< 2x)"
        print(f"  {database:<10} {read:<20} hand-built {hand_median:7.0f} us (p95 {hand_p95:6.0f})   "
              f"ORM {orm_median:7.0f} us (p95 {orm_p95:6.0f})   {ratio:5.1f}x  {verdict}", flush=True)


def main() -> None:
    for database in DATABASES:
        if database == "postgresql":
            name = PG_URL.rsplit("/", 1)[1]
            subprocess.run(["dropdb", "-h", "127.0.0.1", "-U", "postgres", "--if-exists", name], check=True)
            subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", name], check=True)
        subprocess.run([sys.executable, "-c", f"from bench.bench_selectors import measure; measure({database!r})"],
                       check=True)


if __name__ == "__main__":
    main()
