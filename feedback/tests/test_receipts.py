"""An integration's flag is a receipt until it is settled into the queue.

The suite settles after every answer (conftest); these tests hold receipts back,
as a busy server does between its settles, and check that nothing acknowledged
is lost or missed by a read, and that a settle makes exactly the flag the 201
described.
"""

import logging
import threading
import time

import pytest
from django.db import connection

from consoles.models import Role
from consoles.testing import bearer
from consoles.tests.factories import MembershipFactory, UserFactory
from feedback import receipts
from feedback.models import ErasureRecord, Flag, FlagEvent, FlagReceipt
from feedback.selectors import flag_page, pending_flag_count
from feedback.services import subject_erase

from .test_api import FLAG as API_FLAG

pytestmark = pytest.mark.django_db

# test_api's flag, with every text and the subject's reference set.
FLAG = {**API_FLAG, "context": "retrieved: nothing", "detector_scores": {"hallucination": 0.12, "jailbreak": 0.5},
        "end_user_ref": "user-9"}


@pytest.fixture
def held(settings, monkeypatch):
    """No settle after an answer: receipts wait for a read (or an explicit settle)."""
    settings.FLAG_SETTLE_INTERVAL = 3600
    monkeypatch.setattr(receipts, "_last_settle", time.monotonic())


def _post(client, token, body):
    return client.post("/api/v1/flags", data=body, content_type="application/json", **bearer(token))


def _unsettled() -> int:
    return FlagReceipt.objects.filter(moved=False).count()


def test_a_flag_is_a_receipt_until_settled_and_then_exactly_what_the_201_said(client, application, app_token, held):
    created = _post(client, app_token, FLAG)
    assert created.status_code == 201
    assert _unsettled() == 1 and not Flag.objects.exists()

    assert receipts.flags_settle() == 1
    assert _unsettled() == 0
    flag = Flag.objects.get()
    shown = client.get(f"/api/v1/flags/{flag.public_id}", **bearer(app_token)).json()
    shown.pop("events")
    assert shown == created.json()
    assert (flag.status, flag.author_kind, flag.axis, flag.suggested_axis) == (
        "pending", "end_user", "hallucination", "hallucination")
    assert flag.author_token_id is not None and flag.capture_reason == "" and flag.version == 1
    (event,) = FlagEvent.objects.filter(flag=flag)
    assert (event.action, event.from_status, event.to_status, event.actor_kind) == ("created", "", "pending", "token")
    assert event.actor_token_id == flag.author_token_id and event.created_at == flag.created_at


def test_receipts_settle_in_arrival_order_with_one_event_each(client, application, app_token, held):
    ids = [_post(client, app_token, {**FLAG, "message_id": f"m{n}"}).json()["id"] for n in range(5)]
    assert receipts.flags_settle() == 5
    assert list(Flag.objects.order_by("id").values_list("public_id", flat=True)) == ids
    assert FlagEvent.objects.filter(action="created").count() == 5
    assert receipts.flags_settle() == 0  # nothing twice
    assert Flag.objects.count() == 5 and FlagEvent.objects.count() == 5


def test_every_read_sees_a_flag_that_is_still_a_receipt(client, application, app_token, curator, held):
    flag_id = _post(client, app_token, FLAG).json()["id"]
    assert _unsettled() == 1
    detail = client.get(f"/api/v1/flags/{flag_id}", **bearer(app_token))
    assert detail.status_code == 200 and detail.json()["id"] == flag_id

    second = _post(client, app_token, {**FLAG, "message_id": "m2"}).json()["id"]
    listed = client.get("/api/v1/flags", **bearer(app_token)).json()
    assert [item["id"] for item in listed["items"]] == [second, flag_id]

    third = _post(client, app_token, {**FLAG, "message_id": "m3"}).json()["id"]
    client.force_login(curator)
    queue = client.get(f"/a/{application.slug}/flags/?status=pending")
    assert queue.status_code == 200 and third in queue.content.decode()

    _post(client, app_token, {**FLAG, "message_id": "m4"})
    assert pending_flag_count(application=application) == 4
    assert _unsettled() == 0


def test_the_same_message_again_is_200_whether_its_flag_is_a_receipt_or_settled(client, application, app_token,
                                                                                   held):
    first = _post(client, app_token, FLAG).json()
    again = _post(client, app_token, {**FLAG, "note": "changed"})
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    assert again.json()["note"] == FLAG["note"]
    # Settled and let go of (as PostgreSQL does after KEEP_MOVED): the flag answers.
    FlagReceipt.objects.all().delete()
    third = _post(client, app_token, {**FLAG, "note": "third"})
    assert third.status_code == 200 and third.json()["id"] == first["id"]
    assert Flag.objects.count() == 1 and FlagEvent.objects.count() == 1 and not FlagReceipt.objects.exists()


def test_a_receipt_is_another_tenants_404(client, tenant_pair, held):
    flag_id = _post(client, tenant_pair.token_a, {**FLAG}).json()["id"]
    assert client.get(f"/api/v1/flags/{flag_id}", **bearer(tenant_pair.token_b)).status_code == 404
    assert client.get(f"/api/v1/flags/{flag_id}", **bearer(tenant_pair.token_a)).status_code == 200


def test_reading_one_application_settles_only_its_receipts(client, tenant_pair, held):
    _post(client, tenant_pair.token_a, FLAG)
    _post(client, tenant_pair.token_b, FLAG)
    flag_page(application=tenant_pair.a)
    assert list(Flag.objects.values_list("application__slug", flat=True)) == [tenant_pair.a.slug]
    assert FlagReceipt.objects.filter(application=tenant_pair.b, moved=False).count() == 1


def test_the_settle_after_the_answer_keeps_to_its_interval(client, application, app_token, settings, monkeypatch):
    settings.FLAG_SETTLE_INTERVAL = 3600
    monkeypatch.setattr(receipts, "_last_settle", float("-inf"))  # the first answer of a fresh process settles
    _post(client, app_token, FLAG)
    assert Flag.objects.count() == 1 and _unsettled() == 0
    _post(client, app_token, {**FLAG, "message_id": "m2"})
    assert Flag.objects.count() == 1 and _unsettled() == 1  # within the interval: held for the next settle


def test_a_failed_settle_after_the_answer_loses_nothing(client, application, app_token, monkeypatch, caplog):
    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(receipts, "flags_settle", broken)
    with caplog.at_level(logging.ERROR, logger="feedback.receipts"):
        response = _post(client, app_token, FLAG)
    assert response.status_code == 201
    assert "Settling flag receipts failed" in caplog.text
    monkeypatch.undo()
    assert client.get(f"/api/v1/flags/{response.json()['id']}", **bearer(app_token)).status_code == 200
    assert Flag.objects.count() == 1


def test_captures_and_operators_flags_are_written_at_once(client, application, app_token, held):
    application.capture_enabled = application.capture_on_refusal = True
    application.save()
    capture = _post(client, app_token, {"region": "answer", "prompt": "q", "answer": "no.", "message_id": "c1",
                                        "capture_reason": "refused"})
    assert capture.status_code == 201
    curator = MembershipFactory(user=UserFactory(username="op"), application=application, role=Role.CURATOR).user
    client.force_login(curator)
    operator = client.post("/api/v1/flags", data={**FLAG, "application_id": application.slug},
                           content_type="application/json")
    assert operator.status_code == 201
    assert not FlagReceipt.objects.exists()
    assert sorted(Flag.objects.values_list("author_kind", flat=True)) == ["agent", "operator"]


def test_erasure_takes_the_subjects_receipts_with_it(client, application, app_token, held):
    _post(client, app_token, FLAG)
    _post(client, app_token, {**FLAG, "message_id": "m2", "end_user_ref": "someone-else"})
    record = subject_erase(application=application, end_user_ref="user-9", requested_by="dpo")
    assert record.flags_deleted == 1 and ErasureRecord.objects.count() == 1
    assert list(Flag.objects.values_list("end_user_ref", flat=True)) == ["someone-else"]
    assert not FlagReceipt.objects.filter(end_user_ref="user-9").exists()


def test_a_receipt_never_names_a_reviewer_or_a_decision(application):
    """Only the `created` transition comes through a receipt (DESIGN invariant 1)."""
    names = {f.name for f in FlagReceipt._meta.get_fields()}
    assert not names & {"status", "verdict", "axis", "author_user", "reviewer", "review_note"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL keeps settled receipts a moment")
def test_postgresql_lets_settled_receipts_go_after_a_moment(client, application, app_token, held):
    _post(client, app_token, FLAG)
    receipts.flags_settle()
    assert FlagReceipt.objects.filter(moved=True).count() == 1  # a racing repost still meets it
    FlagReceipt.objects.update(created_at=FlagReceipt.objects.get().created_at - receipts.KEEP_MOVED * 2)
    _post(client, app_token, {**FLAG, "message_id": "m2"})
    receipts.flags_settle()
    assert list(FlagReceipt.objects.values_list("message_id", flat=True)) == ["m2"]



@pytest.mark.skipif(connection.vendor != "postgresql", reason="concurrent settles need PostgreSQL's row locks")
@pytest.mark.django_db(transaction=True)
def test_a_read_waits_for_a_settle_under_way_in_another_process_and_reads_its_flag(client, application, app_token,
                                                                                   held):
    from django.db import connections, transaction

    from feedback.selectors import flag_get

    flag_id = _post(client, app_token, FLAG).json()["id"]
    settling, release = threading.Event(), threading.Event()

    def settler() -> None:  # another server process, settling after an answer
        try:
            with transaction.atomic():
                assert receipts.flags_settle(wait=False) == 1
                settling.set()
                release.wait(5)
                time.sleep(0.3)  # still holding the batch while the reader asks
        finally:
            connections.close_all()

    thread = threading.Thread(target=settler)
    thread.start()
    assert settling.wait(5)
    release.set()
    started = time.monotonic()
    flag = flag_get(application=application, public_id=flag_id)  # waits for the batch, then reads its flag
    waited = time.monotonic() - started
    thread.join()
    assert flag.public_id == flag_id and waited >= 0.2
    assert Flag.objects.count() == 1 and FlagEvent.objects.count() == 1


def test_a_request_asks_once_per_application_and_a_command_every_time(application, tenant_pair):
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections
    from django.test.utils import CaptureQueriesContext

    def asked(*applications) -> int:
        with CaptureQueriesContext(connection) as captured:
            for app in applications:
                receipts.flags_settle_for(app)
        return sum("feedback_flagreceipt" in q["sql"] for q in captured)

    # As Django's test client does: a request's signals without closing the
    # test's connection in the middle of its transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        request_started.send(sender=None)
        try:
            assert asked(application, application, tenant_pair.a, application, tenant_pair.a) == 2
        finally:
            request_finished.send(sender=None)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert asked(application, application) == 2  # no request: nothing remembered


def test_a_curator_flagging_a_message_still_a_receipt_gets_the_integrations_flag(client, application, app_token,
                                                                                 curator, held):
    integration = _post(client, app_token, FLAG).json()
    client.force_login(curator)
    operator = client.post("/api/v1/flags", data={**FLAG, "application_id": application.slug, "note": "mine"},
                           content_type="application/json")
    assert operator.status_code == 200 and operator.json()["id"] == integration["id"]
    assert operator.json()["note"] == FLAG["note"] and operator.json()["author_kind"] == "end_user"
    assert Flag.objects.count() == 1 and not FlagReceipt.objects.filter(moved=False).exists()
