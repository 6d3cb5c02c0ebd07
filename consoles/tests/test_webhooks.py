"""Signed webhooks: outbox in the decision's transaction, delivery after commit,
signature, retries, the 24-hour disable, SSRF refusals, the real worker path."""

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from django.core.management import call_command
from django.db import transaction
from django.tasks import default_task_backend
from django.utils import timezone

from consoles import webhooks
from consoles.errors import InvalidInput
from consoles.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


class Receiver:
    """A tiny HTTP server on 127.0.0.1 answering each POST with the next status of `codes`."""

    def __init__(self, codes=(200,)) -> None:
        self.codes = list(codes)
        self.requests: list[tuple[str, dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((self.path, dict(self.headers), body))
                code = receiver.codes.pop(0) if len(receiver.codes) > 1 else receiver.codes[0]
                self.send_response(code)
                if code in (301, 302, 307):
                    self.send_header("Location", f"http://127.0.0.1:{receiver.port}/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    default_task_backend.clear()


def endpoint_for(application, url, events=("flag.approved",)):
    return webhooks.endpoint_create(application=application, url=url, events=list(events), actor=None)


def approve(application, curator):
    flag = FlagFactory(application=application, region="prompt", suggested_axis="jailbreak")
    return flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version, axis="jailbreak",
                       verdict="false_negative")


def test_an_approval_is_delivered_signed_after_commit(application, curator, receiver,
                                                      django_capture_on_commit_callbacks):
    endpoint = endpoint_for(application, receiver.url)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        flag = approve(application, curator)
        assert default_task_backend.results == []  # nothing is enqueued before the commit
    assert callbacks
    [result] = default_task_backend.results
    delivery = WebhookDelivery.objects.get()
    assert result.args == [delivery.pk]
    assert receiver.requests == []  # the request itself sent nothing: the worker does

    assert webhooks.attempt(delivery.pk) == "delivered"
    [(path, headers, body)] = receiver.requests
    assert path == "/hooks"
    assert webhooks.verify(endpoint.secret, body, headers["Webhook-Signature"])
    assert not webhooks.verify("whsec_other", body, headers["Webhook-Signature"])
    payload = json.loads(body)
    assert set(payload) == {"id", "type", "occurred_at", "application", "data"}
    assert payload["type"] == "flag.approved" and payload["application"] == application.slug
    assert payload["data"]["flag_id"] == flag.public_id and payload["data"]["reviewer"] == curator.username
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (DeliveryStatus.DELIVERED, 1, 200)


def test_a_500_is_retried_with_backoff(application, curator, django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[500, 200])
    try:
        endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        delivery = WebhookDelivery.objects.get()
        assert webhooks.attempt(delivery.pk) == "retrying"
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("retrying", 1, 500)
        retry = default_task_backend.results[-1]
        assert retry.task.run_after == delivery.next_attempt_at > delivery.last_attempt_at
        assert webhooks.attempt(delivery.pk) == "delivered"
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == ("delivered", 2)
        assert len(receiver.requests) == 2
        assert json.loads(receiver.requests[0][2])["id"] == json.loads(receiver.requests[1][2])["id"]
    finally:
        receiver.close()


def test_a_rolled_back_decision_sends_nothing(application, curator, receiver, django_capture_on_commit_callbacks):
    endpoint_for(application, receiver.url)
    with (django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError),
          transaction.atomic()):
        approve(application, curator)
        raise RuntimeError("the decision fails after its outbox row")
    assert callbacks == []
    assert not WebhookEvent.objects.exists() and not WebhookDelivery.objects.exists()
    assert default_task_backend.results == [] and receiver.requests == []


def test_only_subscribed_events_are_recorded(application, curator, receiver, django_capture_on_commit_callbacks):
    endpoint_for(application, receiver.url, events=["flag.rejected"])
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    assert not WebhookEvent.objects.exists()


def test_an_endpoint_failing_for_24_hours_is_disabled(application, curator, django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[503])
    try:
        endpoint = endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=timezone.now() - timedelta(hours=25))
        delivery = WebhookDelivery.objects.get()
        assert webhooks.attempt(delivery.pk) == "failed"
        endpoint.refresh_from_db()
        assert endpoint.is_active is False and "24 hours" in endpoint.disabled_reason
    finally:
        receiver.close()


def test_redirects_are_not_followed(application, curator, django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[302])
    try:
        endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        delivery = WebhookDelivery.objects.get()
        assert webhooks.attempt(delivery.pk) == "retrying"
        assert [path for path, _, _ in receiver.requests] == ["/hooks"]  # never /elsewhere
        delivery.refresh_from_db()
        assert delivery.last_status_code == 302
    finally:
        receiver.close()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/hook", "http://localhost:8080/hook", "http://10.1.2.3/hook", "http://192.168.0.10/",
    "http://172.16.5.4/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/hook", "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/",
])
def test_production_refuses_non_public_addresses(settings, application, url):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(webhooks.AddressRefused):
        webhooks.resolve(url)
    with pytest.raises(InvalidInput) as refused:
        endpoint_for(application, url)
    assert "url" in refused.value.fields
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize("url", ["ftp://example.com/x", "file:///etc/passwd", "http://user:pw@example.com/",
                                 "javascript:alert(1)", "http:///nohost"])
def test_only_http_urls_with_a_host(application, url):
    with pytest.raises(InvalidInput):
        endpoint_for(application, url)


def test_an_address_that_became_private_is_refused_at_delivery(settings, application, curator, receiver,
                                                                django_capture_on_commit_callbacks):
    endpoint_for(application, receiver.url)
    settings.WEBHOOK_ALLOW_PRIVATE = False  # e.g. DNS now points the name at a private address
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    delivery = WebhookDelivery.objects.get()
    assert webhooks.attempt(delivery.pk) == "retrying"
    delivery.refresh_from_db()
    assert "non-public" in delivery.last_error and receiver.requests == []


def test_public_addresses_pass_the_check(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    assert webhooks._public("93.184.216.34") and webhooks._public("2606:4700::1111")


@pytest.mark.django_db(transaction=True)
def test_the_database_worker_delivers(application, curator, receiver):
    """The production path: django-tasks-db's backend stores the task, `db_worker` runs it."""
    endpoint = endpoint_for(application, receiver.url)
    approve(application, curator)  # on_commit enqueued on the test's default (dummy) backend
    delivery = WebhookDelivery.objects.get()
    webhooks.deliver.using(backend="database").enqueue(delivery.pk)
    call_command("db_worker", "--batch", "--no-startup-delay", "--backend", "database", verbosity=0)
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    [(_, headers, body)] = receiver.requests
    assert webhooks.verify(endpoint.secret, body, headers["Webhook-Signature"])


# --- Screens -------------------------------------------------------------------------


@pytest.fixture
def app_admin(application):
    from consoles.models import Role
    from consoles.tests.factories import MembershipFactory

    return MembershipFactory(application=application, role=Role.ADMIN).user


def test_an_admin_adds_an_endpoint_and_sees_the_secret_once(client, application, app_admin, receiver):
    client.force_login(app_admin)
    response = client.post(f"/a/{application.slug}/webhooks/", {"url": receiver.url,
                                                                 "events": ["flag.approved", "bank.rebuilt"]})
    assert response.status_code == 201
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.events == ["flag.approved", "bank.rebuilt"] and endpoint.created_by == app_admin
    assert endpoint.secret in response.content.decode()
    assert endpoint.secret not in client.get(f"/a/{application.slug}/webhooks/").content.decode()
    assert endpoint.secret not in client.get(f"/a/{application.slug}/webhooks/{endpoint.pk}/").content.decode()


def test_a_refused_url_is_an_error_next_to_the_field(client, settings, application, app_admin):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    client.force_login(app_admin)
    response = client.post(f"/a/{application.slug}/webhooks/", {"url": "http://169.254.169.254/",
                                                                 "events": ["flag.approved"]})
    assert response.status_code == 400
    assert "non-public address" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_a_curator_cannot_manage_endpoints(client, application, curator):
    client.force_login(curator)
    assert client.get(f"/a/{application.slug}/webhooks/").status_code == 403


def test_the_log_shows_attempts_and_redeliver_queues_again(client, application, app_admin, curator,
                                                           django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[500])
    try:
        endpoint = endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        delivery = WebhookDelivery.objects.get()
        webhooks.attempt(delivery.pk)
        client.force_login(app_admin)
        page = client.get(f"/a/{application.slug}/webhooks/{endpoint.pk}/").content.decode()
        assert "flag.approved" in page and "500" in page and "Retrying" in page
        default_task_backend.clear()
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/a/{application.slug}/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/redeliver/")
        assert response.status_code == 302
        assert [r.args for r in default_task_backend.results] == [[delivery.pk]]
    finally:
        receiver.close()


def test_a_disabled_endpoint_is_announced_to_its_admins(client, application, app_admin, receiver):
    endpoint = endpoint_for(application, receiver.url)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=False, disabled_at=timezone.now(), disabled_reason="No delivery succeeded for 24 hours (last: HTTP 503)")
    client.force_login(app_admin)
    page = client.get(f"/a/{application.slug}/webhooks/").content.decode()
    assert 'data-testid="endpoint-disabled"' in page and "No delivery succeeded for 24 hours" in page
