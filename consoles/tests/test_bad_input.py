"""The bad-input catalogue, against every write operation of the JSON API.

Each POST operation (found in the OpenAPI schema, so a new one is covered) gets
a valid body, then each kind of bad input in turn: too large, not JSON, not an
object, an unknown field, a wrong type in each field, NUL / right-to-left /
emoji text in each string field. Every answer is a 4xx with the error shape
naming the field, or (for odd but valid text) a success that stores the text
verbatim; never a 5xx, and a refused request leaves every table as it was.
"""

import json
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.test import Client

from adjudication.tests.factories import case_payload
from consoles.api import api
from consoles.management.commands.load_demo import DEMO_PUBLISHABLE_KEY
from consoles.testing import api_operations, bearer
from teaching.tests.factories import candidate_payload

from .test_tenant_sweep import _object_counts, _resolve, _target, world  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db

# A valid body for each write operation; the catalogue breaks one thing at a time.
VALID: dict[tuple[str, str], dict] = {
    ("POST", "/api/v1/flags"): {"region": "answer", "problem": "fabricated", "message_id": "cat-1",
                                "note": "n", "prompt": "p", "answer": "a", "context": "c",
                                "session_id": "s", "end_user_ref": "u", "detector_scores": {"hallucination": 0.5}},
    ("POST", "/api/v1/flags/batch"): {"flags": [{
        "region": "answer", "problem": "fabricated", "message_id": "cat-batch-1", "note": "n", "prompt": "p",
        "answer": "a", "context": "c", "session_id": "s", "end_user_ref": "u",
        "detector_scores": {"hallucination": 0.5}}]},
    ("POST", "/api/v1/embed/flags"): {"region": "answer", "problem": "fabricated", "message_id": "cat-embed-1",
                                      "note": "n", "prompt": "p", "answer": "a", "context": "c",
                                      "session_id": "s", "end_user_ref": "u",
                                      "detector_scores": {"hallucination": 0.5}},
    ("POST", "/api/v1/flags/{flag_id}/review"): {"status": "rejected", "version": 1, "note": "n"},
    ("POST", "/api/v1/cases"): {"cases": [case_payload("cat-1")]},
    ("POST", "/api/v1/cases/{case_ref}/feedback"): {"disposition": "agrees", "note": "n"},
    ("POST", "/api/v1/teaching/candidates"): candidate_payload("cat-1"),
    ("POST", "/api/v1/teaching/eval-cases"): {"cases": [{
        "case_id": "cat-1", "split": "dev", "subject": "s", "intent": "i", "expected_object": "o",
        "expected_polarity": "affirms"}]},
    ("POST", "/api/v1/teaching/proposals"): {"candidate_id": "disc-oslo"},
    ("POST", "/api/v1/teaching/proposals/{proposal_id}/decision"): {"decision": "withdraw", "note": "n"},
    ("POST", "/api/v1/score"): {"detector": "hummingbird", "region": "answer", "text": "t",
                                "axis_energy": {"hallucination": {"p_detector": 0.3, "threshold": 0.5}}},
    ("PUT", "/api/v1/bank/{profile}/vectors"): {"dim": 4, "vectors": [
        {"exemplar_id": "fb_0123456789abcdef-f-0123456789ab", "vector": [1.0, 0.0, 0.0, 0.0]}]},
}

# A batch answers 200 with one answer per item: an item's refusal is its answer's
# status and error (its fields named under `flags.<index>.`), and writes nothing.
BATCHES = {("POST", "/api/v1/flags/batch")}

RTL = "\u202eevil.exe\u202c \u05e9\u05dc\u05d5\u05dd \u0627\u0644\u0633\u0644\u0627\u0645 a\u0301"
EMOJI = "\U0001f600\U0001f469\u200d\U0001f469\u200d\U0001f467"


def write_operations() -> list[tuple[str, str, dict]]:
    return [(m, p, o) for m, p, o in api_operations() if m != "GET"]


def test_every_write_operation_has_a_valid_body_in_the_catalogue():
    assert {(m, p) for m, p, _ in write_operations()} == set(VALID)


def _leaves(node: object, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """(path, value) of every leaf of the body (dict keys and list indexes)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    elif path:
        yield path, node


def _leaf_paths(node: object) -> Iterator[tuple]:
    return (path for path, _ in _leaves(node))


def _string_paths(node: object) -> Iterator[tuple]:
    """Where the body holds a string."""
    return (path for path, value in _leaves(node) if isinstance(value, str))


def _replace(body: dict, path: tuple, value: object) -> dict:
    body = json.loads(json.dumps(body))
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


class Catalogue:
    def __init__(self, client: Client, token: str, victims, method: str, path: str, operation: dict) -> None:
        params = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        self.application, values = _target("api", tuple(params), victims)
        self.url = path
        for name, value in values.items():
            self.url = self.url.replace("{" + name + "}", str(value))
        if any(p["name"] == "application_id" for p in operation.get("parameters", [])):
            self.url += f"?application_id={self.application.slug}"
        self.client, self.token, self.method, self.path = client, token, method, path
        self.valid = dict(VALID[(method, path)])
        body_schema = operation["requestBody"]["content"]["application/json"]["schema"]
        if "application_id" in _resolve(api.get_openapi_schema(), body_schema).get("properties", {}):
            self.valid["application_id"] = self.application.slug

    def post(self, raw: bytes | str | dict, content_type: str = "application/json"):
        data = raw if isinstance(raw, bytes | str) else json.dumps(raw)
        return self.client.generic(self.method, self.url, data=data, content_type=content_type,
                                   **bearer(self.token))

    def refused(self, raw, status: int | tuple[int, ...], field: str | None = None,
                content_type: str = "application/json") -> dict:
        before = _object_counts()
        response = self.post(raw, content_type)
        statuses = status if isinstance(status, tuple) else (status,)
        where = f"{self.method} {self.path}"
        if (self.method, self.path) in BATCHES and response.status_code == 200:
            [item] = response.json()["items"]  # the catalogue's batches hold one item
            assert item["status"] in statuses and item["id"] is None, (where, item)
            error = {**item["error"], "fields": {f"flags.{item['index']}.{name}": why
                                                 for name, why in item["error"]["fields"].items()}}
        else:
            assert response.status_code in statuses, (where, response.status_code, response.content[:400])
            error = response.json()["error"]
        assert error["code"] and error["message"], (where, error)
        if field is not None:
            assert any(name == field or name.startswith(field + ".") or name.endswith("." + field)
                       or field.startswith(name + ".") for name in error["fields"]), (where, field, error)
        assert _object_counts() == before, f"{where}: a refused request changed the database"
        return error


@pytest.fixture
def catalogues(client, world, settings):  # noqa: F811 - the sweep's fixture
    # The widget's operation takes the demo's publishable key; the catalogue is about input,
    # so its many requests from one session are not held back by the session's limit.
    settings.EMBED_RATE_PER_SESSION = settings.EMBED_RATE_PER_KEY = 100_000
    return [Catalogue(client, DEMO_PUBLISHABLE_KEY if p.startswith("/api/v1/embed/") else world["owner_personal_token"],
                      world["victims"], m, p, o)
            for m, p, o in write_operations()]


def test_oversized_bodies_are_413_before_anything_is_read(catalogues):
    for cat in catalogues:
        padding = "x" * (settings.API_MAX_BODY_BYTES + 1)
        error = cat.refused(_replace(cat.valid, next(iter(_string_paths(cat.valid))), padding), 413)
        assert error["code"] == "too_large"


def test_a_megabyte_of_emoji_is_413(catalogues):
    emoji = EMOJI * (1024 * 1024 // len(EMOJI.encode()))  # 1 MB of UTF-8
    for cat in catalogues:
        for raw in (json.dumps(_replace(cat.valid, next(iter(_string_paths(cat.valid))), emoji),
                               ensure_ascii=False).encode(),
                    json.dumps(_replace(cat.valid, next(iter(_string_paths(cat.valid))), emoji))):
            cat.refused(raw, 413)


@pytest.mark.parametrize("raw", [b'{"region": ', b"not json", b"\xff\xfe{}", b"", b"null", b"[]", b'"text"', b"42"])
def test_malformed_or_non_object_bodies_are_a_clear_4xx(catalogues, raw):
    for cat in catalogues:
        cat.refused(raw, (400, 422))


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
def test_a_json_body_sent_as_another_media_type_is_415(catalogues, content_type):
    """Not read as JSON anyway: `curl -d` without a Content-Type sends a form."""
    for cat in catalogues:
        error = cat.refused(cat.valid, 415, content_type=content_type)
        assert error["code"] == "unsupported_media_type" and content_type in error["message"]


def test_a_json_media_type_with_parameters_or_a_json_suffix_is_json(catalogues):
    for cat in catalogues:
        for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
            assert cat.post(cat.valid, content_type).status_code != 415, (cat.path, content_type)


def test_unknown_fields_are_refused_naming_the_field(catalogues):
    for cat in catalogues:
        cat.refused({**cat.valid, "surprise_field": 1}, 422, "surprise_field")


def test_a_wrong_type_in_any_field_is_refused_naming_it(catalogues):
    for cat in catalogues:
        for path in _leaf_paths(cat.valid):
            if path == ("application_id",):
                continue
            field = ".".join(str(p) for p in path)
            cat.refused(_replace(cat.valid, path, {"nested": ["wrong", "type"]}), 422, field)


@pytest.mark.parametrize("operation", [pytest.param((m, p), id=f"{m} {p}") for m, p in sorted(VALID)])
def test_nul_in_any_text_field_is_refused_naming_it(catalogues, operation):
    for cat in catalogues:
        if (cat.method, cat.path) != operation:
            continue
        for path in _string_paths(cat.valid):
            if path == ("application_id",):
                continue
            field = ".".join(str(p) for p in path)
            cat.refused(_replace(cat.valid, path, "before\x00after"), 422, field)


def test_right_to_left_and_emoji_text_is_stored_verbatim_or_refused_clearly(catalogues):
    for cat in catalogues:
        for path in _string_paths(cat.valid):
            if path == ("application_id",):
                continue
            for text in (RTL, EMOJI * 20):
                before = _object_counts()
                response = cat.post(_replace(cat.valid, path, text))
                assert response.status_code < 500, (cat.path, path, response.status_code, response.content[:300])
                if response.status_code >= 400:
                    assert response.json()["error"]["code"], (cat.path, path, response.content[:300])
                    assert _object_counts() == before
                elif response.status_code == 201 and path[-1] in response.json():
                    assert response.json()[path[-1]] == text  # verbatim, not normalised or mangled
                elif (cat.method, cat.path) in BATCHES:
                    [item] = response.json()["items"]
                    assert item["status"] in (200, 201, 422), (cat.path, path, item)


# --- HTML and JS in every text field: stored verbatim, rendered escaped ---------------

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">"\'&'


def test_html_in_every_text_field_is_rendered_escaped_on_every_page(client, world):  # noqa: F811
    from adjudication.models import Case
    from consoles.testing import url_routes
    from feedback.models import Flag

    owner_token = world["owner_personal_token"]
    application = world["victims"][0]
    flag = _post(client, owner_token, "/api/v1/flags", {
        **{name: PAYLOAD for name in ("note", "prompt", "answer", "context", "session_id", "end_user_ref")},
        "region": "answer", "problem": application.problems[0]["key"], "message_id": PAYLOAD,
        "application_id": application.slug})
    case = case_payload("hostile", claim={"subject": PAYLOAD, "text": PAYLOAD}, context=PAYLOAD,
                        mined_by=[PAYLOAD])
    case["evidence"][0].update(sensor=PAYLOAD, evidence_id=PAYLOAD, correlation_group=PAYLOAD)
    _post(client, owner_token, "/api/v1/cases", {"cases": [case], "application_id": application.slug})
    chain = {"subject": PAYLOAD, "intent": PAYLOAD, "connective": PAYLOAD, "object": PAYLOAD}
    _post(client, owner_token, "/api/v1/teaching/candidates", candidate_payload(
        "hostile", proposed_chain=chain, evidence=[{"source": PAYLOAD, "ref": PAYLOAD}],
        application_id=application.slug))
    assert Flag.objects.get(public_id=flag["id"]).prompt == PAYLOAD  # stored verbatim

    client.force_login(world["owner"])
    case_pk = Case.objects.get(application=application, case_id="hostile").pk
    slug = application.slug
    pages = [f"/a/{slug}/flags/{flag['id']}/", f"/a/{slug}/flags/", f"/a/{slug}/cases/{case_pk}/",
             f"/a/{slug}/cases/", f"/a/{slug}/teaching/candidates/", f"/a/{slug}/"]
    pages += [r.url({"app_slug": slug}) for r in url_routes() if r.application_scoped and r.kwargs == ("app_slug",)]
    shown = 0
    for url in pages:
        response = client.get(url)
        assert response.status_code < 500, url
        if not response["Content-Type"].startswith("text/html"):
            continue  # downloads (JSONL) carry the text as JSON strings
        html = response.content.decode()
        assert "<script>window.__pwned" not in html and 'onerror="window.__pwned' not in html, url
        shown += html.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;")
    assert shown >= 6  # the text is there, as text


def _post(client, token: str, url: str, body: dict) -> dict:
    response = client.post(url, json.dumps(body), content_type="application/json", **bearer(token))
    assert response.status_code in (200, 201), (url, response.content[:400])
    return response.json()
