import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from adjudication.models import Case, Evidence

from .factories import case_payload

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str, CommandError | None]:
    out, err = StringIO(), StringIO()
    try:
        call_command("import_cases", *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def write(tmp_path, lines: list[str]):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_import_reports_bad_lines_by_number_and_imports_the_rest(tmp_path, application):
    bad_relation = case_payload("c3")
    bad_relation["evidence"][0]["relation"] = "maybe"
    path = write(
        tmp_path,
        [
            json.dumps(case_payload("c1")),
            "{not json",
            json.dumps(bad_relation),
            "",
            json.dumps(case_payload("c5")),
            json.dumps({"case_id": "c6"}),
        ],
    )
    out, err, exc = run("--application", "acme", path)
    assert "2 imported, 0 unchanged, 3 failed" in out
    assert "line 2: not valid JSON" in err
    assert "line 3: evidence.0.relation: Input should be 'supports' or 'contradicts'" in err
    assert "line 6: claim: Field required" in err
    assert exc is not None and exc.returncode == 1
    assert sorted(Case.objects.values_list("case_id", flat=True)) == ["c1", "c5"]
    assert not Case.objects.filter(case_id="c3").exists() and Evidence.objects.count() == 6


def test_import_is_idempotent_and_reports_conflicts(tmp_path, application):
    path = write(tmp_path, [json.dumps(case_payload("c1")), json.dumps(case_payload("c2"))])
    run("--application", "acme", path)
    out, _, exc = run("--application", "acme", path)
    assert "0 imported, 2 unchanged, 0 failed" in out and exc is None
    changed = write(tmp_path, [json.dumps(case_payload("c1", local_verdict="refuted"))])
    out, err, exc = run("--application", "acme", changed, "--json")
    summary = json.loads(out)
    assert summary["failed"] == 1 and summary["errors"][0]["line"] == 1
    assert "already exists with different content" in summary["errors"][0]["message"]
    assert Case.objects.get(case_id="c1").local_verdict == "corroborated"


def test_unknown_application_or_missing_file_exits_2(tmp_path, application):
    _, _, exc = run("--application", "nope", write(tmp_path, []))
    assert exc.returncode == 2 and "Unknown application" in str(exc)
    _, _, exc = run("--application", "acme", str(tmp_path / "missing.jsonl"))
    assert exc.returncode == 2 and "No such file" in str(exc)


def test_a_time_without_a_time_zone_is_refused_naming_the_line_and_field(tmp_path, application):
    naive, bare_date, aware = case_payload("c1"), case_payload("c2"), case_payload("c3")
    naive["evidence"][1]["observed_at"] = "2026-11-02T09:00:00"
    bare_date["evidence"][0]["observed_at"] = "2026-11-02"
    aware["evidence"][0]["observed_at"] = "2026-11-02T09:00:00+01:00"
    path = write(tmp_path, [json.dumps(naive), json.dumps(bare_date), json.dumps(aware)])
    out, err, exc = run("--application", "acme", path)
    assert "line 1: evidence.1.observed_at: Value error, needs a time zone offset" in err
    assert "line 2: evidence.0.observed_at: Value error, needs a time zone offset" in err
    assert "1 imported, 0 unchanged, 2 failed" in out and exc.returncode == 1
    # One line per refusal, never a traceback or a RuntimeWarning.
    assert err.count("\n") == 2 and "Warning" not in err
    assert list(Case.objects.values_list("case_id", flat=True)) == ["c3"]
    assert Evidence.objects.get(case__case_id="c3", evidence_id="e1").observed_at.isoformat() == "2026-11-02T08:00:00+00:00"


def test_a_time_out_of_range_in_utc_is_a_line_error_not_a_traceback(tmp_path, application):
    early = case_payload("c1")
    early["evidence"][0]["observed_at"] = "0001-01-01T00:00:00+14:00"
    _, err, exc = run("--application", "acme", write(tmp_path, [json.dumps(early)]))
    assert "line 1: evidence.0.observed_at: Value error, is out of range once converted to UTC" in err
    assert exc.returncode == 1 and not Case.objects.exists()


def test_blank_ids_and_claims_are_refused(tmp_path, application):
    blank_id = case_payload("   ")
    blank_claim = case_payload("c2", local_verdict=" ")
    blank_claim["claim"]["subject"] = "  "
    blank_claim["evidence"][0]["evidence_id"] = " "
    _, err, exc = run("--application", "acme", write(tmp_path, [json.dumps(blank_id), json.dumps(blank_claim)]))
    assert "line 1: case_id: Value error, must not be blank" in err
    assert ("line 2: claim.subject: Value error, must not be blank; local_verdict: Value error, must not be blank; "
            "evidence.0.evidence_id: Value error, must not be blank") in err
    assert exc.returncode == 1 and not Case.objects.exists()


def test_a_line_that_is_not_utf8_or_nested_too_deeply_is_refused_not_mangled(tmp_path, application):
    latin1 = json.dumps(case_payload("c1")).replace("The agent", "The ag\u00e9nt").encode("latin-1")
    path = tmp_path / "cases.jsonl"
    path.write_bytes(latin1 + b"\n" + b"[" * 100_000 + b"]" * 100_000 + b"\n" + json.dumps(case_payload("c3")).encode() + b"\n")
    out, err, exc = run("--application", "acme", str(path))
    assert "line 1: not valid UTF-8 (byte " in err
    assert "line 2: not valid JSON (nested too deeply)" in err
    assert "1 imported, 0 unchanged, 2 failed" in out and exc.returncode == 1
    assert list(Case.objects.values_list("case_id", flat=True)) == ["c3"]


def test_a_directory_a_blank_path_or_an_unreadable_file_is_one_clear_line(tmp_path, application, monkeypatch):
    _, _, exc = run("--application", "acme", str(tmp_path))
    assert exc.returncode == 2 and str(exc) == f"Cannot read {tmp_path}: it is a directory, not a .jsonl file."
    for blank in ("", "  "):
        _, _, exc = run("--application", "acme", blank)
        assert f"argument file: give a path, not {blank!r}" in str(exc)
    path = write(tmp_path, [json.dumps(case_payload("c1"))])

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    _, _, exc = run("--application", "acme", path)
    assert exc.returncode == 2 and str(exc) == f"Cannot read {path}: Permission denied."
    assert not Case.objects.exists()
