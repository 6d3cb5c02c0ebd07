"""What became of each plan's selections, as the overview reads it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from adjudication.services import label_submit
from sampling.selectors import plan_outcomes
from sampling.services import plan_create, plan_enqueue

from .factories import give_gold_label, make_case

pytestmark = pytest.mark.django_db


def test_outcomes_count_queued_labelled_and_changed(application, curator):
    changed = make_case(application, "changed", verdict="verified", mined_by=("high_uncertainty",), evidence="conflict")
    confirmed = make_case(application, "confirmed", verdict="verified", mined_by=("sensor_disagreement",),
                          evidence="conflict")
    gold_overrides = make_case(application, "gold", verdict="refuted", mined_by=("high_uncertainty",),
                               evidence="none")
    make_case(application, "untouched", verdict="verified", mined_by=("sensor_disagreement", "high_uncertainty"),
              evidence="none")
    plan, _ = plan_create(application=application, budget=4, actor=curator)
    plan_enqueue(plan=plan, actor=curator)

    def label(case, value):
        label_submit(application=application, case=case, reviewer=curator, label=value, rationale="checked")

    label(changed, "unreliable")  # denies what the pipeline verified: changed
    label(confirmed, "reliable")  # agrees: labelled, unchanged
    label(gold_overrides, "unreliable")  # agrees with "refuted" ...
    give_gold_label(gold_overrides, "reliable")  # ... but the gold label says otherwise: changed
    today = timezone.now().date()
    [outcome] = plan_outcomes(application=application, first=today - timedelta(days=1), last=today)
    assert (outcome.plan_id, outcome.selected, outcome.queued) == (plan.pk, 4, 4)
    assert (outcome.labelled, outcome.changed) == (3, 2)
    assert plan_outcomes(application=application, first=today + timedelta(days=1), last=today + timedelta(days=2)) == []
