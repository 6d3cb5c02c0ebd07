import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from consoles.models import Application
from feedback.models import Flag, FlagEvent, FlagReview

pytestmark = pytest.mark.django_db


def test_demo_fills_both_queues_with_flags_and_captures_and_is_idempotent(client):
    call_command("load_demo", stdout=io.StringIO())
    counts = (Flag.objects.count(), FlagEvent.objects.count(), FlagReview.objects.count())
    acme = Application.objects.get(slug="acme-chat")
    globex = Application.objects.get(slug="globex-verifier")
    assert Flag.objects.filter(application=acme, author_kind="agent").count() >= 3
    assert Flag.objects.filter(application=globex, author_kind="end_user").count() >= 5
    assert Flag.objects.filter(status="approved").exists() and Flag.objects.filter(status="labelled").exists()
    call_command("load_demo", stdout=io.StringIO())
    assert (Flag.objects.count(), FlagEvent.objects.count(), FlagReview.objects.count()) == counts

    # Through the log-in form, as a person does (the throttling backend needs the request).
    client.post(reverse("login"), {"username": "curator", "password": "demo-pass-2026"})
    page = client.get(reverse("application_home", args=["acme-chat"])).content.decode()
    assert 'data-testid="count-pending-flags"' in page and "Unlabelled captures" in page
