"""Signed webhooks on decisions: endpoints, the outbox, delivery through `django.tasks`.

A decision's service calls `event_record` inside its own transaction: the event
(the outbox row) and one delivery row per subscribed endpoint are written with
the decision, and `transaction.on_commit` enqueues one `deliver` task per
delivery, so a rolled-back decision sends nothing and nothing network-bound
runs in the request. The worker (`manage.py db_worker`, django-tasks-db's
database backend: several app servers on one PostgreSQL share its queue)
posts the JSON body signed with the endpoint's secret:

    Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>

A non-2xx answer, a timeout (10 s) or a refused address is retried with
exponential backoff for up to 24 hours; an endpoint with no success for 24
hours is disabled and its admins see why on the webhooks screen.

Addresses (SSRF): only http(s), and unless `WEBHOOK_ALLOW_PRIVATE` (DEBUG:
`make run`, tests) only public addresses, checked after DNS resolution and
connected to exactly the address checked; redirects are never followed.
"""

import hashlib
import hmac
import http.client
import ipaddress
import json
import secrets
import socket
import ssl
import time
from collections.abc import Iterable
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from .errors import Conflict, InvalidInput, NotFound
from .models import (
    WEBHOOK_EVENTS,
    Application,
    DeliveryStatus,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)

TIMEOUT_SECONDS = 10
RETRY_WINDOW = timedelta(hours=24)
FIRST_RETRY = timedelta(seconds=30)
MAX_RETRY_GAP = timedelta(hours=4)
USER_AGENT = "curator-console-webhooks/1"


class AddressRefused(Exception):
    """The endpoint's URL may not be called (scheme, or a non-public address)."""


# --- Signing ---------------------------------------------------------------------------


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The Webhook-Signature header's value for `body` sent at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, body: bytes, header: str, *, tolerance: int = 300, now: float | None = None) -> bool:
    """What a receiver does (documented in docs/webhooks.md; used by the tests)."""
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((now or time.time()) - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


# --- Addresses -------------------------------------------------------------------------


def _allow_private() -> bool:
    return bool(getattr(settings, "WEBHOOK_ALLOW_PRIVATE", settings.DEBUG))


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def resolve(url: str, *, allow_private: bool | None = None) -> tuple[str, str, int, str]:
    """(scheme, host, port, the address to connect to) for `url`, or AddressRefused.

    Every address the name resolves to must be allowed (a name with one
    public and one private address is refused), and the caller connects to
    the address checked here, so a second lookup cannot swap it (DNS rebinding).
    """
    allow_private = _allow_private() if allow_private is None else allow_private
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AddressRefused("Only http:// and https:// URLs with a host.")
    if parts.username or parts.password:
        raise AddressRefused("No credentials in the URL: the signature authenticates the console.")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"{parts.hostname} does not resolve.") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_private:
        refused = [a for a in addresses if not _public(a)]
        if refused:
            raise AddressRefused(
                f"{parts.hostname} resolves to a non-public address ({refused[0]}): loopback, private and "
                "link-local addresses are refused in production."
            )
    return parts.scheme, parts.hostname, port, addresses[0]


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    """POST to `url` at the checked address; the status code (redirects are answers, not followed)."""
    scheme, host, port, address = resolve(url)
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if scheme == "https":
        connection: http.client.HTTPConnection = _PinnedHTTPSConnection(host, port, address, timeout=TIMEOUT_SECONDS)
    else:
        connection = http.client.HTTPConnection(address, port, timeout=TIMEOUT_SECONDS)
    try:
        connection.request("POST", target, body=body, headers={"Host": parts.netloc.rsplit("@", 1)[-1], **headers})
        response = connection.getresponse()
        response.read(65536)
        return response.status
    finally:
        connection.close()


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a fixed address, with the certificate checked against the host name."""

    def __init__(self, host: str, port: int, address: str, **kwargs) -> None:
        super().__init__(host, port, context=ssl.create_default_context(), **kwargs)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


# --- Endpoints -------------------------------------------------------------------------


def _clean_events(events: Iterable[str]) -> list[str]:
    events = list(dict.fromkeys(events or []))
    unknown = [e for e in events if e not in WEBHOOK_EVENTS]
    if not events or unknown:
        raise InvalidInput(
            f"Choose events from: {', '.join(WEBHOOK_EVENTS)}.",
            fields={"events": f"unknown: {', '.join(unknown)}" if unknown else "choose at least one"},
        )
    return events


def endpoint_create(
    *, application: Application, url: str, events: Iterable[str], actor: AbstractBaseUser | None
) -> WebhookEndpoint:
    """A new endpoint with a fresh signing secret (returned on the row: show it once)."""
    url = (url or "").strip()
    events = _clean_events(events)
    try:
        resolve(url)
    except AddressRefused as exc:
        raise InvalidInput(str(exc), fields={"url": str(exc)}) from exc
    endpoint = WebhookEndpoint(application=application, url=url, events=events,
                               secret="whsec_" + secrets.token_hex(24), created_by=actor)
    try:
        endpoint.full_clean()
    except Exception as exc:  # ValidationError: the URL field's own checks
        messages = getattr(exc, "message_dict", {"url": [str(exc)]})
        raise InvalidInput("; ".join(sum(messages.values(), [])),
                           fields={k: "; ".join(v) for k, v in messages.items()}) from exc
    endpoint.save()
    return endpoint


def endpoint_enable(*, endpoint: WebhookEndpoint, active: bool) -> WebhookEndpoint:
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=active, failing_since=None, **({"disabled_at": None, "disabled_reason": ""} if active else {}),
    )
    endpoint.refresh_from_db()
    return endpoint


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


# --- The outbox --------------------------------------------------------------------------


def event_record(*, application: Application | int, type: str, data: dict) -> WebhookEvent | None:
    """Record a decision's event for the application's subscribed endpoints (call it
    inside the decision's transaction); their deliveries are enqueued after commit.

    Nothing is written when no active endpoint subscribes to `type`.
    """
    if type not in WEBHOOK_EVENTS:
        raise ValueError(f"unknown webhook event {type!r}")
    application_id = application if isinstance(application, int) else application.pk
    # Inside the decision's write transaction: one lookup on the endpoint table alone
    # (no ordering, so no join to the application for its name).
    endpoints = [e for e in WebhookEndpoint.objects.filter(application_id=application_id, is_active=True)
                 .order_by().only("pk", "events") if type in e.events]
    if not endpoints:
        return None
    now = timezone.now()
    event = WebhookEvent.objects.create(application_id=application_id, event_id="evt_" + secrets.token_hex(12),
                                        type=type, occurred_at=now, data=data)
    deliveries = WebhookDelivery.objects.bulk_create([
        WebhookDelivery(application_id=application_id, endpoint=endpoint, event=event, created_at=now,
                        next_attempt_at=now)
        for endpoint in endpoints
    ])
    ids = [d.pk for d in deliveries]
    transaction.on_commit(lambda: [_enqueue(pk) for pk in ids])
    return event


def _enqueue(delivery_pk: int, *, at: datetime | None = None) -> None:
    if at is not None and deliver.get_backend().supports_defer:
        deliver.using(run_after=at).enqueue(delivery_pk)
    elif at is None:
        deliver.enqueue(delivery_pk)
    # A backend that cannot defer (the immediate one, in tests) leaves the retry to
    # `redeliver` or the next `deliver_due`: it must not retry in a tight loop.


def body_of(event: WebhookEvent, application_slug: str) -> bytes:
    return json.dumps({
        "id": event.event_id, "type": event.type, "occurred_at": event.occurred_at.isoformat(),
        "application": application_slug, "data": event.data,
    }, separators=(",", ":"), sort_keys=True).encode()


def _retry_gap(attempts: int) -> timedelta:
    return min(FIRST_RETRY * (2 ** max(0, attempts - 1)), MAX_RETRY_GAP)


@task()
def deliver(delivery_pk: int) -> str:
    """Attempt one delivery (the worker runs this); record the attempt; schedule a retry."""
    return attempt(delivery_pk)


def attempt(delivery_pk: int, *, now: datetime | None = None) -> str:
    delivery = (WebhookDelivery.objects.select_related("endpoint", "event", "endpoint__application")
                .filter(pk=delivery_pk).first())
    if delivery is None or delivery.status in (DeliveryStatus.DELIVERED, DeliveryStatus.FAILED):
        return "skipped"
    endpoint = delivery.endpoint
    if not endpoint.is_active:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.FAILED,
                                                              last_error="endpoint disabled")
        return "endpoint disabled"
    body = body_of(delivery.event, endpoint.application.slug)
    headers = {
        "Content-Type": "application/json", "User-Agent": USER_AGENT,
        "Webhook-Id": delivery.event.event_id,
        "Webhook-Signature": sign(endpoint.secret, body, int(time.time())),
    }
    code, error = None, ""
    try:
        code = _post(endpoint.url, body, headers)
    except AddressRefused as exc:
        error = str(exc)
    except (OSError, http.client.HTTPException) as exc:  # timeouts, refused connections, TLS errors
        error = f"{type(exc).__name__}: {exc}"[:300]
    now = now or timezone.now()
    ok = code is not None and 200 <= code < 300
    attempts = delivery.attempts + 1
    if ok:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=DeliveryStatus.DELIVERED, attempts=attempts, last_status_code=code, last_error="",
            last_attempt_at=now, delivered_at=now, next_attempt_at=None)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None)
        return "delivered"
    if not error:
        error = f"HTTP {code}"
    failing_since = endpoint.failing_since or now
    if endpoint.failing_since is None:
        WebhookEndpoint.objects.filter(pk=endpoint.pk, failing_since__isnull=True).update(failing_since=now)
    if now - failing_since >= RETRY_WINDOW:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
            is_active=False, disabled_at=now,
            disabled_reason=f"No delivery succeeded for 24 hours (last: {error})"[:300])
    next_at = now + _retry_gap(attempts)
    gave_up = next_at - delivery.created_at > RETRY_WINDOW or now - failing_since >= RETRY_WINDOW
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=DeliveryStatus.FAILED if gave_up else DeliveryStatus.RETRYING, attempts=attempts,
        last_status_code=code, last_error=error[:300], last_attempt_at=now,
        next_attempt_at=None if gave_up else next_at)
    if not gave_up:
        _enqueue(delivery.pk, at=next_at)
    return "failed" if gave_up else "retrying"


def redeliver(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """The screen's *Redeliver*: attempt it again now (in the worker), whatever its state.

    Refused while the endpoint is disabled: the worker would only mark it failed again.
    """
    if not WebhookEndpoint.objects.filter(pk=delivery.endpoint_id, is_active=True).exists():
        raise Conflict("This endpoint is disabled: nothing was queued. Enable the endpoint first, then redeliver.",
                       code="endpoint_disabled")
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.PENDING,
                                                              next_attempt_at=timezone.now())
        transaction.on_commit(lambda: _enqueue(delivery.pk))
    delivery.refresh_from_db()
    return delivery


# --- Reads -------------------------------------------------------------------------------


def endpoint_list(*, application: Application):
    return WebhookEndpoint.objects.filter(application=application).order_by("pk")


def disabled_endpoint_count(*, application: Application) -> int:
    """Endpoints the console disabled (24 hours of failures) and nobody enabled again."""
    return WebhookEndpoint.objects.filter(application=application, is_active=False, disabled_at__isnull=False).count()


def endpoint_get(*, application: Application, pk: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(application=application, pk=pk).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def delivery_list(*, endpoint: WebhookEndpoint, limit: int = 100):
    return (WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")
            .order_by("-created_at", "-pk")[:limit])


def delivery_get(*, application: Application, pk: int) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.filter(application=application, pk=pk).first()
    if delivery is None:
        raise NotFound("No such delivery.")
    return delivery


# --- Event payloads of other apps' decisions (kept here so each service calls one line) --

FLAG_EVENTS = {"approved": "flag.approved", "rejected": "flag.rejected", "pending": "flag.reopened",
               "labelled": "capture.labelled"}


def flag_data(flag, reviewer: AbstractBaseUser) -> dict:
    return {"flag_id": flag.public_id, "status": flag.status, "region": flag.region, "axis": flag.axis,
            "verdict": flag.verdict, "capture_label": flag.capture_label, "version": flag.version,
            "reviewer": reviewer.get_username()}
