"""Tenant isolation sweep: every URL pattern of the project and every API operation,
called by a user or a token of *another* application, answers 404 (or 403 for a
token of the wrong kind), and changes nothing.

Routes are found by walking the URL resolver and the OpenAPI schema, so a new
screen or endpoint is swept the day it is added. A route that needs an object
this sweep cannot name (a new URL argument) fails with a message saying which
entry of `OBJECTS` to add; a route outside `/a/<app>/` must be listed in
`GLOBAL_ROUTES` on purpose.

The victim applications are the demo applications (`load_demo` runs every app's
demo loader), so each app's own objects are there to be attacked; the attacker
is an application of its own with an admin member and both kinds of token.
"""

import json
from collections.abc import Callable

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model

from consoles.management.commands.load_demo import DEMO_TOKEN_SECRETS
from consoles.models import Application, Role
from consoles.testing import Route, api_operations, bearer, url_routes
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    application_token,
    personal_token,
)

pytestmark = pytest.mark.django_db


def _first(model: str, field: str, **filters) -> Callable[[Application], object]:
    def pick(application: Application) -> object:
        return (
            apps.get_model(model).objects.filter(application=application, **filters)
            .order_by("pk").values_list(field, flat=True).first()
        )

    return pick


# (URL namespace, URL argument) -> the object of the victim application it names.
OBJECTS: dict[tuple[str, str], Callable[[Application], object]] = {
    ("", "app_slug"): lambda application: application.slug,
    ("feedback", "public_id"): _first("feedback.Flag", "public_id"),
    ("feedback", "name"): _first("feedback.DatasetSnapshot", "name"),
    ("adjudication", "case_ref"): _first("adjudication.Case", "case_id"),
    ("adjudication", "entry_pk"): _first("adjudication.QueueEntry", "pk"),
    ("sampling", "pk"): _first("sampling.SamplingPlan", "pk"),
    ("teaching", "proposal_id"): _first("teaching.Proposal", "proposal_id"),
    ("teaching", "candidate_id"): _first("teaching.Candidate", "candidate_id"),
    ("exemplars", "pk"): _first("exemplars.DetectorProfile", "pk"),
    ("webhooks", "pk"): _first("consoles.WebhookEndpoint", "pk"),
    ("webhooks", "delivery_pk"): _first("consoles.WebhookDelivery", "pk"),
    # API path parameters
    ("api", "flag_id"): _first("feedback.Flag", "public_id"),
    ("api", "case_ref"): _first("adjudication.Case", "case_id"),
    ("api", "proposal_id"): _first("teaching.Proposal", "proposal_id"),
    ("api", "profile"): _first("exemplars.DetectorProfile", "name"),
}

# Routes that belong to no application; anything else outside /a/<app>/ fails the sweep.
GLOBAL_ROUTES = {"", "healthz", "favicon.ico", "login/", "logout/",
                 "tokens/", "tokens/<int:pk>/revoke/",  # the user's own personal tokens (test_my_tokens)
                 "embed/flag.js",  # the flag widget's script: the same for every host page
                 "demo/chat/"}  # the sample chat page: the demo key's application only (tested below)
GLOBAL_PREFIXES = ("admin/",  # staff only, Django admin's own permission checks
                   "api/")  # swept operation by operation below, through the OpenAPI schema

# API operations that need a human: an application token gets 403 there, and only there.
HUMAN_ONLY = {
    ("POST", "/api/v1/flags/{flag_id}/review"),
    ("POST", "/api/v1/teaching/proposals/{proposal_id}/decision"),
}
# API operations that name no application at all.
UNSCOPED = {("GET", "/api/v1/me")}
# API operations that take a publishable key only: its application is the key's (swept below).
PUBLISHABLE_ONLY = {("GET", "/api/v1/embed/problems"), ("POST", "/api/v1/embed/flags")}

# Bodies that pass schema validation, so the tenant check is what answers; other
# operations get a body made from their schema's required fields.
BODIES: dict[tuple[str, str], dict] = {
    ("POST", "/api/v1/flags"): {"region": "answer", "problem": "fabricated", "message_id": "sweep-1"},
    ("POST", "/api/v1/flags/batch"): {"flags": [{"region": "answer", "problem": "fabricated",
                                                  "message_id": "sweep-batch-1"}]},
    ("POST", "/api/v1/flags/{flag_id}/review"): {"status": "rejected", "version": 1},
    ("POST", "/api/v1/cases/{case_ref}/feedback"): {"disposition": "agrees"},
    ("POST", "/api/v1/teaching/proposals/{proposal_id}/decision"): {"decision": "withdraw"},
    ("POST", "/api/v1/score"): {"detector": "hummingbird", "region": "answer", "text": "t",
                                "axis_energy": {"hallucination": {"p_detector": 0.3, "threshold": 0.5}}},
}


def _object_counts() -> dict[str, int]:
    counted = ("consoles", "feedback", "adjudication", "sampling", "teaching")
    return {
        m._meta.label: m._default_manager.count()
        for m in apps.get_models()
        if m._meta.app_label in counted and m._meta.label not in {"consoles.ApiToken"}
    }


@pytest.fixture
def world(demo_loaded, db):
    victims = list(Application.objects.filter(slug__in=DEMO_TOKEN_SECRETS).order_by("slug"))
    attacker_app = ApplicationFactory(slug="attacker")
    attacker = MembershipFactory(user=UserFactory(username="mallory"), application=attacker_app,
                                 role=Role.ADMIN).user
    owner = get_user_model().objects.get(username="admin")  # admin of every demo application
    return {
        "victims": victims,
        "attacker": attacker,
        "attacker_app_token": application_token(attacker_app),
        "attacker_personal_token": personal_token(attacker),
        "owner": owner,
        "owner_personal_token": personal_token(owner),
    }


def _values(route_namespace: str, kwargs: tuple[str, ...], application: Application) -> dict | None:
    values = {}
    for name in kwargs:
        key = (route_namespace, name) if (route_namespace, name) in OBJECTS else ("", name)
        if key not in OBJECTS:
            pytest.fail(f"The sweep cannot name a {name!r} for {route_namespace or 'root'} routes: "
                        f"add ({route_namespace!r}, {name!r}) to OBJECTS in {__name__}.")
        value = OBJECTS[key](application)
        if value is None:
            return None
        values[name] = value
    return values


def _target(route_namespace: str, kwargs: tuple[str, ...], victims: list[Application]):
    """The first victim application that has every object the route names."""
    for application in victims:
        values = _values(route_namespace, kwargs, application)
        if values is not None:
            return application, values
    pytest.fail(f"No demo application has an object for every argument of {kwargs} "
                f"({route_namespace}); give the app's demo loader one.")


def swept_pages() -> list[Route]:
    return [r for r in url_routes() if r.application_scoped]


def test_every_route_is_either_application_scoped_or_listed_as_global():
    routes = url_routes()
    stray = [r.route for r in routes if not r.application_scoped and r.route not in GLOBAL_ROUTES
             and not r.route.startswith(GLOBAL_PREFIXES)]
    assert stray == [], f"routes outside /a/<app>/ that the sweep does not know: {stray}"
    assert len(swept_pages()) >= 25


def test_every_page_of_another_application_is_404_for_get_and_post(client, world):
    before = _object_counts()
    client.force_login(world["attacker"])
    for route in swept_pages():
        application, values = _target(route.namespace, route.kwargs, world["victims"])
        url = route.url(values)
        statuses = {method: getattr(client, method)(url).status_code for method in ("get", "post")}
        assert set(statuses.values()) <= {404, 405} and 404 in statuses.values(), (url, statuses)
    assert _object_counts() == before, "an outsider's request changed something"


def test_the_same_pages_answer_their_own_members(client, world):
    """So the 404s above are about the tenant, not about a wrong object id."""
    client.force_login(world["owner"])
    for route in swept_pages():
        application, values = _target(route.namespace, route.kwargs, world["victims"])
        url = route.url(values)
        status = client.get(url).status_code
        assert status not in (404,) and status < 500, (url, status)


def test_another_applications_object_through_your_own_applications_page_is_404(client, world):
    """A member of both applications names one application's object under the other's
    URL: the object is looked up within the URL's application, so it is not found."""
    before = _object_counts()
    client.force_login(world["owner"])
    checked = 0
    for route in swept_pages():
        if set(route.kwargs) == {"app_slug"}:
            continue
        owner, values = _target(route.namespace, route.kwargs, world["victims"])
        other = next(a for a in world["victims"] if a != owner)
        theirs = _values(route.namespace, route.kwargs, other) or {}
        if any(theirs.get(name) == value for name, value in values.items() if name != "app_slug"):
            continue  # the same id names an object of the other application too
        url = route.url({**values, "app_slug": other.slug})
        statuses = {method: getattr(client, method)(url).status_code for method in ("get", "post")}
        assert set(statuses.values()) <= {404, 405} and 404 in statuses.values(), (url, statuses)
        checked += 1
    assert checked >= 15
    assert _object_counts() == before, "a request for another application's object changed something"


# --- the JSON API ----------------------------------------------------------------


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[1]
        node = schema["components"]["schemas"][name]
    return node


def _example(schema: dict, node: dict) -> object:
    node = _resolve(schema, node)
    if "anyOf" in node:
        return _example(schema, next(o for o in node["anyOf"] if o.get("type") != "null"))
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {name: _example(schema, sub) for name, sub in node.get("properties", {}).items()
                if name in node.get("required", [])}
    if kind == "array":
        return [_example(schema, node["items"])] * node.get("minItems", 0)
    if kind == "integer":
        return max(1, node.get("minimum", 1))
    if kind == "number":
        return 0.5
    if kind == "boolean":
        return False
    if node.get("format") == "date":
        return "2026-01-01"
    return "x" * max(1, node.get("minLength", 1))


def _names_application(operation: dict) -> bool:
    from consoles.api import api

    schema = api.get_openapi_schema()
    if any(p["name"] == "application_id" for p in operation.get("parameters", [])):
        return True
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    return bool(body) and "application_id" in _resolve(schema, body).get("properties", {})


def _api_request(client, token: str, method: str, path: str, operation: dict, victims: list[Application],
                 *, name_application: bool = True):
    from consoles.api import api

    schema = api.get_openapi_schema()
    path_params = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
    query_params = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    application, values = _target("api", tuple(path_params), victims)
    url = path
    for name, value in values.items():
        url = url.replace("{" + name + "}", str(value))
    query = {"application_id": application.slug} if name_application and "application_id" in query_params else {}
    kwargs = bearer(token)
    if method == "GET":
        return client.get(url, query, **kwargs), application
    body_schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    body = dict(BODIES.get((method, path)) or (_example(schema, body_schema) if body_schema else {}))
    if name_application and body_schema and "application_id" in _resolve(schema, body_schema).get("properties", {}):
        body["application_id"] = application.slug
    if query:
        url += f"?application_id={application.slug}"
    return client.generic(method, url, data=json.dumps(body),
                          content_type="application/json", **kwargs), application


def swept_operations() -> list[tuple[str, str, dict]]:
    return [(m, p, o) for m, p, o in api_operations() if (m, p) not in UNSCOPED | PUBLISHABLE_ONLY]


def test_every_api_operation_is_404_for_a_personal_token_of_an_outsider(client, world):
    before = _object_counts()
    for method, path, operation in swept_operations():
        response, _ = _api_request(client, world["attacker_personal_token"], method, path, operation,
                                   world["victims"])
        assert response.status_code == 404, (method, path, response.status_code, response.content[:300])
        assert response.json()["error"]["code"] == "not_found"
    assert _object_counts() == before


def test_every_api_operation_refuses_another_applications_token(client, world):
    """Path ids of another tenant are 404; naming another tenant is 403 (the token
    is bound to its own application); never data, never a write."""
    before = _object_counts()

    def wrong_kind(method: str, path: str, response) -> bool:
        # A human-only operation may refuse the token for its kind before it looks
        # at the tenant: also a refusal that reveals nothing.
        return (method, path) in HUMAN_ONLY and response.status_code == 403 and (
            response.json()["error"]["code"] == "human_required")

    for method, path, operation in swept_operations():
        if _names_application(operation):
            response, _ = _api_request(client, world["attacker_app_token"], method, path, operation,
                                       world["victims"])
            assert response.status_code == 403, (method, path, response.status_code, response.content[:300])
            assert wrong_kind(method, path, response) or response.json()["error"]["code"] == "application_mismatch"
        if "{" in path:  # the object's id alone: it does not exist for this token
            response, _ = _api_request(client, world["attacker_app_token"], method, path, operation,
                                       world["victims"], name_application=False)
            if not wrong_kind(method, path, response):
                assert response.status_code == 404, (method, path, response.status_code, response.content[:300])
                assert response.json()["error"]["code"] == "not_found"
        assert _names_application(operation) or "{" in path, f"{method} {path} names no application"
    assert _object_counts() == before


def test_the_same_api_operations_answer_their_own_application(client, world):
    """The owner's personal token is neither 404 nor 403 anywhere: the refusals
    above are about the tenant."""
    for method, path, operation in swept_operations():
        response, _ = _api_request(client, world["owner_personal_token"], method, path, operation,
                                   world["victims"])
        assert response.status_code not in (403, 404) and response.status_code < 500, (
            method, path, response.status_code, response.content[:300])


def test_exactly_the_human_only_operations_refuse_an_application_token(client, world):
    refused = set()
    for method, path, operation in swept_operations():
        application, _ = _target("api", tuple(p["name"] for p in operation.get("parameters", [])
                                             if p["in"] == "path"), world["victims"])
        token = DEMO_TOKEN_SECRETS[application.slug]  # the victim's own integration token
        response, _ = _api_request(client, token, method, path, operation, [application])
        assert response.status_code < 500, (method, path, response.status_code)
        if response.status_code == 403:
            assert response.json()["error"]["code"] == "human_required", (method, path, response.content)
            refused.add((method, path))
    assert refused == HUMAN_ONLY


def test_a_revoked_or_unknown_token_is_401_everywhere(client, world):
    for method, path, operation in api_operations():
        response, _ = _api_request(client, "cc_app_not-a-real-token", method, path, operation, world["victims"])
        assert response.status_code == 401, (method, path, response.status_code)
        assert response.json()["error"]["code"] == "unauthorized"


def test_ids_in_a_posted_form_name_nothing_of_another_application(client, world):
    """The sweep above fills in URL arguments; these screens also take ids in the
    body. A member of both applications posts, under A's URL, ids of B's objects:
    each is looked up within A, so nothing of B is decided, promoted or retired."""
    apps_ = {a.slug: a for a in world["victims"]}
    a, b = apps_["acme-chat"], apps_["globex-verifier"]
    Flag, CaseLabel, Case = (apps.get_model(m) for m in ("feedback.Flag", "adjudication.CaseLabel", "adjudication.Case"))
    CorpusEntry = apps.get_model("teaching.CorpusEntry")
    theirs_pending = list(Flag.objects.filter(application=b, status="pending").values_list("public_id", flat=True)[:5])
    their_label = CaseLabel.objects.filter(application=b).order_by("pk").first()
    # Entries are named by their number within the URL's application: B's numbers
    # past A's last one name nothing in A.
    last_of_a = CorpusEntry.objects.filter(application=a).order_by("-number").values_list("number", flat=True)[0]
    their_entries = [last_of_a + 1, last_of_a + 2]
    assert theirs_pending and their_label and len(their_entries) == 2
    before = _object_counts()
    client.force_login(world["owner"])
    client.post(f"/a/{a.slug}/flags/bulk-reject/", {"ids": theirs_pending, "note": "cross-tenant"})
    own_case = Case.objects.filter(application=a).order_by("pk").first()
    client.post(f"/a/{a.slug}/cases/{own_case.pk}/gold/", {"label_id": their_label.pk, "rationale": "cross-tenant"})
    response = client.post(f"/a/{a.slug}/teaching/corpus/",
                           {"entry": their_entries[0], "superseded_by": their_entries[1], "note": "cross-tenant"})
    assert response.status_code == 422
    assert Flag.objects.filter(public_id__in=theirs_pending, status="pending").count() == len(theirs_pending)
    assert _object_counts() == before, "ids of another application's objects changed something"


def test_the_publishable_key_operations_take_nothing_but_a_key_of_their_own_application(client, world):
    """Every other token is refused there (403: a key is what a web page may hold), and
    another application's key cannot name a victim application: it acts on its own only."""
    from consoles.tests.factories import publishable_key

    embed = [(m, p, o) for m, p, o in api_operations() if p.startswith("/api/v1/embed/")]
    assert {(m, p) for m, p, _ in embed} == PUBLISHABLE_ONLY
    attacker_key = publishable_key(Application.objects.get(slug="attacker"))
    before = _object_counts()
    for method, path, operation in embed:
        for token in (world["attacker_app_token"], world["attacker_personal_token"], world["owner_personal_token"]):
            response, _ = _api_request(client, token, method, path, operation, world["victims"])
            assert response.status_code == 403, (method, path, response.status_code)
            assert response.json()["error"]["code"] == "publishable_key_required"
        if _names_application(operation):
            response, _ = _api_request(client, attacker_key, method, path, operation, world["victims"])
            assert response.status_code == 403, (method, path, response.status_code, response.content[:300])
            assert response.json()["error"]["code"] == "application_mismatch"
    assert _object_counts() == before
    problems = client.get("/api/v1/embed/problems", **bearer(attacker_key)).json()["problems"]
    assert problems == [{"key": p["key"], "label": p["label"]} for p in Application.objects.get(slug="attacker").problems]


def test_the_sample_chat_page_shows_the_demo_key_and_nothing_else(client, world):
    from consoles.management.commands.load_demo import DEMO_PUBLISHABLE_KEY, DEMO_TOKEN_SECRETS

    page = client.get("/demo/chat/").content.decode()
    assert DEMO_PUBLISHABLE_KEY in page
    assert not any(secret in page for secret in DEMO_TOKEN_SECRETS.values())
