import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from consoles.models import Application
from feedback.drafts import contradictions
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.selectors import reviewed_items

pytestmark = pytest.mark.django_db


def test_demo_fills_both_queues_with_flags_and_captures_and_is_idempotent(demo_loaded, client):
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


def test_demo_verdicts_are_a_consistent_teams_with_one_dissent(demo_loaded):
    acme = Application.objects.get(slug="acme-chat")
    globex = Application.objects.get(slug="globex-verifier")
    for application in (acme, globex):  # both verdicts are in the demo, on different texts
        assert {f.verdict for f in Flag.objects.filter(application=application, status="approved")} == {
            "false_negative", "false_positive"}
    assert contradictions(reviewed_items(application=globex)) == {}
    dissent = contradictions(reviewed_items(application=acme))
    notes = set(Flag.objects.filter(pk__in=dissent).values_list("note", flat=True))
    assert notes <= {"rude reply to a complaint", "blunt but within the brand's voice guide"} and len(dissent) >= 2
