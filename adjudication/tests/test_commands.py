import json
from io import StringIO

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
