"""GET /api/v1/flags/export: streamed JSONL, every caller kind, tenant-sealed."""

import json

import pytest

from consoles.testing import assert_api_sealed, bearer
from consoles.tests.factories import personal_token
from feedback.exports import EXPORT_FIELDS
from feedback.models import ExportKind, ExportManifest
from feedback.services import flag_review

from .factories import FlagFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/flags/export"


def approve(flag, reviewer, **decision):
    return flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version, **decision)


def body(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response.streaming
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def flags(application, curator):
    miss = approve(FlagFactory(application=application), curator)
    over = approve(FlagFactory(application=application, region="prompt", problem="offensive",
                               suggested_axis="toxicity"), curator, verdict="false_positive")
    pending = FlagFactory(application=application)
    return miss, over, pending


def test_an_application_token_streams_the_approved_flags_as_ndjson(client, flags, app_token):
    miss, over, _ = flags
    response = client.get(URL, **bearer(app_token))
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert 'attachment; filename="acme-flags-approved-' in response["Content-Disposition"]
    rows = body(response)
    assert [r["id"] for r in rows] == [miss.public_id, over.public_id]
    assert all(list(r) == list(EXPORT_FIELDS) for r in rows)
    assert [(r["label"], r["verdict"], r["axis"]) for r in rows] == [
        (1, "false_negative", "hallucination"), (0, "false_positive", "toxicity"),
    ]
    # The download is recorded with what it held and who took it.
    download = ExportManifest.objects.get()
    assert download.kind == ExportKind.FLAGS_DOWNLOAD and download.row_count == 2
    assert download.requested_by_token.application.slug == "acme" and download.sha256


def test_a_personal_token_and_a_session_name_the_application(client, flags, curator):
    token = personal_token(curator)
    assert len(body(client.get(URL, {"application_id": "acme"}, **bearer(token)))) == 2
    missing = client.get(URL, **bearer(token))
    assert missing.status_code == 403 and missing.json()["error"]["fields"] == {"application_id": "required"}
    client.force_login(curator)
    assert len(body(client.get(URL, {"application_id": "acme"}))) == 2
    assert ExportManifest.objects.filter(requested_by=curator).count() == 2


def test_filters_status_axis_and_created_range(client, flags, app_token, curator):
    miss, over, pending = flags
    assert [r["id"] for r in body(client.get(URL, {"axis": "toxicity"}, **bearer(app_token)))] == [over.public_id]
    everything = body(client.get(URL, {"status": "any"}, **bearer(app_token)))
    assert {r["id"] for r in everything} == {miss.public_id, over.public_id, pending.public_id}
    pending_only = body(client.get(URL, {"status": "pending"}, **bearer(app_token)))
    assert [(r["id"], r["label"], r["verdict"]) for r in pending_only] == [(pending.public_id, None, None)]
    day = miss.created_at.date().isoformat()
    assert len(body(client.get(URL, {"created_from": day, "created_to": day}, **bearer(app_token)))) == 2
    assert body(client.get(URL, {"created_to": "2000-01-01"}, **bearer(app_token))) == []


@pytest.mark.parametrize(
    "params,field",
    [({"axis": "weather"}, "axis"), ({"status": "nope"}, "status"), ({"created_from": "yesterday"}, "created_from"),
     ({"created_from": "2026-02-02", "created_to": "2026-02-01"}, "created_to"),
     ({"created_to": "9999-12-31"}, "created_to"), ({"created_from": "0001-01-01"}, "created_from")],
)
def test_bad_filters_are_422_naming_the_field(client, flags, app_token, params, field):
    response = client.get(URL, params, **bearer(app_token))
    assert response.status_code == 422 and field in response.json()["error"]["fields"]
    assert not ExportManifest.objects.exists()


def test_the_export_is_sealed_per_tenant(client, tenant_pair, curator):
    a_curator = tenant_pair.member_of_a
    approve(FlagFactory(application=tenant_pair.b), tenant_pair.member_of_b)
    approve(FlagFactory(application=tenant_pair.a), a_curator)
    # A member of A naming B: 404, exactly like an application that does not exist.
    assert_api_sealed(client, personal_token(a_curator), f"{URL}?application_id=tenant-b")
    client.force_login(a_curator)
    assert client.get(URL, {"application_id": "tenant-b"}).status_code == 404
    # A's token cannot name B; without a name it gets A's flags only.
    assert client.get(URL, {"application_id": "tenant-b"}, **bearer(tenant_pair.token_a)).status_code == 403
    assert {r["application_id"] for r in body(client.get(URL, **bearer(tenant_pair.token_a)))} == {"tenant-a"}
    assert not ExportManifest.objects.filter(application=tenant_pair.b).exists()


def test_no_credentials_is_401(client, flags):
    assert client.get(URL).status_code == 401


def test_the_route_does_not_shadow_flag_ids(client, flags, app_token):
    # /flags/export is its own route; the schema documents it.
    schema = client.get("/api/openapi.json").json()
    assert "/api/v1/flags/export" in schema["paths"]
