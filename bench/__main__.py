"""`make bench`: run every benchmark module under bench/ (bench_*.py), or the
ones named on the command line: `python -m bench flags_ingest`.

Each module has `main() -> None` that prints its figures and the ratio to a
reference measured in the same run. Benchmarks are never run by the test suite.
"""

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main() -> None:
    wanted = set(sys.argv[1:])
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_")
    )
    if wanted:
        names = [n for n in names if n.removeprefix("bench_") in wanted or n in wanted]
    if not names:
        print("no benchmarks found")
        return
    for name in names:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"bench.{name}").main()
        print(f"-- {name} took {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
