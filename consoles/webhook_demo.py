"""Demo webhooks for `make run` (idempotent): one endpoint per demo application, left
disabled (it points at example.com; enable it after pointing it at your receiver),
with one recorded delivery so the delivery log has something to show."""

from datetime import timedelta

from django.utils import timezone

from .models import Application, DeliveryStatus, WebhookDelivery, WebhookEndpoint, WebhookEvent

DEMO_URL = "https://hooks.example.com/curator-console"


def load_demo_webhooks(*, application: Application, users: dict) -> None:
    now = timezone.now()
    endpoint, created = WebhookEndpoint.objects.get_or_create(
        application=application, url=DEMO_URL,
        defaults={"events": ["flag.approved", "flag.rejected", "proposal.accepted"], "is_active": False,
                  "secret": "whsec_demo_" + application.slug, "disabled_at": now,
                  "disabled_reason": "Demo endpoint: point it at your receiver, then enable it"},
    )
    if not created:
        return
    event = WebhookEvent.objects.create(
        application=application, event_id=f"evt_demo_{application.pk:08d}", type="flag.approved",
        occurred_at=now - timedelta(minutes=5), data={"flag_id": "fb_0000000000000000", "status": "approved"},
    )
    WebhookDelivery.objects.create(
        application=application, endpoint=endpoint, event=event, status=DeliveryStatus.FAILED, attempts=1,
        last_status_code=404, last_error="HTTP 404", last_attempt_at=now - timedelta(minutes=5),
        created_at=now - timedelta(minutes=5),
    )
