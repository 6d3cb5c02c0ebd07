import pytest
from django.core.management import call_command

from adjudication.models import Case, CaseLabel, GoldLabelRevision, QueueEntry
from adjudication.selectors import application_agreement
from consoles.models import Application
from feedback.models import CaseFeedback


@pytest.mark.django_db
def test_demo_is_idempotent_and_has_enough_for_kappa(demo_loaded):
    counts = [Case.objects.count(), CaseLabel.objects.count(), GoldLabelRevision.objects.count(), QueueEntry.objects.count(), CaseFeedback.objects.count()]
    call_command("load_demo", stdout=None)
    assert [Case.objects.count(), CaseLabel.objects.count(), GoldLabelRevision.objects.count(), QueueEntry.objects.count(), CaseFeedback.objects.count()] == counts
    acme = Application.objects.get(slug="acme-chat")
    globex = Application.objects.get(slug="globex-verifier")
    assert application_agreement(application=acme).enough
    assert Case.objects.filter(application=globex).exists() and GoldLabelRevision.objects.filter(application=globex).exists()
    assert QueueEntry.objects.filter(application=acme, state="open").exists()
    # the queue has been waiting for different lengths of time, each entry from before its first label
    entries = QueueEntry.objects.filter(application=acme)
    assert len({e.created_at.replace(second=0, microsecond=0) for e in entries}) > entries.count() // 2
    queued_labels = CaseLabel.objects.filter(queue_entry__isnull=False).select_related("queue_entry")
    assert queued_labels.exists()
    for label in queued_labels:
        assert label.queue_entry.created_at < label.created_at


@pytest.mark.django_db
def test_the_tours_newer_plan_has_cases_left_to_enqueue(demo_loaded):
    from sampling.models import SamplingPlan
    from sampling.services import plan_enqueue

    waiting = SamplingPlan.objects.get(application__slug="acme-chat", enqueued_at__isnull=True)
    result = plan_enqueue(plan=waiting, actor=None)
    assert result.queued >= 1 and result.already_queued >= 1
    assert not QueueEntry.objects.filter(selection_reason__startswith="demo plan").exists()  # no plan that isn't one
