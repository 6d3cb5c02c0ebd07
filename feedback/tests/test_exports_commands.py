"""The export and governance commands as a scheduler runs them."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError

from consoles.files import read_manifest
from feedback.models import ErasureRecord, ExportManifest, Flag
from feedback.services import exports as export_services
from feedback.services import flag_review

from .factories import FlagFactory

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def approved(application, curator):
    flag = FlagFactory(application=application, session_id="sess_1")
    return flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version)


def test_export_flags_writes_the_file_and_its_manifest_without_a_progress_bar_off_a_tty(approved, tmp_path):
    out = tmp_path / "acme.jsonl"
    stdout, stderr = run("export_flags", "--application", "acme", "--out", str(out))
    assert f"Exported 1 flag to {out}" in stdout
    assert stderr == ""  # not a terminal: no progress bar (cron mails stay clean)
    assert json.loads(out.read_text())["id"] == approved.public_id
    assert read_manifest(out)["rows"] == 1


def test_export_flags_json_prints_the_manifest(approved, tmp_path):
    out = tmp_path / "acme.jsonl"
    stdout, _ = run("export_flags", "--application", "acme", "--out", str(out), "--json")
    printed = json.loads(stdout)
    assert printed == read_manifest(out)
    assert printed["rows"] == 1 and printed["filters"] == {"status": "approved"}


def test_export_flags_since_last(approved, application, curator, tmp_path):
    from datetime import timedelta

    from django.utils import timezone

    Flag.objects.update(updated_at=timezone.now() - timedelta(hours=1))
    run("export_flags", "--application", "acme", "--out", str(tmp_path / "1.jsonl"), "--since-last")
    newer = FlagFactory(application=application)
    flag_review(flag=newer, reviewer=curator, status="approved", version=newer.version)
    stdout, _ = run("export_flags", "--application", "acme", "--out", str(tmp_path / "2.jsonl"), "--since-last")
    assert "Exported 1 flag changed since" in stdout
    assert [json.loads(line)["id"] for line in (tmp_path / "2.jsonl").read_text().splitlines()] == [newer.public_id]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--application", "nope"], "Unknown application 'nope'"),
        (["--application", "acme", "--status", "bogus"], "Invalid filter: --status: Use one of pending, approved, rejected, labelled, dropped, or any."),
        (["--application", "acme", "--axis", "weather"], "Invalid filter: --axis: Unknown axis 'weather'"),
    ],
)
def test_export_flags_bad_input_is_one_line_and_exit_2(approved, tmp_path, args, message):
    with pytest.raises(CommandError) as exc:
        run("export_flags", *args, "--out", str(tmp_path / "x.jsonl"))
    assert exc.value.returncode == 2 and message in str(exc.value) and "\n" not in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_export_flags_unwritable_path_exit_2(approved, tmp_path):
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--out", str(tmp_path / "missing" / "x.jsonl"))
    assert exc.value.returncode == 2 and "Cannot write" in str(exc.value)


def test_export_flags_failure_midway_exits_1_and_leaves_no_file(approved, tmp_path, monkeypatch):
    def failing(**kwargs):
        yield from []
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(export_services, "flag_export_batches", failing)
    out = tmp_path / "acme.jsonl"
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--out", str(out))
    assert exc.value.returncode == 1 and "nothing written" in str(exc.value)
    assert not out.exists() and list(tmp_path.iterdir()) == []


LOST = "server closed the connection unexpectedly\n\tThis probably means the server terminated abnormally\n"


@pytest.mark.parametrize("command", ["export_flags", "export_drafts"])
def test_a_lost_database_is_one_line_and_exit_1(approved, tmp_path, monkeypatch, command):
    def lost(**kwargs):
        raise DatabaseError(LOST)

    monkeypatch.setattr(export_services, "_export_manifest_create", lost)
    out = tmp_path / ("acme.jsonl" if command == "export_flags" else "drafts")
    with pytest.raises(CommandError) as exc:
        run(command, "--application", "acme", "--out", str(out))
    assert exc.value.returncode == 1 and "\n" not in str(exc.value)
    assert str(exc.value).endswith("server closed the connection unexpectedly This probably means the server "
                                   "terminated abnormally")
    assert not out.exists() or list(out.iterdir()) == []


def test_export_drafts_writes_three_deterministic_files(approved, tmp_path):
    stdout, _ = run("export_drafts", "--application", "acme", "--out", str(tmp_path))
    assert "Wrote 1 reviewed item as drafts" in stdout
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(first) == 3
    run("export_drafts", "--application", "acme", "--out", str(tmp_path))
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first


def test_export_drafts_names_contradicting_reviews(approved, application, curator, tmp_path):
    stdout, stderr = run("export_drafts", "--application", "acme", "--out", str(tmp_path))
    assert stderr == ""  # one review contradicts nothing
    twin = FlagFactory(application=application, region=approved.region, answer=f"  {approved.answer.upper()} ",
                       prompt=approved.prompt, message_id="another-message")
    flag_review(flag=twin, reviewer=curator, status="approved", axis=approved.axis, verdict="false_positive",
                version=twin.version)
    stdout, stderr = run("export_drafts", "--application", "acme", "--out", str(tmp_path), "--json")
    assert json.loads(stdout)["filters"]["contradicted_items"] == 2
    _, stderr = run("export_drafts", "--application", "acme", "--out", str(tmp_path))
    assert stderr.startswith("2 approved flags contradict another review (same axis, region and text")
    probes = (tmp_path / "judge-probes.draft.yaml").read_text()
    assert "# 2 items contradict another review" in probes
    assert f"contradicted_by:\n    - {twin.public_id}" in probes and f"- {approved.public_id}" in probes


def test_export_drafts_creates_the_directory_it_is_given(approved, tmp_path):
    out = tmp_path / "acme-drafts" / "2026-11"
    stdout, _ = run("export_drafts", "--application", "acme", "--out", str(out))
    assert len(list(out.iterdir())) == 3 and str(out) in stdout
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(CommandError) as exc:
        run("export_drafts", "--application", "acme", "--out", str(tmp_path / "a-file"))
    assert exc.value.returncode == 2 and "is not a directory" in str(exc.value)


def test_export_drafts_never_overwrites_an_authoritative_file(approved, tmp_path):
    (tmp_path / "judge-probes.draft.yaml").write_text("probes: [curated]\n")
    with pytest.raises(CommandError) as exc:
        run("export_drafts", "--application", "acme", "--out", str(tmp_path))
    assert exc.value.returncode == 2 and "Refusing to overwrite" in str(exc.value)
    assert (tmp_path / "judge-probes.draft.yaml").read_text() == "probes: [curated]\n"


def test_purge_expired_reports_counts_and_is_repeatable(approved, application):
    from datetime import timedelta

    from django.utils import timezone

    application.retention_days = 7
    application.save()
    Flag.objects.update(created_at=timezone.now() - timedelta(days=8))
    stdout, _ = run("purge_expired")
    assert "acme: deleted 1 flag created before" in stdout
    again, _ = run("purge_expired", "--json")
    assert json.loads(again)[0]["flags_deleted"] == 0


def test_erase_subject_lists_the_stale_exports(approved, tmp_path):
    out = tmp_path / "acme.jsonl"
    run("export_flags", "--application", "acme", "--out", str(out))
    run("export_flags", "--application", "acme", "--out", str(out))  # the same file, written again
    stdout, _ = run("erase_subject", "--application", "acme", "--session-id", "sess_1", "--requested-by", "ticket-42")
    assert "Erased 1 flag (" in stdout and stdout.count(str(out)) == 1
    assert not Flag.objects.exists()
    assert all(manifest.is_stale for manifest in ExportManifest.objects.all())
    assert ErasureRecord.objects.get().requested_by == "ticket-42"


def test_erase_subject_needs_one_subject_and_a_known_application(approved):
    with pytest.raises(CommandError):
        run("erase_subject", "--application", "acme")
    with pytest.raises(CommandError) as exc:
        run("erase_subject", "--application", "nope", "--session-id", "sess_1")
    assert exc.value.returncode == 2
    assert Flag.objects.count() == 1
    with pytest.raises(CommandError) as exc:  # a blank reference would record an erasure of nobody
        run("erase_subject", "--application", "acme", "--end-user-ref", "  ", "--requested-by", "ticket-43")
    assert exc.value.returncode == 2 and "end_user_ref: must not be blank" in str(exc.value)
    assert Flag.objects.count() == 1 and not ErasureRecord.objects.exists()


@pytest.mark.parametrize("out", ["", "   ", "exports/  "])
def test_export_commands_refuse_a_blank_out(approved, tmp_path, monkeypatch, out):
    """`--out "$DIR"` with DIR unset: nothing lands in the working directory as "." or a file named with spaces."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exports").mkdir()
    for command in ("export_flags", "export_drafts"):
        with pytest.raises(CommandError) as exc:
            run(command, "--application", "acme", "--out", out)
        assert f"argument --out: give a path, not {out!r}" in str(exc.value) and "\n" not in str(exc.value)
    assert [p.name for p in tmp_path.rglob("*")] == ["exports"] and not ExportManifest.objects.exists()


def test_export_flags_refuses_a_blank_status_instead_of_exporting_every_status(approved, application, tmp_path):
    FlagFactory(application=application)  # pending: must never reach a training corpus by accident
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--status", "", "--out", str(tmp_path / "x.jsonl"))
    assert exc.value.returncode == 2
    assert str(exc.value) == 'Invalid filter: --status: give a status, or "any" for every status'
    assert list(tmp_path.iterdir()) == [] and not ExportManifest.objects.exists()


def test_export_flags_names_a_bad_day(approved, tmp_path):
    with pytest.raises(CommandError) as exc:
        run("export_flags", "--application", "acme", "--created-from", "2026-13-01", "--out", str(tmp_path / "x.jsonl"))
    assert "argument --created-from: not a day (YYYY-MM-DD): '2026-13-01'" in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_erase_subject_refuses_an_empty_subject_or_requester_by_name(approved):
    for args, message in [
        (["--session-id", ""], "session_id: must not be blank."),
        (["--end-user-ref", ""], "end_user_ref: must not be blank."),
        (["--session-id", "sess_1", "--requested-by", ""], "Say who asked for the erasure."),
    ]:
        with pytest.raises(CommandError) as exc:
            run("erase_subject", "--application", "acme", *args)
        assert exc.value.returncode == 2 and str(exc.value).startswith(message), (args, str(exc.value))
    assert Flag.objects.count() == 1 and not ErasureRecord.objects.exists()
