"""Plans stored and enqueued, against the real adjudication models."""

import hashlib
import json

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from adjudication.models import CaseLabel, QueueEntry
from adjudication.services import queue_enqueue
from adjudication.tests.factories import QueueEntryFactory
from consoles.errors import InvalidInput, NotFound
from consoles.tests.factories import ApplicationFactory, UserFactory
from sampling.models import EnqueueOutcome, PlanEvent, PlanSelection, SamplingPlan
from sampling.policy import POLICY_NAME, POLICY_VERSION
from sampling.selectors import plan_get
from sampling.services import plan_create, plan_draft, plan_enqueue

from .factories import give_gold_label, make_case

pytestmark = pytest.mark.django_db


def test_plan_create_stores_selections_reasons_patterns_and_an_event(application, curator, corpus):
    plan, created = plan_create(application=application, budget=5, actor=curator)
    assert created
    assert (plan.policy_name, plan.policy_version) == (POLICY_NAME, POLICY_VERSION)
    assert (plan.budget, plan.max_per_pattern, plan.created_by) == (5, 2, curator)
    rows = list(plan.selections.order_by("rank"))
    assert [s.case_ref for s in rows] == ["loud", "dup-1", "dup-2", "quiet-1", "quiet-2"]
    assert rows[0].case == corpus["loud"]
    assert rows[0].signals == [
        "gap:unresolved_conflict", "mined:high_uncertainty", "mined:sensor_disagreement",
    ]
    assert rows[0].reason.startswith("Needs a human (3 signals): its evidence conflicts")
    assert rows[-1].signals == [] and rows[-1].reason.startswith("No signal")
    # The cap kept dup-3 out: its pattern had 3 cases, 2 selected, 1 left out.
    assert (plan.candidate_count, plan.selected_count, plan.capped_count) == (6, 5, 1)
    capped = plan.patterns.get(capped_count__gt=0)
    assert (capped.case_count, capped.selected_count, capped.capped_count) == (3, 2, 1)
    assert capped.pattern_key == rows[1].pattern_key == rows[2].pattern_key
    event = PlanEvent.objects.get(plan=plan)
    assert event.kind == "created" and event.actor == curator


def test_the_stored_json_is_canonical_and_its_hash_is_the_plan_digest(application, curator, corpus):
    plan, _ = plan_create(application=application, budget=5, actor=curator)
    raw = plan.canonical_json.encode()
    assert hashlib.sha256(raw).hexdigest() == plan.plan_digest
    body = json.loads(raw)
    assert json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() == raw
    assert [s["case_id"] for s in body["selections"]] == ["loud", "dup-1", "dup-2", "quiet-1", "quiet-2"]


def test_the_same_cases_give_the_same_plan_once(application, curator, corpus):
    first, created_first = plan_create(application=application, budget=5, actor=curator)
    again, created_again = plan_create(application=application, budget=5, actor=None)
    assert created_first and not created_again
    assert again.pk == first.pk and SamplingPlan.objects.count() == 1
    assert PlanEvent.objects.count() == 1


def test_a_changed_corpus_or_other_parameters_give_a_new_plan(application, curator, corpus):
    first, _ = plan_create(application=application, budget=5, actor=curator)
    wider, created = plan_create(application=application, budget=5, max_per_pattern=3, actor=curator)
    assert created and wider.plan_digest != first.plan_digest
    make_case(application, "new-one", sanitized=True)
    changed, created = plan_create(application=application, budget=5, actor=curator)
    assert created and changed.inputs_digest != first.inputs_digest


def test_cases_with_a_gold_label_are_not_sampled_again(application, curator, corpus):
    give_gold_label(corpus["loud"], "reliable")
    plan, _ = plan_create(application=application, budget=10, actor=curator)
    refs = set(plan.selections.values_list("case_ref", flat=True))
    assert "loud" not in refs and plan.gold_excluded_count == 1 and plan.candidate_count == 5


def test_gaps_strategies_and_sanitisation_become_signals(application, curator):
    make_case(application, "no-evidence", evidence="none")
    make_case(application, "sanitised", sanitized=True)
    make_case(application, "mined", mined_by=("verdict_changed_across_findings",))
    draft = plan_draft(application=application, budget=3)
    signals = {s.case_id: s.signals for s in draft.plan.selections}
    assert signals == {
        "no-evidence": ("gap:no_evidence_at_all",),
        "sanitised": ("sanitization_altered_outcome",),
        "mined": ("mined:verdict_changed_across_findings",),
    }


def test_preview_writes_nothing(application, corpus):
    draft = plan_draft(application=application, budget=2)
    assert len(draft.plan.selections) == 2
    assert SamplingPlan.objects.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"budget": 0}, "budget"), ({"budget": 10**6}, "budget"), ({"budget": 5, "max_per_pattern": 0}, "max_per_pattern")],
)
def test_bad_parameters_are_refused_and_nothing_is_written(application, curator, corpus, kwargs, field):
    with pytest.raises(InvalidInput) as exc:
        plan_create(application=application, actor=curator, **kwargs)
    assert field in exc.value.fields
    assert SamplingPlan.objects.count() == 0


def test_nothing_to_sample_is_a_clear_refusal(application, curator):
    with pytest.raises(InvalidInput) as exc:
        plan_create(application=application, budget=5, actor=curator)
    assert exc.value.code == "nothing_to_sample"


def test_a_plan_only_reads_its_own_application(application, curator, corpus):
    other = ApplicationFactory(slug="other")
    make_case(other, "foreign", mined_by=("sensor_disagreement",), evidence="conflict", sanitized=True)
    plan, _ = plan_create(application=application, budget=10, actor=curator)
    assert "foreign" not in set(plan.selections.values_list("case_ref", flat=True))
    with pytest.raises(NotFound):
        plan_get(application=other, pk=plan.pk)


# -- enqueue ------------------------------------------------------------------


def test_enqueue_copies_each_reason_verbatim_into_the_queue(application, curator, corpus):
    plan, _ = plan_create(application=application, budget=5, actor=curator)
    result = plan_enqueue(plan=plan, actor=curator)
    assert (result.queued, result.already_queued, result.case_gone) == (5, 0, 0)
    for selection in plan.selections.all():
        entry = QueueEntry.objects.get(case=selection.case, state="open")
        assert entry.selection_reason == selection.reason
        assert entry.created_by == curator
        assert selection.queue_entry == entry and selection.enqueue_outcome == EnqueueOutcome.QUEUED
    plan.refresh_from_db()
    assert plan.enqueued_at is not None and plan.enqueued_by == curator
    assert PlanEvent.objects.filter(plan=plan, kind="enqueued").get().detail["queued"] == 5


def test_enqueue_is_idempotent(application, curator, corpus):
    plan, _ = plan_create(application=application, budget=5, actor=curator)
    plan_enqueue(plan=plan, actor=curator)
    again = plan_enqueue(plan=plan_get(application=application, pk=plan.pk), actor=curator)
    assert again.repeated and again.queued == 0
    assert QueueEntry.objects.count() == 5
    assert PlanEvent.objects.filter(plan=plan, kind="enqueued").count() == 1


def test_a_case_already_in_the_queue_is_not_queued_twice(application, curator, corpus):
    existing = queue_enqueue(application=application, case=corpus["loud"], selection_reason="by hand", actor=curator)
    plan, _ = plan_create(application=application, budget=5, actor=None)
    result = plan_enqueue(plan=plan, actor=None)
    assert (result.queued, result.already_queued) == (4, 1)
    assert QueueEntry.objects.filter(case=corpus["loud"]).get() == existing
    loud = plan.selections.get(case_ref="loud")
    assert loud.enqueue_outcome == EnqueueOutcome.ALREADY_QUEUED and loud.queue_entry is None


def test_a_case_that_already_has_its_labels_is_not_queued(application, curator, corpus):
    for reviewer, label in ((curator, "reliable"), (UserFactory(), "unreliable")):
        CaseLabel.objects.create(application=application, case=corpus["loud"], reviewer=reviewer, label=label,
                                 rationale="r")
    plan, _ = plan_create(application=application, budget=5, actor=None)
    result = plan_enqueue(plan=plan, actor=None)
    assert (result.queued, result.labelled) == (4, 1)
    assert result.summary == "4 cases queued, 1 already has its labels."
    assert not QueueEntry.objects.filter(case=corpus["loud"]).exists()
    loud = plan.selections.get(case_ref="loud")
    assert loud.enqueue_outcome == EnqueueOutcome.LABELLED and loud.queue_entry is None


def test_two_plans_never_queue_a_case_twice(application, curator, corpus):
    first, _ = plan_create(application=application, budget=2, actor=curator)
    second, _ = plan_create(application=application, budget=4, actor=curator)
    plan_enqueue(plan=first, actor=curator)
    result = plan_enqueue(plan=second, actor=curator)
    assert (result.queued, result.already_queued) == (2, 2)
    assert QueueEntry.objects.filter(state="open").count() == 4


def test_enqueue_by_a_command_has_no_human_creator(application, corpus):
    plan, _ = plan_create(application=application, budget=1, actor=None)
    plan_enqueue(plan=plan, actor=None)
    assert QueueEntry.objects.get().created_by is None


def test_a_case_deleted_after_planning_is_reported_not_fatal(application, curator, corpus):
    plan, _ = plan_create(application=application, budget=2, actor=curator)
    corpus["loud"].delete()
    result = plan_enqueue(plan=plan, actor=curator)
    assert (result.queued, result.case_gone) == (1, 1)
    assert plan.selections.get(case_ref="loud").enqueue_outcome == EnqueueOutcome.CASE_GONE


def test_a_closed_queue_entry_does_not_stop_a_new_plan(application, curator, corpus):
    QueueEntryFactory(case=corpus["loud"], state="done")
    plan, _ = plan_create(application=application, budget=1, actor=curator)
    assert plan_enqueue(plan=plan, actor=curator).queued == 1


# -- constraints ------------------------------------------------------------


def _plan_fields(application, **overrides) -> dict:
    fields = {
        "application": application, "policy_name": "p", "policy_version": "1", "budget": 5,
        "max_per_pattern": 2, "inputs_digest": "a" * 64, "plan_digest": "b" * 64,
        "canonical_json": "{}", "candidate_count": 0, "signalled_count": 0, "selected_count": 0,
        "capped_count": 0,
    }
    fields.update(overrides)
    return fields


@pytest.mark.parametrize(
    "overrides",
    [{"budget": 0}, {"max_per_pattern": 0}, {"selected_count": 6}, {"plan_digest": "not-a-hash"},
     {"policy_name": ""}],
)
def test_plan_constraints_hold_in_the_database_and_in_full_clean(application, overrides):
    with pytest.raises(ValidationError):
        SamplingPlan(**_plan_fields(application, **overrides)).full_clean()
    with pytest.raises(IntegrityError):
        SamplingPlan.objects.create(**_plan_fields(application, **overrides))


def test_one_plan_per_digest_and_one_rank_per_plan(application, corpus):
    plan = SamplingPlan.objects.create(**_plan_fields(application))
    with pytest.raises(IntegrityError), transaction.atomic():
        SamplingPlan.objects.create(**_plan_fields(application))
    PlanSelection.objects.create(plan=plan, case_ref="a", rank=1, pattern_key="c" * 64, reason="r")
    with pytest.raises(IntegrityError):
        PlanSelection.objects.create(plan=plan, case_ref="b", rank=1, pattern_key="c" * 64, reason="r")


def test_a_selection_needs_a_reason(application):
    plan = SamplingPlan.objects.create(**_plan_fields(application))
    with pytest.raises(IntegrityError):
        PlanSelection.objects.create(plan=plan, case_ref="a", rank=1, pattern_key="c" * 64, reason="")


def test_feedback_disagreeing_with_a_verdict_raises_the_cases_priority(application, curator, corpus):
    from consoles.access import Principal
    from feedback.services import case_feedback_submit

    operator = Principal(kind="session", user=curator)
    quiet = corpus["quiet-2"]
    before = plan_draft(application=application, budget=6).plan
    assert [s.case_id for s in before.selections][-1] == "quiet-2"
    case_feedback_submit(application=application, case_ref=quiet.case_id, manifest=quiet.replay_manifest,
                         disposition="disagrees", note="wrong", actor=operator)
    case_feedback_submit(application=application, case_ref="quiet-1", manifest={},
                         disposition="agrees", actor=operator)
    after = plan_draft(application=application, budget=6).plan
    selection = next(s for s in after.selections if s.case_id == "quiet-2")
    assert selection.signals == ("feedback_disagrees",)
    assert "case feedback disagrees with its verdict" in selection.reason
    assert selection.rank < next(s.rank for s in after.selections if s.case_id == "quiet-1")
    assert after.inputs_digest != before.inputs_digest
