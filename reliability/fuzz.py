"""Fuzzing: schemathesis against /api/openapi.json of the console served by
gunicorn (demo data loaded), once with an application token and once with a
personal token. Checks: no 5xx, every response's body and content type match
the schema. SQLite in both modes; PostgreSQL too in full mode."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .server import ROOT, Server, django_script, migrate, scratch_database, server_env
from .table import Row

CHECKS = "not_a_server_error,response_schema_conformance,content_type_conformance"


def _schemathesis(server: Server, token: str, examples: int) -> dict:
    report = Path(tempfile.mkstemp(prefix="schemathesis-", suffix=".json")[1])
    command = [str(Path(sys.executable).parent / "st"), "run", server.url("/api/openapi.json"),
               "-H", f"Authorization: Bearer {token}", "--checks", CHECKS, "--max-examples", str(examples),
               "--seed", "20261130", "--phases", "examples,coverage,fuzzing", "--workers", "2",
               "--report", "json", "--report-json-path", str(report), "--warnings", "off"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        data = {"failures": [], "errors": [result.stdout[-1500:] + result.stderr[-1500:]],
                "test_cases": {}, "operations": {}}
    data["exit_code"] = result.returncode
    if result.returncode:
        print(result.stdout[-4000:])
    return data


def fuzz(vendor: str, examples: int) -> list[Row]:
    with scratch_database(vendor, "reliability_fuzz") as url:
        env = server_env(url)
        migrate(env)
        tokens = json.loads(django_script(env, (
            "import io, json\n"
            "from django.core.management import call_command\n"
            "from django.contrib.auth import get_user_model\n"
            "from consoles.management.commands.load_demo import DEMO_TOKEN_SECRETS\n"
            "from consoles.services import token_issue\n"
            "call_command('load_demo', '--scratch', stdout=io.StringIO())\n"
            "user = get_user_model().objects.get(username='curator')\n"
            "print(json.dumps({'application token': DEMO_TOKEN_SECRETS['acme-chat'],\n"
            "                  'personal token': token_issue(name='fuzz', user=user).secret}))"
        )).splitlines()[-1])
        rows = []
        with Server(env, workers=2) as server:
            for kind, token in tokens.items():
                data = _schemathesis(server, token, examples)
                cases = data.get("test_cases", {})
                failures, errors = data.get("failures", []), data.get("errors", [])
                for failure in (failures + errors)[:3]:
                    print(f"  fuzz problem ({vendor}, {kind}): {json.dumps(failure)[:600]}")
                rows.append(Row(
                    f"fuzz: schemathesis, {kind}", vendor,
                    f"{cases.get('generated', 0)} cases over {data.get('operations', {}).get('tested', 0)} operations; "
                    f"{cases.get('unique_failures', len(failures))} failures, {len(errors)} errors",
                    "0 x 5xx, 0 schema mismatches",
                    data["exit_code"] == 0 and not failures and not errors and cases.get("generated", 0) > 0,
                ))
    return rows


def run(quick: bool) -> list[Row]:
    if quick:
        return fuzz("sqlite", 8)
    return fuzz("sqlite", 40) + fuzz("postgresql", 40)
