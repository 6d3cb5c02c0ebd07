"""The training formats (issue 34): `sft` chat examples and `preference` pairs
beside the `classifier` corpus, from the API, the queue's buttons and
`export_flags --format`; exact lines, left-out flags counted in the manifest."""

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from consoles.files import read_manifest
from consoles.testing import bearer
from feedback.exports import EXPORT_FIELDS, FORMAT_FIELDS
from feedback.models import ExportManifest
from feedback.services import flag_review

from .factories import FlagFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/flags/export"
T0 = datetime(2026, 6, 26, 10, 0, tzinfo=UTC)


def approve(flag, reviewer, **decision):
    return flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version,
                       verdict="false_negative", **decision)


@pytest.fixture
def fixed(application, curator):
    """Five approved flags, oldest first: every case a format has to decide."""
    def make(i, **over):
        return FlagFactory(application=application, created_at=T0 + timedelta(minutes=i),
                           prompt=f"question {i}", answer=f"wrong answer {i}", **over)

    corrected = approve(make(0, context="The prize list: none in 1923."), curator, correction="No such prize.")
    twinned = approve(make(1), curator, twin_answer="I am not sure that prize existed.")
    neither = approve(make(2), curator)
    prompt_flag = approve(make(3, region="prompt", problem="offensive", suggested_axis="toxicity"), curator)
    both = approve(make(4), curator, correction="Ünïcode fix — “quoted”.", twin_answer="a twin not chosen")
    FlagFactory(application=application)  # pending: not exported by default
    return corrected, twinned, neither, prompt_flag, both


def expected_sft(fixed) -> list[dict]:
    corrected, _twinned, _neither, _prompt, both = fixed
    return [
        {"messages": [{"role": "system", "content": "The prize list: none in 1923."},
                      {"role": "user", "content": "question 0"},
                      {"role": "assistant", "content": "No such prize."}],
         "id": corrected.public_id, "axis": "hallucination", "application_id": "acme"},
        {"messages": [{"role": "user", "content": "question 4"},
                      {"role": "assistant", "content": "Ünïcode fix — “quoted”."}],
         "id": both.public_id, "axis": "hallucination", "application_id": "acme"},
    ]


def expected_preference(fixed) -> list[dict]:
    corrected, twinned, _neither, _prompt, both = fixed
    return [
        {"prompt": "question 0", "chosen": "No such prize.", "rejected": "wrong answer 0",
         "id": corrected.public_id, "axis": "hallucination"},
        {"prompt": "question 1", "chosen": "I am not sure that prize existed.", "rejected": "wrong answer 1",
         "id": twinned.public_id, "axis": "hallucination"},
        {"prompt": "question 4", "chosen": "Ünïcode fix — “quoted”.", "rejected": "wrong answer 4",
         "id": both.public_id, "axis": "hallucination"},
    ]


def as_text(records: list[dict]) -> str:
    """The exact bytes: compact JSON, raw UTF-8, one object per line."""
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)


def streamed(response) -> str:
    assert response.status_code == 200, response.content
    assert response.streaming and response["Content-Type"].startswith("application/x-ndjson")
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("export_format,expected,left_out", [
    ("sft", expected_sft, 3), ("preference", expected_preference, 2)])
def test_the_api_streams_each_format_exactly_and_records_what_it_left_out(
        client, fixed, app_token, export_format, expected, left_out):
    response = client.get(URL, {"format": export_format}, **bearer(app_token))
    assert f"-flags-approved-{export_format}-" in response["Content-Disposition"]
    assert streamed(response) == as_text(expected(fixed))
    download = ExportManifest.objects.get()
    assert (download.export_format, download.row_count, download.left_out) == (
        export_format, len(expected(fixed)), left_out)


def test_the_classifier_format_is_the_default_and_unchanged(client, fixed, app_token):
    default = streamed(client.get(URL, **bearer(app_token)))
    assert streamed(client.get(URL, {"format": "classifier"}, **bearer(app_token))) == default
    rows = [json.loads(line) for line in default.splitlines()]
    assert [r["id"] for r in rows] == [f.public_id for f in fixed]
    assert all(list(r) == list(EXPORT_FIELDS) for r in rows)
    assert set(ExportManifest.objects.values_list("export_format", "left_out")) == {("classifier", 0)}


def test_an_unknown_format_is_422_naming_it(client, fixed, app_token):
    response = client.get(URL, {"format": "unknown"}, **bearer(app_token))
    assert response.status_code == 422 and "format" in response.json()["error"]["fields"]
    assert not ExportManifest.objects.exists()


def test_the_file_and_its_manifest_name_the_format_and_count_what_was_left_out(fixed, tmp_path):
    out = tmp_path / "acme-pref.jsonl"
    stdout = io.StringIO()
    call_command("export_flags", "--application", "acme", "--out", str(out), "--format", "preference",
                 stdout=stdout, stderr=io.StringIO())
    assert "Exported 3 flags as preference lines (2 flags left out" in stdout.getvalue()
    assert out.read_text() == as_text(expected_preference(fixed))
    manifest = read_manifest(out)
    assert (manifest["export_format"], manifest["rows"], manifest["left_out"]) == ("preference", 3, 2)
    assert manifest["fields"] == list(FORMAT_FIELDS["preference"])
    call_command("export_flags", "--application", "acme", "--out", str(tmp_path / "sft.jsonl"),
                 "--format", "sft", stdout=io.StringIO())
    assert (tmp_path / "sft.jsonl").read_text() == as_text(expected_sft(fixed))
    assert read_manifest(tmp_path / "sft.jsonl")["left_out"] == 3


def test_the_command_refuses_an_unknown_format_in_one_line(fixed, tmp_path):
    out = tmp_path / "x.jsonl"
    with pytest.raises(CommandError) as refused:
        call_command("export_flags", "--application", "acme", "--out", str(out), "--format", "unknown")
    assert refused.value.returncode == 2
    assert "--format" in str(refused.value) and "\n" not in str(refused.value)
    assert not out.exists() and not ExportManifest.objects.exists()


def test_the_queue_offers_each_format_and_the_button_downloads_it(client, fixed, curator):
    client.force_login(curator)
    queue = client.get(reverse("feedback:queue", args=["acme"]), {"status": "approved"}).content.decode()
    assert 'data-testid="export-sft"' in queue and "format=sft" in queue and "format=preference" in queue
    url = reverse("feedback:export", args=["acme"])
    assert streamed(client.get(url, {"status": "approved", "format": "sft"})) == as_text(expected_sft(fixed))
    refused = client.get(url, {"status": "approved", "format": "unknown"})
    assert refused.status_code == 302 and "format" not in refused["Location"]
    assert ExportManifest.objects.count() == 1


def test_a_member_of_another_tenant_gets_404_for_the_download(client, fixed, tenant_pair):
    client.force_login(tenant_pair.member_of_b)
    assert client.get(reverse("feedback:export", args=["acme"]), {"format": "sft"}).status_code == 404


@pytest.mark.parametrize("export_format", ["classifier", "sft", "preference"])
def test_each_format_has_the_same_keys_on_every_line(client, fixed, app_token, export_format):
    lines = streamed(client.get(URL, {"format": export_format}, **bearer(app_token))).splitlines()
    assert lines
    assert all(list(json.loads(line)) == list(FORMAT_FIELDS[export_format]) for line in lines)


@pytest.mark.parametrize("export_format", ["classifier", "sft", "preference"])
def test_pandas_reads_each_format_as_is(client, fixed, app_token, export_format):
    pandas = pytest.importorskip("pandas")
    text = streamed(client.get(URL, {"format": export_format}, **bearer(app_token)))
    frame = pandas.read_json(io.StringIO(text), lines=True)
    assert list(frame.columns) == list(FORMAT_FIELDS[export_format])
    assert len(frame) == len(text.splitlines())
