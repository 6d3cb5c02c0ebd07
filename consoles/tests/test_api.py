import json

import pytest

from consoles.services import token_issue, token_revoke
from consoles.testing import bearer
from consoles.tests.factories import personal_token

pytestmark = pytest.mark.django_db


def test_openapi_schema_is_served(client):
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "Curator console API"


def test_openapi_schema_holds_no_key_twice(client):
    # json.loads keeps the last of two equal keys; the docs page refuses the schema.
    # (An int and a str "200" in one responses dict used to serialize as both.)
    repeated = []

    def no_repeats(pairs):
        keys = [key for key, _ in pairs]
        repeated.extend(key for key in set(keys) if keys.count(key) > 1)
        return dict(pairs)

    schema = json.loads(client.get("/api/openapi.json").content, object_pairs_hook=no_repeats)
    assert repeated == []
    export = schema["paths"]["/api/v1/flags/export"]["get"]["responses"]["200"]
    assert list(export["content"]) == ["application/x-ndjson"]


def test_docs_page_loads_nothing_from_a_cdn(client):
    response = client.get("/api/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui-bundle.js" in html and "cdn" not in html.lower()


def test_application_token_identifies_its_application(client, application, app_token):
    response = client.get("/api/v1/me", **bearer(app_token))
    assert response.status_code == 200
    assert response.json()["applications"] == [{"slug": "acme", "role": "integration"}]


def test_personal_token_carries_the_users_memberships(client, curator):
    response = client.get("/api/v1/me", **bearer(personal_token(curator)))
    assert response.json() == {
        "kind": "personal",
        "name": "cora",
        "applications": [{"slug": "acme", "role": "curator"}],
    }


@pytest.mark.parametrize("header", [None, "Bearer cc_app_unknown", "Basic abc"])
def test_missing_or_unknown_token_is_401_with_the_error_shape(client, header):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/api/v1/me", **kwargs)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"
    assert set(response.json()["error"]) == {"code", "message", "fields"}


def test_revoked_token_is_401(client, application):
    issued = token_issue(name="old", application=application)
    token_revoke(token=issued.token)
    assert client.get("/api/v1/me", **bearer(issued.secret)).status_code == 401


def test_oversized_body_is_413(client, app_token, settings):
    settings.API_MAX_BODY_BYTES = 100
    response = client.post("/api/v1/me", data="x" * 200, content_type="application/json", **bearer(app_token))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"


def test_the_body_limit_holds_when_the_console_is_mounted_under_a_prefix(client, app_token, settings):
    # Behind a proxy at /console/ (SCRIPT_NAME), request.path starts with the prefix.
    settings.API_MAX_BODY_BYTES = 100
    response = client.post("/api/v1/flags", data=json.dumps({"note": "x" * 200}), content_type="application/json",
                           SCRIPT_NAME="/console", **bearer(app_token))
    assert response.wsgi_request.path == "/console/api/v1/flags"
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_every_operation_documents_its_refusals_with_the_error_shape(client):
    """413 is answered before any operation runs (ApiBodyLimitMiddleware), so the
    schema is the only place a client learns of it; 401 and 422 likewise."""
    schema = client.get("/api/openapi.json").json()
    undocumented = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            for status in ("401", "413", "422"):
                ref = operation["responses"].get(status, {}).get("content", {}).get("application/json", {})
                if ref.get("schema", {}).get("$ref") != "#/components/schemas/ErrorOut":
                    undocumented.append(f"{method.upper()} {path} {status}")
    assert undocumented == []


def test_who_am_i_is_documented_field_by_field(client, application, app_token):
    """It was declared as a bare object."""
    schema = client.get("/api/openapi.json").json()
    ref = schema["paths"]["/api/v1/me"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert set(component["properties"]) == {"kind", "name", "applications"}
    assert set(component["properties"]["kind"]["enum"]) == {"application", "personal", "session"}
    assert set(client.get("/api/v1/me", **bearer(app_token)).json()) == set(component["properties"])
