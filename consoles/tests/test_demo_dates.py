"""load_demo backdates its history through the services' `at=` (no process-wide
clock patch): decisions, labels, gold promotions and plans are spread over the
past weeks, each row's time the one its events carry, and `timezone.now` is the
real clock throughout."""

import io
from datetime import timedelta
from unittest import mock

import pytest
from django.core.management import call_command
from django.utils import timezone

from adjudication.models import AdjudicationEvent, CaseLabel, GoldLabelRevision, QueueEntry
from feedback.models import FlagEvent, FlagReview
from sampling.models import PlanEvent, SamplingPlan

pytestmark = pytest.mark.django_db


def test_the_demo_history_is_dated_in_the_past_by_the_services_not_by_a_patched_clock():
    import adjudication.demo
    import feedback.demo
    import sampling.demo

    real_now = timezone.now
    started = real_now()
    clock_seen: list[bool] = []

    def watching(service):
        def call(**kwargs):
            clock_seen.append(timezone.now is clock)  # the clock as this test set it, not swapped
            return service(**kwargs)
        return call

    with mock.patch.object(timezone, "now", wraps=real_now) as clock, \
            mock.patch.object(feedback.demo, "flag_review", watching(feedback.demo.flag_review)), \
            mock.patch.object(adjudication.demo, "label_submit", watching(adjudication.demo.label_submit)), \
            mock.patch.object(adjudication.demo, "gold_promote", watching(adjudication.demo.gold_promote)), \
            mock.patch.object(sampling.demo, "plan_create", watching(sampling.demo.plan_create)):
        call_command("load_demo", stdout=io.StringIO())
    # Nothing swapped the clock for a fixed moment while the demo loaded.
    assert len(clock_seen) > 20 and all(clock_seen)
    assert timezone.now is real_now
    week_ago, month_ago = started - timedelta(days=7), started - timedelta(days=35)

    reviews = FlagReview.objects.all()
    assert reviews.count() > 20
    assert reviews.filter(created_at__lt=week_ago).count() > reviews.count() / 2
    assert not reviews.filter(created_at__lt=month_ago).exists()
    # Each decision's event carries the decision's moment (the overview counts by it).
    for review in reviews.filter(created_at__lt=week_ago)[:20]:
        assert FlagEvent.objects.filter(flag_id=review.flag_id, to_status=review.to_status,
                                        created_at=review.created_at).exists()
        assert review.wait_seconds == int((review.created_at - review.flag.created_at).total_seconds())

    labels = CaseLabel.objects.all()
    assert labels.count() > 5 and labels.filter(created_at__lt=started - timedelta(days=2)).count() > labels.count() / 2
    for label in labels[:10]:
        assert AdjudicationEvent.objects.filter(case=label.case, kind="labelled", created_at=label.created_at).exists()
    gold = GoldLabelRevision.objects.all()
    assert gold.exists() and all(g.created_at < started for g in gold)
    assert QueueEntry.objects.filter(created_at__lt=started - timedelta(days=1)).exists()

    first_plan = SamplingPlan.objects.order_by("created_at").first()
    assert first_plan is not None and abs(first_plan.created_at - (started - timedelta(days=7))) < timedelta(minutes=5)
    assert abs(first_plan.enqueued_at - (started - timedelta(days=6, hours=20))) < timedelta(minutes=5)
    assert PlanEvent.objects.filter(plan=first_plan, kind="created", created_at=first_plan.created_at).exists()
    assert PlanEvent.objects.filter(plan=first_plan, kind="enqueued", created_at=first_plan.enqueued_at).exists()
