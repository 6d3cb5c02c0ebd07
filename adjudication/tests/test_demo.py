import pytest
from django.core.management import call_command

from adjudication.models import Case, CaseLabel, GoldLabelRevision, QueueEntry
from adjudication.selectors import application_agreement
from consoles.models import Application
from feedback.models import CaseFeedback


@pytest.mark.django_db
def test_demo_is_idempotent_and_has_enough_for_kappa():
    call_command("load_demo", stdout=None)
    counts = [Case.objects.count(), CaseLabel.objects.count(), GoldLabelRevision.objects.count(), QueueEntry.objects.count(), CaseFeedback.objects.count()]
    call_command("load_demo", stdout=None)
    assert [Case.objects.count(), CaseLabel.objects.count(), GoldLabelRevision.objects.count(), QueueEntry.objects.count(), CaseFeedback.objects.count()] == counts
    acme = Application.objects.get(slug="acme-chat")
    globex = Application.objects.get(slug="globex-verifier")
    assert application_agreement(application=acme).enough
    assert Case.objects.filter(application=globex).exists() and GoldLabelRevision.objects.filter(application=globex).exists()
    assert QueueEntry.objects.filter(application=acme, state="open").exists()
