"""Helpers for benchmarks: a throwaway database configured like production."""

import os
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager


def setup_django(database_url: str | None = None) -> None:
    """Point Django at a scratch database before importing models.

    Without `database_url`: a fresh SQLite file in a temporary folder.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "consoles.settings")
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
        os.environ["SQLITE_PATH"] = os.path.join(tempfile.mkdtemp(prefix="bench-"), "bench.sqlite3")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[18] if len(samples) >= 20 else max(samples)


@contextmanager
def timer() -> Iterator[list[float]]:
    import time

    box: list[float] = []
    start = time.perf_counter()
    yield box
    box.append(time.perf_counter() - start)
