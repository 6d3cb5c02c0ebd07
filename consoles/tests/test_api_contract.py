"""The JSON API as a client sees it from /api/openapi.json alone.

- The schema documents everything: every operation has a summary and a
  description, every parameter and every request/response field a description,
  and no 2xx answer is an untyped object.
- Every operation, called as a client would, answers a body that matches its
  declared schema *exactly*: no undocumented key, no missing required one, the
  declared types and enums, and every timestamp in the one shape the API writes.
- Refusals outside the operations keep the error shape: an unsupported method
  (HEAD, OPTIONS, PUT, ...) is 405, an unknown /api/ path 404, a body that is not
  JSON 415, a missing token on a POST 401 (not a CSRF 403); and query and path
  parameters are validated like body fields (422 naming them).
"""

import json
import re
from collections.abc import Callable

import pytest
from django.test import Client

from adjudication.models import Case, GoldLabelRevision
from adjudication.tests.factories import case_payload
from consoles.api import api
from consoles.management.commands.load_demo import DEMO_PUBLISHABLE_KEY, DEMO_TOKEN_SECRETS
from consoles.models import Application
from consoles.testing import api_operations, bearer
from exemplars.models import DetectorProfile
from exemplars.selectors import exemplar_page
from feedback.models import Flag
from teaching.models import Proposal
from teaching.tests.factories import candidate_payload

from .test_bad_input import VALID
from .test_tenant_sweep import world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$")
APP = "acme-chat"


# --- The schema alone --------------------------------------------------------------


def _schema() -> dict:
    # As served: response codes are string keys once in JSON.
    return json.loads(json.dumps(api.get_openapi_schema()))


def _operations() -> list[tuple[str, str, dict]]:
    paths = _schema()["paths"]  # built once: each build renders every operation's schema
    return [(m, p, paths[p][m.lower()]) for m, p, _ in api_operations()]


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _undocumented_fields(schema: dict, node: dict, where: str) -> list[str]:
    node = _resolve(schema, node)
    found = []
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            found += _undocumented_fields(schema, sub, where)
    if isinstance(node.get("items"), dict):
        found += _undocumented_fields(schema, node["items"], where + "[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _undocumented_fields(schema, node["additionalProperties"], where + "{}")
    for name, prop in node.get("properties", {}).items():
        if not prop.get("description"):
            found.append(f"{where}.{name}")
        found += _undocumented_fields(schema, prop, f"{where}.{name}")
    return found


def _free_form(schema: dict, node: dict) -> bool:
    node = _resolve(schema, node)
    return node.get("type") == "object" and not node.get("properties") and not isinstance(
        node.get("additionalProperties"), dict)


def test_every_operation_says_what_it_does_and_documents_every_field():
    schema = _schema()
    missing = []
    for method, path, operation in _operations():
        op = f"{method} {path}"
        missing += [f"{op}: {part}" for part in ("summary", "description") if not operation.get(part)]
        for param in operation.get("parameters", []):
            if not param.get("description"):
                missing.append(f"{op}: parameter {param['name']}")
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body:
            missing += [f"{op}: body field {f}" for f in _undocumented_fields(schema, body, "")]
        for status, response in operation["responses"].items():
            content = response.get("content", {}).get("application/json", {}).get("schema")
            if not content:
                continue
            if status.startswith("2") and _free_form(schema, content):
                missing.append(f"{op}: {status} is an untyped object")
            missing += [f"{op}: {status} field {f}" for f in _undocumented_fields(schema, content, "")]
    assert missing == []


def test_every_operation_says_who_may_call_it():
    """Application token, personal token, session or publishable key: each description names its callers."""
    vague = [f"{m} {p}" for m, p, o in _operations()
             if not re.search(r"application token|application's token|personal token|session|any caller|"
                              r"publishable key",
                              o.get("description", ""), re.IGNORECASE)]
    assert vague == []


def test_no_two_input_or_output_shapes_share_a_name():
    """Two models of one name are one schema component: the second's fields were
    documented for both (the cases' evidence was shown as the teaching candidates')."""
    body = _schema()["components"]["schemas"]["CaseIn"]["properties"]["evidence"]["items"]
    assert "relation" in _resolve(_schema(), body)["properties"]
    titles = [_resolve(_schema(), {"$ref": f"#/components/schemas/{n}"}).get("title") for n in
              _schema()["components"]["schemas"]]
    assert len(titles) == len(set(titles))


# --- Real answers against the schema -----------------------------------------------


def _mismatches(schema: dict, node: dict, value: object, where: str = "$") -> list[str]:
    """Where `value` departs from `node`; objects with documented properties are closed."""
    node = _resolve(schema, node)
    if "anyOf" in node:
        tries = [_mismatches(schema, sub, value, where) for sub in node["anyOf"]]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if "enum" in node and value not in node["enum"]:
        return [f"{where}: {value!r} is not one of {node['enum']}"]
    if "const" in node and value != node["const"]:
        return [f"{where}: {value!r} is not {node['const']!r}"]
    kind = node.get("type")
    checks: dict[str, Callable[[object], bool]] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    if kind and not checks[kind](value):
        return [f"{where}: {value!r} is not {kind}"]
    if kind == "string" and node.get("format") == "date-time" and not TIMESTAMP.match(value):
        return [f"{where}: timestamp {value!r} is not YYYY-MM-DDTHH:MM:SS+00:00"]
    found = []
    if kind == "array":
        for i, item in enumerate(value):
            found += _mismatches(schema, node.get("items", {}), item, f"{where}[{i}]")
    if kind == "object":
        properties = node.get("properties", {})
        extra = node.get("additionalProperties")
        found += [f"{where}: missing {name!r}" for name in node.get("required", []) if name not in value]
        for key, item in value.items():
            if key in properties:
                found += _mismatches(schema, properties[key], item, f"{where}.{key}")
            elif isinstance(extra, dict):
                found += _mismatches(schema, extra, item, f"{where}.{key}")
            elif properties or extra is False:
                found.append(f"{where}: undocumented key {key!r}")
    return found


def _calls(client: Client, token: str) -> dict[tuple[str, str], Callable[[], object]]:
    """One call per operation, as a client would make it, answered with a 2xx."""
    flag = Flag.objects.filter(application__slug=APP, status="pending", author_kind="end_user").first()
    pending = Proposal.objects.filter(application__slug=APP, state="pending").first()
    decided = Proposal.objects.filter(application__slug=APP, state="accepted").first()
    case = Case.objects.get(pk=GoldLabelRevision.objects.filter(case__application__slug=APP).first().case_id)
    auth = bearer(token)

    def get(url: str, **query) -> Callable[[], object]:
        return lambda: client.get(url, {"application_id": APP, **query}, **auth)

    def post(url: str, body: dict, query: bool = False) -> Callable[[], object]:
        body = {**body, "application_id": APP} if not query else body
        url = f"{url}?application_id={APP}" if query else url
        return lambda: client.post(url, data=json.dumps(body), content_type="application/json", **auth)

    def valid(method: str, path: str) -> dict:
        return dict(VALID[(method, path)])

    external = _external_profile()
    exemplar = exemplar_page(profile=external, missing=False, after=None, limit=2).items[0]
    vectors = {"dim": 4, "vectors": [{"exemplar_id": exemplar.exemplar_id, "vector": [1, 0, 0, 0]}]}

    return {
        ("GET", "/api/v1/me"): lambda: client.get("/api/v1/me", **auth),
        ("GET", "/api/v1/flags/export"): get("/api/v1/flags/export", status="any"),
        ("POST", "/api/v1/flags"): post("/api/v1/flags", {**valid("POST", "/api/v1/flags"), "message_id": "ct-1"}),
        # Written, already stored, and refused items: each kind of item answer.
        ("POST", "/api/v1/flags/batch"): post("/api/v1/flags/batch", {"flags": [
            {**valid("POST", "/api/v1/flags"), "message_id": "ct-batch-1"},
            {**valid("POST", "/api/v1/flags"), "message_id": "ct-batch-1"},
            {**valid("POST", "/api/v1/flags"), "message_id": "ct-batch-2", "problem": "unknown"}]}),
        ("GET", "/api/v1/flags"): get("/api/v1/flags", status="approved"),
        ("GET", "/api/v1/flags/{flag_id}"): get(f"/api/v1/flags/{flag.public_id}"),
        ("POST", "/api/v1/flags/{flag_id}/review"): post(
            f"/api/v1/flags/{flag.public_id}/review", {"status": "rejected", "version": flag.version}, query=True),
        ("POST", "/api/v1/cases"): post("/api/v1/cases", {"cases": [case_payload("ct-1")]}),
        ("GET", "/api/v1/cases"): get("/api/v1/cases"),
        ("GET", "/api/v1/cases/{case_ref}"): get(f"/api/v1/cases/{case.pk}"),
        ("POST", "/api/v1/cases/{case_ref}/feedback"): post(
            f"/api/v1/cases/{case.pk}/feedback", {"disposition": "disagrees", "note": "n"}, query=True),
        ("POST", "/api/v1/teaching/candidates"): post("/api/v1/teaching/candidates", candidate_payload("ct-1")),
        ("GET", "/api/v1/teaching/candidates"): get("/api/v1/teaching/candidates"),
        ("POST", "/api/v1/teaching/eval-cases"): post(
            "/api/v1/teaching/eval-cases", valid("POST", "/api/v1/teaching/eval-cases")),
        ("GET", "/api/v1/teaching/eval-cases"): get("/api/v1/teaching/eval-cases"),
        ("POST", "/api/v1/teaching/proposals"): post("/api/v1/teaching/proposals", {"candidate_id": "disc-oslo"}),
        ("GET", "/api/v1/teaching/proposals"): get("/api/v1/teaching/proposals"),
        ("GET", "/api/v1/teaching/proposals/{proposal_id}"): get(f"/api/v1/teaching/proposals/{decided.proposal_id}"),
        ("POST", "/api/v1/teaching/proposals/{proposal_id}/decision"): post(
            f"/api/v1/teaching/proposals/{pending.proposal_id}/decision", {"decision": "withdraw"}, query=True),
        ("GET", "/api/v1/teaching/corpus"): get("/api/v1/teaching/corpus"),
        ("POST", "/api/v1/score"): post("/api/v1/score", valid("POST", "/api/v1/score")),
        ("GET", "/api/v1/bank/{profile}/exemplars"): get(f"/api/v1/bank/{external.name}/exemplars", missing="true"),
        ("PUT", "/api/v1/bank/{profile}/vectors"): lambda: client.put(
            f"/api/v1/bank/{external.name}/vectors?application_id={APP}", data=json.dumps(vectors),
            content_type="application/json", **auth),
        # The widget's operations take the demo's publishable key, whatever `token` is.
        ("GET", "/api/v1/embed/problems"): lambda: client.get("/api/v1/embed/problems", **bearer(DEMO_PUBLISHABLE_KEY)),
        ("POST", "/api/v1/embed/flags"): lambda: client.post(
            "/api/v1/embed/flags", data=json.dumps({**valid("POST", "/api/v1/flags"), "message_id": "ct-embed",
                                                    "session_id": "ct-s"}),
            content_type="application/json", **bearer(DEMO_PUBLISHABLE_KEY)),
    }


def _external_profile() -> DetectorProfile:
    """A detector-owned-embedding profile over the demo's approved flags."""
    application = Application.objects.get(slug=APP)
    profile, _ = DetectorProfile.objects.get_or_create(
        application=application, name="ct-external", defaults={"axes": list(application.axes), "embedder": "external"},
    )
    profile.application = application
    return profile


def test_every_answer_matches_its_declared_schema_exactly(client, world):  # noqa: F811 - the sweep's fixture
    schema = _schema()
    calls = _calls(client, world["owner_personal_token"])
    assert set(calls) == {(m, p) for m, p, _ in _operations()}, "give a new operation a call above"
    problems = []
    for (method, path), call in calls.items():
        operation = schema["paths"][path][method.lower()]
        response = call()
        status = str(response.status_code)
        if not status.startswith("2"):
            problems.append(f"{method} {path}: {status} {response.content[:200]!r}")
            continue
        declared = operation["responses"].get(status)
        if declared is None:
            problems.append(f"{method} {path}: answered {status}, which is not documented")
            continue
        media_type = response["Content-Type"].split(";")[0]
        if media_type not in declared.get("content", {}):
            problems.append(f"{method} {path}: {media_type} is not one of {list(declared.get('content', {}))}")
            continue
        if media_type == "application/json":
            problems += [f"{method} {path}: {m}" for m in
                         _mismatches(schema, declared["content"][media_type]["schema"], response.json())]
    assert problems == []


def test_an_application_tokens_answers_match_the_schema_too(client, world):  # noqa: F811
    """The same reads with the application's own token (no application_id needed)."""
    schema = _schema()
    token = DEMO_TOKEN_SECRETS[APP]
    problems = []
    for method, path, operation in _operations():
        if method != "GET" or "{" in path or path.endswith(("/export", "/corpus")) or "/embed/" in path:
            continue
        response = client.get(path, **bearer(token))
        assert response.status_code == 200, (path, response.content[:200])
        declared = operation["responses"]["200"]["content"]["application/json"]["schema"]
        problems += [f"{path}: {m}" for m in _mismatches(schema, declared, response.json())]
    assert problems == []


# --- Refusals outside the operations -----------------------------------------------


def _api_paths() -> list[str]:
    return sorted({p for _, p, _ in _operations()})


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"])
def test_an_unsupported_method_is_405_with_the_error_shape_and_allow(client, world, method):  # noqa: F811
    token = world["owner_personal_token"]
    for path in _api_paths():
        allowed = {m for m, p, _ in _operations() if p == path}
        if method in allowed:
            continue
        response = client.generic(method, path.replace("{", "x").replace("}", ""), **bearer(token))
        assert response.status_code == 405, (method, path, response.status_code)
        assert response["Content-Type"] == "application/json", (method, path)
        assert set(response["Allow"].replace(" ", "").split(",")) == allowed
        if method != "HEAD":
            assert response.json()["error"]["code"] == "method_not_allowed"


def test_an_unknown_api_path_is_404_with_the_error_shape(client, app_token):
    for path in ("/api/v1/nothing", "/api/v2/flags", "/api/v1/flags/fb_1/nothing"):
        response = client.get(path, **bearer(app_token))
        assert response.status_code == 404 and response["Content-Type"] == "application/json", path
        assert response.json()["error"] == {"code": "not_found", "message": "No such API endpoint.", "fields": {}}


def test_a_post_without_a_valid_token_is_401_not_a_csrf_refusal(application):
    """Browsers' CSRF checks stay on; an integration with a revoked token still learns
    that its token is the problem."""
    client = Client(enforce_csrf_checks=True)
    for headers in ({}, bearer("cc_app_revoked-or-unknown")):
        response = client.post("/api/v1/flags", data="{}", content_type="application/json", **headers)
        assert response.status_code == 401, (headers, response.content)
        assert response.json()["error"]["code"] == "unauthorized"


def test_a_session_post_without_its_csrf_token_is_still_refused(curator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    response = client.post("/api/v1/flags", data=json.dumps({**VALID[("POST", "/api/v1/flags")],
                                                             "application_id": "acme"}),
                           content_type="application/json")
    assert response.status_code == 403 and not Flag.objects.exists()


def _bad_values(param: dict) -> list[str]:
    node = param["schema"]
    node = next((o for o in node.get("anyOf", []) if o.get("type") != "null"), node)
    if "enum" in node:
        return ["bogus"]
    if node.get("type") == "integer" and param["in"] == "path":
        return ["abc", "1.5"]  # an integer that names nothing is a 404 (below)
    if node.get("type") == "integer":
        return ["abc", "-99999999999999999999999", "99999999999999999999999"]
    if node.get("format") == "date":
        return ["yesterday", "2026-13-01"]
    return []


def test_a_bad_query_or_path_parameter_is_422_naming_it(client, world):  # noqa: F811
    token = world["owner_personal_token"]
    checked = []
    for method, path, operation in _operations():
        if method != "GET":
            continue
        ids = {"flag_id": "fb_0", "case_ref": "1", "proposal_id": "0", "profile": "p"}
        for param in operation.get("parameters", []):
            for bad in _bad_values(param):
                url = path.format(**{**ids, param["name"]: bad})
                query = {"application_id": APP}
                if param["in"] == "query":
                    query[param["name"]] = bad
                response = client.get(url, query, **bearer(token))
                checked.append((path, param["name"], bad))
                assert response.status_code == 422, (path, param["name"], bad, response.status_code)
                assert param["name"] in response.json()["error"]["fields"], (path, param["name"], bad)
    assert ("/api/v1/flags", "created_from", "yesterday") in checked
    assert ("/api/v1/teaching/eval-cases", "split", "bogus") in checked


def test_an_id_in_the_path_that_names_nothing_is_404(client, world):  # noqa: F811
    token = world["owner_personal_token"]
    for url in ("/api/v1/cases/99999999999999999999999", "/api/v1/cases/-1", "/api/v1/cases/0",
                "/api/v1/flags/" + "f" * 5000, "/api/v1/flags/%E2%80%AE", "/api/v1/teaching/proposals/zz"):
        response = client.get(url, {"application_id": APP}, **bearer(token))
        assert response.status_code == 404, (url, response.status_code)
        assert response.json()["error"]["code"] == "not_found"
