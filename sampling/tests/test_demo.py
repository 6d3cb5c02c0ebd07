from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from adjudication.models import CaseLabel
from sampling.models import SamplingPlan

pytestmark = pytest.mark.django_db


def test_demo_has_an_enqueued_partly_labelled_plan_and_a_second_run_changes_nothing(demo_loaded):
    plan = SamplingPlan.objects.get(application__slug="globex-verifier")
    assert plan.selected_count == 8 and plan.capped_count == 2
    assert plan.enqueued_at is not None and plan.enqueued_at < timezone.now() - timedelta(days=6)
    labelled = CaseLabel.objects.filter(case__in=plan.selections.values("case")).values("case").distinct().count()
    assert 0 < labelled < plan.selected_count
    newer = SamplingPlan.objects.get(application__slug="acme-chat")
    assert newer.enqueued_at is None
    pks = sorted(SamplingPlan.objects.values_list("pk", flat=True))
    call_command("load_demo", stdout=StringIO())
    assert sorted(SamplingPlan.objects.values_list("pk", flat=True)) == pks
