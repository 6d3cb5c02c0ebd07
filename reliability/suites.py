"""The parts that are plain tests live in the normal suite (and run in CI on both
databases); the harness runs them again and counts them in its table."""

import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

from .server import ROOT, pg_url
from .table import Row

GROUPS = {
    "bad-input catalogue (API, pages, browser-free)": ["consoles/tests/test_bad_input.py"],
    "tenant isolation sweep (every route, every API operation)": [
        "consoles/tests/test_tenant_sweep.py", "consoles/tests/test_access.py"],
    "security settings (deploy check, cookies, CSP, throttle, tokens)": [
        "consoles/tests/test_security.py", "consoles/tests/test_deploy.py"],
    "faults and exports (DB lost -> 503, killed export, --out, formulas)": [
        "consoles/tests/test_faults.py", "feedback/tests/test_export_safety.py"],
}


def _pytest(files: list[str], database_url: str | None) -> dict[str, Counter]:
    """One pytest run; outcome counts per test file."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    if database_url:
        env["DATABASE_URL"] = database_url
    report = Path(tempfile.mkstemp(prefix="reliability-junit-", suffix=".xml")[1])
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", f"--junitxml={report}", *files],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if result.returncode:
        print(result.stdout[-3000:])
    counts: dict[str, Counter] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):  # noqa: S314 - pytest's own report
        path = case.get("classname", "").replace(".", "/") + ".py"  # tests are module functions
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        counts.setdefault(path, Counter())[outcome] += 1
    return counts


def run(quick: bool) -> list[Row]:
    databases = [("sqlite", None)] + ([] if quick else [("postgresql", pg_url("reliability_suites"))])
    files = [f for group in GROUPS.values() for f in group]
    rows = []
    for vendor, url in databases:
        by_file = _pytest(files, url)
        for name, group in GROUPS.items():
            total = sum((by_file.get(f, Counter()) for f in group), Counter())
            known = f" ({total['xfailed']} known, see docs/reliability.md)" if total["xfailed"] else ""
            rows.append(Row(f"tests: {name}", vendor, f"{total['passed']} passed, {total['failed']} failed{known}",
                            "0 failed", total["failed"] == 0 and total["passed"] > 0))
    return rows
