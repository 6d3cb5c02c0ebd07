"""Webhooks, the cases test_webhooks.py leaves open: SSRF refusals of names after DNS
resolution in production mode (not only literal addresses), the connection pinned to
the address checked, redirects not followed in production mode, the 24-hour disable
told to the application's admins on the screen end to end, and *Redeliver* end to end."""

import json
import socket
from datetime import timedelta

import pytest
from django.tasks import default_task_backend
from django.urls import reverse
from django.utils import timezone

from consoles import webhooks
from consoles.errors import InvalidInput
from consoles.models import DeliveryStatus, Role, WebhookDelivery, WebhookEndpoint
from consoles.tests.factories import ApplicationFactory, MembershipFactory
from consoles.tests.test_webhooks import Receiver, approve, endpoint_for

pytestmark = pytest.mark.django_db

NAME = "hooks.invalid"  # a reserved name: it never resolves for real, only through FakeDNS


class FakeDNS:
    """`socket.getaddrinfo` answering NAME from a table (and counting), anything else for real."""

    def __init__(self, monkeypatch, *addresses: str) -> None:
        self.addresses = list(addresses)
        self.lookups = 0
        real = socket.getaddrinfo

        def getaddrinfo(host, port, *args, **kwargs):
            if host != NAME:
                return real(host, port, *args, **kwargs)
            self.lookups += 1
            return [
                (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port, 0, 0) if ":" in a else (a, port))
                for a in self.addresses
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def production(settings):
    """Production mode: DEBUG off and no explicit WEBHOOK_ALLOW_PRIVATE (it follows DEBUG)."""
    del settings.WEBHOOK_ALLOW_PRIVATE
    settings.DEBUG = False
    default_task_backend.clear()


@pytest.fixture
def loopback_counts_as_public(monkeypatch):
    """Stands the local test receiver in for a public host; every other address is judged as usual."""
    public = webhooks._public
    monkeypatch.setattr(webhooks, "_public", lambda address: address == "127.0.0.1" or public(address))


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "172.20.1.1", "192.168.1.20", "169.254.169.254",
                                     "100.64.0.1", "::1", "fe80::1", "fd12:3456::1", "::ffff:10.0.0.7"])
def test_production_refuses_a_name_that_resolves_to_a_non_public_address(production, monkeypatch, application,
                                                                         address):
    dns = FakeDNS(monkeypatch, address)
    with pytest.raises(InvalidInput) as refused:
        endpoint_for(application, f"https://{NAME}/hooks")
    assert dns.lookups == 1  # judged on what the name resolves to, not on its spelling
    assert "non-public address" in refused.value.fields["url"] and address in refused.value.fields["url"]
    assert not WebhookEndpoint.objects.exists()


def test_production_refuses_a_name_with_one_private_address_among_public_ones(production, monkeypatch,
                                                                                application):
    FakeDNS(monkeypatch, "93.184.216.34", "10.0.0.7")
    with pytest.raises(InvalidInput) as refused:
        endpoint_for(application, f"https://{NAME}/hooks")
    assert "10.0.0.7" in refused.value.fields["url"]


def test_production_accepts_a_name_that_resolves_publicly(production, monkeypatch, application):
    FakeDNS(monkeypatch, "93.184.216.34", "2606:4700::1111")
    assert endpoint_for(application, f"https://{NAME}/hooks").url == f"https://{NAME}/hooks"


def test_loopback_is_allowed_only_in_debug(settings, application):
    del settings.WEBHOOK_ALLOW_PRIVATE
    settings.DEBUG = True  # `make run`
    assert webhooks.resolve("http://127.0.0.1:9/hook")[3] == "127.0.0.1"
    settings.DEBUG = False
    with pytest.raises(webhooks.AddressRefused):
        webhooks.resolve("http://127.0.0.1:9/hook")


def test_a_name_that_moved_to_a_private_address_is_refused_at_delivery(production, monkeypatch, application,
                                                                        curator, django_capture_on_commit_callbacks):
    dns = FakeDNS(monkeypatch, "93.184.216.34")
    endpoint_for(application, f"http://{NAME}/hooks")
    dns.addresses = ["169.254.169.254"]  # the cloud metadata service, after a DNS change
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    delivery = WebhookDelivery.objects.get()
    assert webhooks.attempt(delivery.pk) == "retrying"
    delivery.refresh_from_db()
    assert "169.254.169.254" in delivery.last_error and delivery.last_status_code is None


def test_the_connection_goes_to_the_address_checked(production, monkeypatch, loopback_counts_as_public,
                                                    application, curator, receiver,
                                                    django_capture_on_commit_callbacks):
    """One lookup per attempt, and the request reaches the checked address: a second lookup (DNS
    rebinding) cannot swap it. The name resolves only through FakeDNS, so a request that reached
    the receiver was sent to the address the check saw."""
    dns = FakeDNS(monkeypatch, "127.0.0.1")
    endpoint = endpoint_for(application, f"http://{NAME}:{receiver.port}/hooks")
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    dns.lookups = 0
    assert webhooks.attempt(WebhookDelivery.objects.get().pk) == "delivered"
    assert dns.lookups == 1
    [(path, headers, body)] = receiver.requests
    assert path == "/hooks" and headers["Host"] == f"{NAME}:{receiver.port}"
    assert webhooks.verify(endpoint.secret, body, headers["Webhook-Signature"])


def test_redirects_are_not_followed_in_production(production, monkeypatch, loopback_counts_as_public,
                                                  application, curator, django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[307])  # Location: the receiver's /elsewhere
    try:
        dns = FakeDNS(monkeypatch, "127.0.0.1")
        endpoint_for(application, f"http://{NAME}:{receiver.port}/hooks")
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        delivery = WebhookDelivery.objects.get()
        dns.lookups = 0
        assert webhooks.attempt(delivery.pk) == "retrying"  # a redirect is an answer, not a success
        assert [path for path, _, _ in receiver.requests] == ["/hooks"] and dns.lookups == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.last_status_code, delivery.last_error) == ("retrying", 307, "HTTP 307")
    finally:
        receiver.close()


# --- The 24-hour disable, told on the screen; Redeliver --------------------------------------


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def app_admin(application):
    return MembershipFactory(application=application, role=Role.ADMIN).user


@pytest.fixture
def allow_loopback(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    default_task_backend.clear()


def test_failing_for_24_hours_disables_the_endpoint_and_tells_its_admins(
        allow_loopback, client, application, app_admin, curator, django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[503])
    try:
        endpoint = endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
            approve(application, curator)
        first, second = WebhookDelivery.objects.order_by("pk")
        started = timezone.now()
        assert webhooks.attempt(first.pk, now=started) == "retrying"
        endpoint.refresh_from_db()
        assert endpoint.is_active and endpoint.failing_since == started
        # Still failing 23 hours later: kept, retried.
        assert webhooks.attempt(first.pk, now=started + timedelta(hours=23)) == "retrying"
        endpoint.refresh_from_db()
        assert endpoint.is_active
        # 24 hours of failures: disabled, and the delivery gives up.
        assert webhooks.attempt(second.pk, now=started + timedelta(hours=24)) == "failed"
        endpoint.refresh_from_db()
        assert not endpoint.is_active and endpoint.disabled_reason == "No delivery succeeded for 24 hours (last: HTTP 503)"
        sent = len(receiver.requests)
        assert webhooks.attempt(first.pk) == "endpoint disabled" and len(receiver.requests) == sent  # nothing more sent

        client.force_login(app_admin)
        for page in (f"/a/{application.slug}/webhooks/", f"/a/{application.slug}/webhooks/{endpoint.pk}/"):
            html = client.get(page).content.decode()
            assert 'data-testid="endpoint-disabled"' in html
            assert "No delivery succeeded for 24 hours (last: HTTP 503)" in html
        # Told on every screen too, in the admin's menu (the flag queue here).
        html = client.get(reverse("feedback:queue", args=[application.slug]), follow=True).content.decode()
        assert '<span class="badge rejected" data-testid="webhooks-disabled">1 disabled</span>' in html
        client.force_login(curator)  # not an admin of the application: not its screen
        assert client.get(f"/a/{application.slug}/webhooks/").status_code == 403
        assert "webhooks-disabled" not in client.get(reverse("feedback:queue", args=[application.slug]), follow=True).content.decode()
        webhooks.endpoint_enable(endpoint=endpoint, active=True)  # enabled again: the notice goes
        client.force_login(app_admin)
        assert "webhooks-disabled" not in client.get(reverse("feedback:queue", args=[application.slug]), follow=True).content.decode()
    finally:
        receiver.close()


def test_redeliver_sends_a_failed_delivery_again(allow_loopback, client, application, app_admin, curator,
                                                 django_capture_on_commit_callbacks):
    receiver = Receiver(codes=[500, 200])
    try:
        endpoint = endpoint_for(application, receiver.url)
        with django_capture_on_commit_callbacks(execute=True):
            approve(application, curator)
        delivery = WebhookDelivery.objects.get()
        WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - timedelta(hours=25))
        assert webhooks.attempt(delivery.pk) == "failed"  # past the retry window: given up
        assert webhooks.attempt(delivery.pk) == "skipped"  # and never tried again on its own

        client.force_login(app_admin)
        default_task_backend.clear()
        url = f"/a/{application.slug}/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/redeliver/"
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url)
        assert response.status_code == 302
        [task] = default_task_backend.results
        delivery.refresh_from_db()
        assert task.args == [delivery.pk] and delivery.status == DeliveryStatus.PENDING
        assert webhooks.attempt(*task.args) == "delivered"  # what the worker runs
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("delivered", 2, 200)
        first, again = (json.loads(body) for _, _, body in receiver.requests)
        assert first == again  # the same event, the same id: receivers deduplicate on it
        assert webhooks.verify(endpoint.secret, receiver.requests[1][2], receiver.requests[1][1]["Webhook-Signature"])
        page = client.get(f"/a/{application.slug}/webhooks/{endpoint.pk}/").content.decode()
        assert "Delivered" in page
    finally:
        receiver.close()


def test_redeliver_is_refused_on_a_disabled_endpoint(allow_loopback, client, application, app_admin, curator,
                                                     receiver, django_capture_on_commit_callbacks):
    endpoint = endpoint_for(application, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    delivery = WebhookDelivery.objects.get()
    webhooks.endpoint_enable(endpoint=endpoint, active=False)
    client.force_login(app_admin)
    default_task_backend.clear()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/a/{application.slug}/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/redeliver/",
                               follow=True)
    assert "Enable the endpoint first" in response.content.decode()
    assert default_task_backend.results == [] and receiver.requests == []
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING and delivery.attempts == 0


def test_redeliver_only_of_this_applications_endpoint_and_only_by_its_admins(
        allow_loopback, client, application, app_admin, curator, receiver, django_capture_on_commit_callbacks):
    endpoint = endpoint_for(application, receiver.url)
    other = endpoint_for(ApplicationFactory(slug="globex", name="Globex"), receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        approve(application, curator)
    delivery = WebhookDelivery.objects.get()
    default_task_backend.clear()
    client.force_login(curator)
    url = f"/a/{application.slug}/webhooks/{endpoint.pk}/deliveries/{delivery.pk}/redeliver/"
    assert client.post(url).status_code == 403
    client.force_login(app_admin)
    assert client.get(url).status_code == 405
    assert client.post(f"/a/{application.slug}/webhooks/{other.pk}/deliveries/{delivery.pk}/redeliver/").status_code == 404
    assert default_task_backend.results == []
