"""Writes of the sampling app: making a plan and enqueueing it.

Sampling chooses what humans review and never writes a label: enqueueing goes
through the adjudication app's own service, which refuses a second open entry
for a case.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from adjudication.models import Case
from adjudication.services import queue_enqueue
from consoles.errors import InvalidInput
from consoles.models import Application
from consoles.timestamps import on_screen

from .models import (
    EnqueueOutcome,
    PlanEvent,
    PlanEventKind,
    PlanPattern,
    PlanSelection,
    SamplingPlan,
)
from .policy import DEFAULT_MAX_PER_PATTERN, Plan, make_plan
from .selectors import sampling_corpus

# A human review budget; larger numbers are a mistake, not a plan.
MAX_BUDGET = 5000
MAX_PER_PATTERN_LIMIT = 1000


@dataclass(frozen=True)
class PlanDraft:
    """A plan computed but not stored: the preview, and what plan_create stores."""

    plan: Plan
    case_pks: dict[str, int]
    gold_excluded_count: int


def validate_plan_parameters(*, budget: object, max_per_pattern: object) -> tuple[int, int]:
    fields: dict[str, str] = {}
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= MAX_BUDGET:
        fields["budget"] = f"must be a whole number from 1 to {MAX_BUDGET}"
    if (
        not isinstance(max_per_pattern, int)
        or isinstance(max_per_pattern, bool)
        or not 1 <= max_per_pattern <= MAX_PER_PATTERN_LIMIT
    ):
        fields["max_per_pattern"] = f"must be a whole number from 1 to {MAX_PER_PATTERN_LIMIT}"
    if fields:
        raise InvalidInput("The plan's parameters are not valid.", fields=fields)
    return budget, max_per_pattern  # type: ignore[return-value]


def plan_draft(
    *, application: Application, budget: int, max_per_pattern: int = DEFAULT_MAX_PER_PATTERN
) -> PlanDraft:
    """Run the policy on the cases that have no gold label yet; writes nothing.

    Cases with a gold label are left out: a human has already decided them, and
    re-selecting them would spend the budget on finished work.
    """
    budget, max_per_pattern = validate_plan_parameters(budget=budget, max_per_pattern=max_per_pattern)
    corpus = sampling_corpus(application=application)
    if not corpus.unlabelled:
        raise InvalidInput(
            "There is no case without a gold label to sample from.", code="nothing_to_sample"
        )
    plan = make_plan(
        (case for _, case in corpus.unlabelled.values()),
        budget=budget,
        max_per_pattern=max_per_pattern,
    )
    return PlanDraft(
        plan=plan,
        case_pks={s.case_id: corpus.unlabelled[s.case_id][0] for s in plan.selections},
        gold_excluded_count=len(corpus.labelled),
    )


def plan_create(
    *,
    application: Application,
    budget: int,
    max_per_pattern: int = DEFAULT_MAX_PER_PATTERN,
    actor: AbstractBaseUser | None,
    at: datetime | None = None,
) -> tuple[SamplingPlan, bool]:
    """Store the plan the policy makes now; (plan, created). `at`: when it is
    recorded as made (now unless given; the demo data's history is in the past).

    The same corpus and parameters give the same plan digest, so asking again
    returns the stored plan instead of a duplicate.
    """
    draft = plan_draft(application=application, budget=budget, max_per_pattern=max_per_pattern)
    plan = draft.plan
    existing = SamplingPlan.objects.filter(application=application, plan_digest=plan.digest).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            stored = SamplingPlan.objects.create(
                application=application,
                policy_name=plan.policy_name,
                policy_version=plan.policy_version,
                budget=plan.budget,
                max_per_pattern=plan.max_per_pattern,
                inputs_digest=plan.inputs_digest,
                plan_digest=plan.digest,
                canonical_json=plan.canonical_json().decode(),
                candidate_count=plan.candidate_count,
                signalled_count=plan.signalled_count,
                selected_count=len(plan.selections),
                capped_count=plan.capped_count,
                gold_excluded_count=draft.gold_excluded_count,
                created_by=actor,
                created_at=at or timezone.now(),
            )
            PlanSelection.objects.bulk_create(
                PlanSelection(
                    plan=stored,
                    case_id=draft.case_pks[s.case_id],
                    case_ref=s.case_id,
                    rank=s.rank,
                    signals=list(s.signals),
                    pattern_key=s.pattern_key,
                    reason=s.reason,
                )
                for s in plan.selections
            )
            PlanPattern.objects.bulk_create(
                PlanPattern(
                    plan=stored,
                    pattern_key=p.pattern_key,
                    case_count=p.case_count,
                    selected_count=p.selected_count,
                    capped_count=p.capped_count,
                )
                for p in plan.patterns
            )
            PlanEvent.objects.create(
                application=application,
                plan=stored,
                kind=PlanEventKind.CREATED,
                actor=actor,
                created_at=stored.created_at,
                detail={
                    "plan_digest": plan.digest,
                    "budget": plan.budget,
                    "max_per_pattern": plan.max_per_pattern,
                    "selected": len(plan.selections),
                },
            )
    except IntegrityError:
        # Another request stored the same plan a moment ago: that one is ours too.
        existing = SamplingPlan.objects.filter(application=application, plan_digest=plan.digest).first()
        if existing is None:
            raise
        return existing, False
    return stored, True


@dataclass(frozen=True)
class EnqueueResult:
    queued: int
    already_queued: int
    case_gone: int
    labelled: int = 0
    # True when the plan had been enqueued before: nothing was done this time.
    repeated: bool = False
    # Of a repeat: when and by whom the plan was enqueued (nobody: a command).
    enqueued_at: datetime | None = None
    enqueued_by: str = ""

    @property
    def summary(self) -> str:
        if self.repeated:
            when = f" on {on_screen(self.enqueued_at)}" if self.enqueued_at else ""
            who = f" by {self.enqueued_by}" if self.enqueued_by else " by a command"
            return f"This plan was already enqueued{when}{who}; nothing was queued twice."
        parts = [f"{self.queued} case{'s' if self.queued != 1 else ''} queued"]
        if self.already_queued:
            parts.append(f"{self.already_queued} already in the queue")
        if self.case_gone:
            parts.append(f"{self.case_gone} no longer exist")
        if self.labelled:
            parts.append(f"{self.labelled} already {'has its' if self.labelled == 1 else 'have their'} labels")
        return ", ".join(parts) + "."


def plan_enqueue(
    *, plan: SamplingPlan, actor: AbstractBaseUser | None, at: datetime | None = None
) -> EnqueueResult:
    """Put the plan's selections into the adjudication queue, reason copied verbatim
    (`at`: when; now unless given).

    Idempotent: a plan is enqueued once (the row lock makes two concurrent
    clicks queue it once), and a case that already has an open queue entry is
    not queued again.
    """
    at = at or timezone.now()
    with transaction.atomic():
        locked = SamplingPlan.objects.select_for_update().get(pk=plan.pk)
        if locked.enqueued_at is not None:
            return EnqueueResult(
                queued=0, already_queued=0, case_gone=0, repeated=True, enqueued_at=locked.enqueued_at,
                enqueued_by=locked.enqueued_by.get_username() if locked.enqueued_by else "",
            )
        selections = list(PlanSelection.objects.filter(plan=locked).order_by("rank"))
        cases = Case.objects.in_bulk([s.case_id for s in selections if s.case_id is not None])
        counts = {outcome: 0 for outcome in EnqueueOutcome.values}
        for selection in selections:
            case = cases.get(selection.case_id)
            if case is None:
                selection.enqueue_outcome = EnqueueOutcome.CASE_GONE
            else:
                try:
                    entry = queue_enqueue(
                        application=locked.application,
                        case=case,
                        selection_reason=selection.reason,
                        actor=actor,
                        at=at,
                    )
                except InvalidInput as exc:
                    if exc.code != "labels_complete":
                        raise
                    entry, selection.enqueue_outcome = None, EnqueueOutcome.LABELLED
                else:
                    selection.enqueue_outcome = (
                        EnqueueOutcome.QUEUED if entry is not None else EnqueueOutcome.ALREADY_QUEUED
                    )
                selection.queue_entry = entry
            counts[selection.enqueue_outcome] += 1
        PlanSelection.objects.bulk_update(selections, ["enqueue_outcome", "queue_entry"])
        locked.enqueued_at = at
        locked.enqueued_by = actor
        locked.save(update_fields=["enqueued_at", "enqueued_by"])
        PlanEvent.objects.create(
            application=locked.application,
            plan=locked,
            kind=PlanEventKind.ENQUEUED,
            actor=actor,
            created_at=at,
            detail=counts,
        )
    plan.enqueued_at, plan.enqueued_by = locked.enqueued_at, locked.enqueued_by
    return EnqueueResult(
        queued=counts[EnqueueOutcome.QUEUED],
        already_queued=counts[EnqueueOutcome.ALREADY_QUEUED],
        case_gone=counts[EnqueueOutcome.CASE_GONE],
        labelled=counts[EnqueueOutcome.LABELLED],
    )
