"""The embed API (publishable keys): CORS for listed origins only, refusals everywhere
else, rate limits with Retry-After, and the same flag body and write path as
POST /api/v1/flags."""

import json

import pytest
from django.core.cache import caches

from consoles import ratelimit
from consoles.models import ApiToken
from consoles.services import token_revoke
from consoles.testing import api_operations, bearer, url_routes
from consoles.tests.factories import ApplicationFactory, application_token, publishable_key
from feedback.models import AuthorKind, Flag, FlagEvent

ORIGIN = "https://chat.example.com"
OTHER = "https://evil.example.net"
BODY = {"region": "answer", "problem": "fabricated", "note": "invented a store hour",
        "prompt": "When does Lyon open?", "context": "Lyon: closed Sundays.", "answer": "7am on Sundays.",
        "detector_scores": {"hallucination": 0.12}, "message_id": "msg-1", "session_id": "sess-1"}

pytestmark = pytest.mark.django_db


@pytest.fixture
def key(application) -> str:
    return publishable_key(application, origins=(ORIGIN, "http://127.0.0.1:8123"))


@pytest.fixture(autouse=True)
def frozen_minute(monkeypatch):
    """Every request of a test falls in one rate-limit window, whatever the wall clock does."""
    monkeypatch.setattr(ratelimit, "_clock", lambda: 1_800_000_020.0)


def post(client, key: str, body: dict, origin: str | None = ORIGIN, path: str = "/api/v1/embed/flags"):
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    return client.post(path, data=json.dumps(body), content_type="application/json", **bearer(key), **headers)


def get_problems(client, key: str, origin: str | None = ORIGIN):
    headers = {"HTTP_ORIGIN": origin} if origin else {}
    return client.get("/api/v1/embed/problems", **bearer(key), **headers)


def test_a_flag_from_a_listed_origin_is_a_pending_user_flag_with_cors_headers(client, application, key):
    response = post(client, key, BODY)
    assert response.status_code == 201, response.content
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert "Origin" in response["Vary"]
    flag = Flag.objects.get(public_id=response.json()["id"])
    assert (flag.status, flag.region, flag.problem, flag.suggested_axis, flag.context) == (
        "pending", "answer", "fabricated", "hallucination", "Lyon: closed Sundays.")
    assert flag.author_kind == AuthorKind.END_USER and flag.application == application
    token = ApiToken.objects.get(kind="publishable")
    assert FlagEvent.objects.get(flag=flag).actor_token == token  # written whole, with its history
    assert response.json() == {"id": flag.public_id, "created": True}
    again = post(client, key, {**BODY, "note": "again"})
    assert again.status_code == 200 and again.json() == {"id": flag.public_id, "created": False}
    assert Flag.objects.count() == 1


def test_a_key_never_reads_a_flag_back_even_by_posting_its_message_again(client, application, key, app_token):
    """The key is public: posting a message someone flagged (and a curator reviewed) must not
    hand back its texts or its review."""
    secret = {**BODY, "prompt": "my card is 4242", "note": "private", "message_id": "theirs"}
    client.post("/api/v1/flags", data=json.dumps(secret), content_type="application/json", **bearer(app_token))
    response = post(client, key, {**BODY, "message_id": "theirs"})
    assert response.status_code == 200
    assert set(response.json()) == {"id", "created"}
    assert b"4242" not in response.content and b"private" not in response.content


def test_the_problems_are_the_applications_wording_without_axes(client, application, key):
    response = get_problems(client, key)
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert response.json()["problems"][2] == {"key": "fabricated", "label": "Made something up"}
    assert len(response.json()["problems"]) == len(application.problems)


def test_an_unlisted_origin_is_403_without_cors_headers_and_writes_nothing(client, key):
    for response in (post(client, key, BODY, origin=OTHER), get_problems(client, key, origin=OTHER)):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "origin_not_allowed"
        assert "Access-Control-Allow-Origin" not in response
    assert not Flag.objects.exists()


def test_the_preflight_is_answered_for_a_listed_origin_only(client, key):
    preflight = {"HTTP_ORIGIN": ORIGIN, "HTTP_ACCESS_CONTROL_REQUEST_METHOD": "POST",
                 "HTTP_ACCESS_CONTROL_REQUEST_HEADERS": "authorization, content-type"}
    response = client.options("/api/v1/embed/flags", **preflight)
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == ORIGIN
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert {"authorization", "content-type"} <= {h.strip().lower() for h in
                                                  response["Access-Control-Allow-Headers"].split(",")}
    refused = client.options("/api/v1/embed/flags", **{**preflight, "HTTP_ORIGIN": OTHER})
    assert refused.status_code == 403 and "Access-Control-Allow-Origin" not in refused
    # Only the embed API answers CORS at all.
    elsewhere = client.options("/api/v1/flags", **preflight)
    assert "Access-Control-Allow-Origin" not in elsewhere


def test_a_revoked_keys_origin_gets_no_preflight(client, key):
    token_revoke(token=ApiToken.objects.get(kind="publishable"))
    response = client.options("/api/v1/embed/flags", HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    assert response.status_code == 403
    assert post(client, key, BODY).status_code == 401
    assert not Flag.objects.exists()


def test_no_cors_headers_for_other_tokens_or_origins_anywhere(client, application, app_token):
    response = client.get("/api/v1/flags", HTTP_ORIGIN=ORIGIN, **bearer(app_token))
    assert response.status_code == 200 and "Access-Control-Allow-Origin" not in response


def test_an_application_or_personal_token_is_refused_by_the_embed_api(client, application, app_token):
    response = post(client, app_token, BODY)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "publishable_key_required"
    assert post(client, "cc_pub_not-a-real-key", BODY).status_code == 401
    assert not Flag.objects.exists()


def test_bad_input_is_422_naming_the_field_as_on_the_flags_api(client, key):
    cases = [
        ({**BODY, "region": "middle"}, "region"),
        ({**BODY, "problem": "not-a-problem"}, "problem"),
        ({k: v for k, v in BODY.items() if k != "message_id"}, "message_id"),
        ({**BODY, "session_id": ""}, "session_id"),
        ({**BODY, "colour": "red"}, "colour"),
        ({**BODY, "note": "a\x00b"}, "note"),
    ]
    for body, field in cases:
        response = post(client, key, body)
        assert response.status_code == 422, (field, response.content)
        assert field in response.json()["error"]["fields"], (field, response.json())
        assert response["Access-Control-Allow-Origin"] == ORIGIN  # the widget can read why
    assert not Flag.objects.exists()


def test_a_publishable_key_creates_user_flags_only(client, key, application):
    application.capture_enabled = application.capture_on_refusal = True
    application.save()
    response = post(client, key, {**BODY, "capture_reason": "refused"})
    assert response.status_code == 403
    assert response.json()["error"]["fields"] == {"capture_reason": "not allowed with a publishable key"}
    assert not Flag.objects.exists()


def test_a_key_acts_on_its_own_application_only(client, key):
    ApplicationFactory(slug="other")
    response = post(client, key, {**BODY, "application_id": "other"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "application_mismatch"
    assert not Flag.objects.exists()


def test_a_session_past_its_limit_gets_429_with_retry_after(client, key, settings):
    settings.EMBED_RATE_PER_SESSION = 3
    for n in range(3):
        assert post(client, key, {**BODY, "message_id": f"m{n}"}).status_code == 201
    refused = post(client, key, {**BODY, "message_id": "m3"})
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert refused["Retry-After"] == "40"  # the frozen clock is 20 s into its minute
    assert refused["Access-Control-Allow-Origin"] == ORIGIN
    assert "Retry-After" in refused["Access-Control-Expose-Headers"]
    assert not Flag.objects.filter(message_id="m3").exists()
    # Another session of the same key is not held back by this one.
    assert post(client, key, {**BODY, "message_id": "m4", "session_id": "sess-2"}).status_code == 201


def test_a_key_past_its_limit_gets_429_on_every_embed_route(client, key, settings, monkeypatch):
    settings.EMBED_RATE_PER_KEY = 2
    assert get_problems(client, key).status_code == 200
    assert post(client, key, BODY).status_code == 201
    for response in (get_problems(client, key), post(client, key, {**BODY, "message_id": "m9"})):
        assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    # The next minute starts a new count.
    monkeypatch.setattr(ratelimit, "_clock", lambda: 1_800_000_080.0)
    assert get_problems(client, key).status_code == 200


def test_the_counts_are_in_the_shared_database_cache(settings, monkeypatch):
    """Every gunicorn worker and app server counts in one place: the database, not a
    process's memory. A fresh cache object (what another worker has) sees the count,
    and refuses past the limit."""
    from django.core.cache.backends.db import DatabaseCache

    assert isinstance(caches[settings.RATE_LIMIT_CACHE], DatabaseCache)
    for _ in range(2):
        ratelimit.rate_limit_hit(scope="test", ident="x", limit=2, what="t")
    other_worker = caches.create_connection(settings.RATE_LIMIT_CACHE)
    monkeypatch.setattr(ratelimit, "caches", {settings.RATE_LIMIT_CACHE: other_worker})
    with pytest.raises(ratelimit.RateLimited):
        ratelimit.rate_limit_hit(scope="test", ident="x", limit=2, what="t")


def test_a_publishable_key_is_403_on_every_route_but_the_embed_ones(client, application, key):
    """The API sweep (every operation of the schema) and every URL pattern: 403 before the
    route runs, whatever the method, except under /embed/ and /api/v1/embed/."""
    swept = 0
    for method, path, _ in api_operations():
        url = path.replace("{flag_id}", "fb_0000000000000000").replace("{case_pk}", "1").replace(
            "{proposal_id}", "p" * 12)
        response = client.generic(method, url, data="{}", content_type="application/json", **bearer(key),
                                  HTTP_ORIGIN=ORIGIN)
        if path.startswith("/api/v1/embed/"):
            assert response.status_code != 403, (method, path)
            continue
        assert response.status_code == 403, (method, path, response.status_code)
        assert response.json()["error"]["code"] == "publishable_key_not_allowed"
        assert "Access-Control-Allow-Origin" not in response
        swept += 1
    for route in url_routes():
        if route.route.startswith(("embed/", "api/")):
            continue
        url = route.url({name: "x" for name in route.kwargs})
        for method in ("get", "post"):
            response = getattr(client, method)(url, **bearer(key))
            assert response.status_code == 403, (method, url, response.status_code)
        swept += 1
    assert swept > 60
    assert not Flag.objects.exists()


def test_the_api_refuses_a_publishable_key_even_past_the_middleware(rf, application, key):
    """Defence in depth: were the API mounted where the middleware does not look, its own
    bearer auth still refuses the key."""
    from consoles.api import bearer_auth
    from consoles.errors import PermissionDeniedError

    request = rf.get("/elsewhere/", HTTP_AUTHORIZATION=f"Bearer {key}")
    with pytest.raises(PermissionDeniedError):
        bearer_auth(request)


def test_the_widget_script_is_served_small_and_cacheable(client):
    response = client.get("/embed/flag.js")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/javascript")
    assert len(response.content) < 15 * 1024
    assert b'customElements.define("curator-flag"' in response.content
    assert b"http" not in response.content.split(b"*/", 1)[1].replace(b"http://", b"").replace(b"https://", b"")
    assert client.get("/embed/flag.js", HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


def test_an_application_token_still_works_on_its_own_routes(client, application):
    token = application_token(application)
    response = client.post("/api/v1/flags", data=json.dumps({**BODY, "message_id": "own"}),
                           content_type="application/json", **bearer(token))
    assert response.status_code == 201
