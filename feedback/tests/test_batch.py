"""POST /api/v1/flags/batch: many flags in one request, each item checked and
deduplicated as POST /api/v1/flags does, the valid ones written with their
`created` events in one transaction."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles.testing import bearer
from consoles.tests.factories import personal_token
from feedback.models import Flag, FlagEvent

from .test_api import FLAG

pytestmark = pytest.mark.django_db

URL = "/api/v1/flags/batch"


def _batch(client, token, flags, **body):
    return client.post(URL, data={"flags": flags, **body}, content_type="application/json", **bearer(token))


def _flag(n, **overrides):
    return {**FLAG, "message_id": f"batch-{n}", **overrides}


def test_each_item_is_answered_in_order_and_the_valid_ones_are_stored_with_their_event(client, application, app_token):
    response = _batch(client, app_token, [_flag(0), _flag(1, problem="nonsense"), _flag(2)])
    assert response.status_code == 200
    items = response.json()["items"]
    assert [(i["index"], i["status"]) for i in items] == [(0, 201), (1, 422), (2, 201)]
    assert items[1]["id"] is None and items[1]["error"]["code"] == "validation_error"
    assert set(items[1]["error"]["fields"]) == {"problem"}
    assert items[0]["error"] is None
    stored = {f.public_id: f for f in Flag.objects.all()}
    assert set(stored) == {items[0]["id"], items[2]["id"]}
    assert FlagEvent.objects.filter(action="created").count() == 2
    assert all(FlagEvent.objects.filter(flag=f, action="created", actor_kind="token").count() == 1
               for f in stored.values())


def test_an_item_gets_the_same_flag_the_single_endpoint_makes(client, application, app_token):
    """Shared checks and the same id (a hash of application, message and region)."""
    items = _batch(client, app_token, [_flag(0)]).json()["items"]
    single = client.get(f"/api/v1/flags/{items[0]['id']}", **bearer(app_token)).json()
    assert single["status"] == "pending" and single["suggested_axis"] == "hallucination"
    assert single["author_kind"] == "end_user" and single["note"] == FLAG["note"]
    again = client.post("/api/v1/flags", data=_flag(0), content_type="application/json", **bearer(app_token))
    assert again.status_code == 200 and again.json()["id"] == items[0]["id"]


def test_a_stored_message_and_a_repeat_within_the_batch_are_200_with_their_id(client, application, app_token):
    stored = client.post("/api/v1/flags", data=_flag(0), content_type="application/json",
                         **bearer(app_token)).json()
    items = _batch(client, app_token, [_flag(0, note="changed"), _flag(1), _flag(1, note="again")]).json()["items"]
    assert [i["status"] for i in items] == [200, 201, 200]
    assert items[0]["id"] == stored["id"] and items[2]["id"] == items[1]["id"]
    assert Flag.objects.count() == 2 and FlagEvent.objects.count() == 2
    assert Flag.objects.get(public_id=stored["id"]).note == FLAG["note"]  # nothing overwritten


def test_a_schema_violation_names_the_items_field_and_refuses_only_that_item(client, application, app_token):
    items = _batch(client, app_token, [
        _flag(0, region="middle"), _flag(1, colour="red"), _flag(2, prompt="a\x00b"), "not an object", _flag(4),
    ]).json()["items"]
    assert [i["status"] for i in items] == [422, 422, 422, 422, 201]
    assert "region" in items[0]["error"]["fields"]
    assert "colour" in items[1]["error"]["fields"]
    assert "prompt" in items[2]["error"]["fields"]
    assert items[3]["error"]["fields"] == {"__all__": "The item must be a JSON object."}
    assert Flag.objects.count() == 1


def test_a_capture_while_capture_is_off_is_403_for_that_item(client, application, app_token):
    items = _batch(client, app_token, [_flag(0, problem="", capture_reason="refused"), _flag(1)]).json()["items"]
    assert [i["status"] for i in items] == [403, 201]
    assert items[0]["error"]["code"] == "capture_disabled"


def test_captures_over_the_capacity_drop_the_oldest_pending_as_one_by_one_would(client, capturing_application,
                                                                                  app_token):
    captures = [_flag(n, problem="", capture_reason="low_confidence") for n in range(5)]
    items = _batch(client, app_token, captures).json()["items"]
    assert [i["status"] for i in items] == [201] * 5
    pending = Flag.objects.filter(author_kind="agent", status="pending")
    assert pending.count() == capturing_application.capture_max_items == 3
    assert Flag.objects.filter(author_kind="agent", status="dropped").count() == 2
    assert FlagEvent.objects.filter(action="dropped").count() == 2


def test_an_item_naming_another_application_is_403_for_that_item(client, application, app_token, tenant_pair):
    items = _batch(client, app_token, [_flag(0, application_id=tenant_pair.b.slug),
                                       _flag(1, application_id=application.slug)]).json()["items"]
    assert [i["status"] for i in items] == [403, 201]
    assert items[0]["error"]["code"] == "application_mismatch"
    assert not Flag.objects.filter(application=tenant_pair.b).exists()


def test_the_batchs_application_must_match_the_token(client, application, app_token, tenant_pair):
    response = _batch(client, app_token, [_flag(0)], application_id=tenant_pair.b.slug)
    assert response.status_code == 403 and response.json()["error"]["code"] == "application_mismatch"
    assert not Flag.objects.exists()


def test_a_curator_batches_as_an_operator_naming_the_application(client, application, curator):
    token = personal_token(curator)
    assert _batch(client, token, [_flag(0)]).status_code == 403  # which application?
    items = _batch(client, token, [_flag(0)], application_id=application.slug).json()["items"]
    assert items[0]["status"] == 201
    assert Flag.objects.get().author_kind == "operator"
    # Or the items name it, all the same one (anything else in their place is theirs to refuse).
    items = _batch(client, token, [_flag(1, application_id=application.slug), _flag(2, application_id={})]).json()
    assert [i["status"] for i in items["items"]] == [201, 422]


def test_an_outsiders_batch_is_404_and_writes_nothing(client, tenant_pair):
    token = personal_token(tenant_pair.member_of_b)
    response = _batch(client, token, [_flag(0)], application_id=tenant_pair.a.slug)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert not Flag.objects.exists()


def test_more_than_500_items_is_413_naming_the_limit_and_none_is_422(client, application, app_token, settings):
    settings.API_MAX_BODY_BYTES = 10 * 1024 * 1024
    response = _batch(client, app_token, [{"region": "answer", "problem": "fabricated", "message_id": f"m{n}"}
                                          for n in range(501)])
    assert response.status_code == 413
    assert "500" in response.json()["error"]["message"] and "flags" in response.json()["error"]["fields"]
    response = _batch(client, app_token, [])
    assert response.status_code == 422 and "flags" in response.json()["error"]["fields"]
    assert not Flag.objects.exists()


def test_500_items_are_written_with_a_few_statements_not_one_per_item(client, application, app_token):
    flags = [{"region": "answer", "problem": "fabricated", "message_id": f"m{n}"} for n in range(500)]
    with CaptureQueriesContext(connection) as queries:
        items = _batch(client, app_token, flags).json()["items"]
    assert [i["status"] for i in items] == [201] * 500
    assert Flag.objects.count() == 500 and FlagEvent.objects.count() == 500
    inserts = [q for q in queries if q["sql"].upper().startswith("INSERT")]
    # bulk_create: one INSERT per table (SQLite may split a long one by its variable limit).
    assert 2 <= len(inserts) <= 6 and len(queries) < 20


def test_the_schema_documents_the_batch_with_its_items_and_limits(client):
    schema = client.get("/api/openapi.json").json()
    operation = schema["paths"][URL]["post"]
    assert {"200", "413", "422"} <= set(operation["responses"])
    body = schema["components"]["schemas"]["FlagBatchIn"]["properties"]["flags"]
    assert body["minItems"] == 1 and body["maxItems"] == 500
    assert set(body["items"]["properties"]) == set(schema["components"]["schemas"]["FlagIn"]["properties"])


# --- written before the answer ------------------------------------------------------

_seen: list[dict] = []


class SeenAtAnswer:
    """Outermost middleware: as the response leaves the application (nothing runs
    after it but the server sending it), read the flags its body names through a
    connection of its own, which sees only what was committed."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        import json

        from django.db import connections

        response = self.get_response(request)
        body = json.loads(response.content)
        ids = [i["id"] for i in body["items"] if i["id"]] if "items" in body else [body.get("id")]
        other = connections.create_connection("default")
        try:
            with other.cursor() as cursor:
                marks = ", ".join(["%s"] * len(ids))
                cursor.execute(f"SELECT f.public_id, COUNT(e.id) FROM feedback_flag f "  # noqa: S608 - test probe
                               f"LEFT JOIN feedback_flagevent e ON e.flag_id = f.id AND e.action = 'created' "
                               f"WHERE f.public_id IN ({marks}) GROUP BY f.public_id", ids)
                _seen.append({"status": response.status_code, "ids": ids, "rows": dict(cursor.fetchall()),
                              "in_transaction": connection.in_atomic_block})
        finally:
            other.close()
        return response


@pytest.fixture
def seen(settings):
    settings.MIDDLEWARE = ["feedback.tests.test_batch.SeenAtAnswer", *settings.MIDDLEWARE]
    _seen.clear()
    yield _seen
    _seen.clear()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("url", ["/api/v1/flags", URL])
def test_a_flag_is_committed_with_its_created_event_when_its_201_is_sent(client, application, app_token, seen, url):
    body = {"flags": [_flag(0), _flag(1)]} if url == URL else _flag(0)
    response = client.post(url, data=body, content_type="application/json", **bearer(app_token))
    assert response.status_code in (200, 201)
    [answer] = seen
    assert not answer["in_transaction"] and answer["ids"]
    assert answer["rows"] == dict.fromkeys(answer["ids"], 1), "another connection must see each flag and its event"
    assert set(Flag.objects.values_list("public_id", flat=True)) == set(answer["ids"])
