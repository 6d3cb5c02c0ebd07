from io import StringIO

import pytest
from django.core.management import call_command

from sampling.models import SamplingPlan

pytestmark = pytest.mark.django_db


def test_demo_has_one_plan_in_the_verifier_and_a_second_run_changes_nothing():
    call_command("load_demo", stdout=StringIO())
    plan = SamplingPlan.objects.get()
    assert plan.application.slug == "globex-verifier"
    assert plan.selected_count == 8 and plan.capped_count == 2
    call_command("load_demo", stdout=StringIO())
    assert list(SamplingPlan.objects.values_list("pk", flat=True)) == [plan.pk]
