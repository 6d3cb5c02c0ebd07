"""`python -m reliability [--quick] [--only load,races,fuzz,faults,suites]`

Runs the reliability checks of issue #9 and prints one table
(check | database | figure | target | pass); exits 1 if any row fails.
The same table is written as Markdown to var/reliability-<mode>.md (or --markdown).

    make reliability         # full: 10,000 flags per database, larger races, longer fuzzing
    make reliability-quick   # quick: what CI runs (budget: 6 minutes)

Needs PostgreSQL at 127.0.0.1:5432 (trust auth; RELIABILITY_PG_HOST/PORT/USER change
it); scratch databases reliability_* are created and dropped.
"""

import argparse
import importlib
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from .table import Row, markdown_table, text_table

SECTIONS = ["suites", "load", "races", "fuzz", "faults"]
ROOT = Path(__file__).resolve().parent.parent


def _load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reliability", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the CI mode: smaller counts, same checks")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated, of: {', '.join(SECTIONS)}")
    parser.add_argument("--markdown", type=Path, help="where to write the Markdown table")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s): {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    mode = "quick" if args.quick else "full"
    started = time.perf_counter()
    load_before = _load_average()
    print(f"reliability ({mode}): {', '.join(wanted)}; load average {load_before}", flush=True)
    rows: list[Row] = []
    for section in wanted:
        print(f"== {section}", flush=True)
        t0 = time.perf_counter()
        try:
            rows += importlib.import_module(f"reliability.{section}").run(args.quick)
        except Exception as exc:  # noqa: BLE001 - a crashed section is a failed row, the others still run
            traceback.print_exc()
            rows.append(Row(section, "-", f"crashed: {type(exc).__name__}: {exc}"[:200], "runs", False))
        print(f"-- {section} took {time.perf_counter() - t0:.0f} s", flush=True)
    duration = time.perf_counter() - started
    failed = [r for r in rows if not r.passed]
    load_after = _load_average()
    print()
    print(text_table(rows))
    counts = f"{len(rows) - len(failed)} passed, {len(failed)} failed"
    summary = f"{counts}; {mode} mode took {duration:.0f} s; load average {load_before} before, {load_after} after"
    out = args.markdown or ROOT / "var" / f"reliability-{mode}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {mode} mode, {platform.node() or 'this machine'} "
              f"({os.cpu_count()} cores, Python {platform.python_version()}), {duration:.0f} s; "
              f"load average {load_before} before, {load_after} after.")
    out.write_text(f"{header}\n\n{markdown_table(rows)}\n\n{summary}\n", encoding="utf-8")
    print(f"table written to {out}")
    print(f"{mode} mode took {duration:.0f} s; load average {load_before} before, {load_after} after")
    print(counts)  # alone on the last line, as CI reads it
    return 1 if failed or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
