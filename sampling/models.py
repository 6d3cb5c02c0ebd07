"""Models of the sampling app: fields, constraints and indexes; no business logic.

A plan is a content-addressed record of one run of the versioned policy: the
same cases and parameters give the same `plan_digest`, so a plan is stored once
per application however often it is made. Selections keep the case id as text
next to the foreign key so a plan still says what it chose after a retention
purge removes a case.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from consoles.models import Application

SHA256 = r"^[0-9a-f]{64}$"


class SamplingPlan(models.Model):
    application = models.ForeignKey(
        Application, on_delete=models.CASCADE, related_name="sampling_plans"
    )
    policy_name = models.CharField(max_length=100)
    policy_version = models.CharField(max_length=20)
    budget = models.PositiveIntegerField()
    max_per_pattern = models.PositiveIntegerField()
    inputs_digest = models.CharField(max_length=64, help_text="SHA-256 of every case input the policy read.")
    plan_digest = models.CharField(max_length=64, help_text="SHA-256 of the plan's canonical JSON.")
    canonical_json = models.TextField(help_text="The plan as byte-identical canonical JSON (UTF-8).")
    candidate_count = models.PositiveIntegerField(help_text="Cases the policy ranked.")
    signalled_count = models.PositiveIntegerField(help_text="Candidates with at least one signal.")
    selected_count = models.PositiveIntegerField()
    capped_count = models.PositiveIntegerField(help_text="Cases the per-pattern cap left out.")
    gold_excluded_count = models.PositiveIntegerField(
        default=0, help_text="Cases not considered because they already have a gold label."
    )
    # Empty when a scheduled command made the plan (no human behind it).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    enqueued_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "plan_digest"],
                name="%(app_label)s_%(class)s_one_per_digest",
                violation_error_code="duplicate_plan",
            ),
            models.CheckConstraint(
                condition=Q(budget__gte=1),
                name="%(app_label)s_%(class)s_budget_positive",
                violation_error_code="budget_positive",
            ),
            models.CheckConstraint(
                condition=Q(max_per_pattern__gte=1),
                name="%(app_label)s_%(class)s_max_per_pattern_positive",
                violation_error_code="max_per_pattern_positive",
            ),
            models.CheckConstraint(
                condition=Q(selected_count__lte=F("budget")),
                name="%(app_label)s_%(class)s_selected_within_budget",
                violation_error_code="over_budget",
            ),
            models.CheckConstraint(
                condition=Q(inputs_digest__regex=SHA256) & Q(plan_digest__regex=SHA256),
                name="%(app_label)s_%(class)s_digests_are_sha256",
                violation_error_code="digest_invalid",
            ),
            models.CheckConstraint(
                condition=~Q(policy_name="") & ~Q(policy_version=""),
                name="%(app_label)s_%(class)s_policy_named",
                violation_error_code="policy_required",
            ),
        ]
        indexes = [
            models.Index(fields=["application", "-created_at", "-id"], name="sampling_plan_app_created"),
            # The home card counts plans still waiting to be enqueued.
            models.Index(
                fields=["application"],
                condition=Q(enqueued_at__isnull=True),
                name="sampling_plan_app_waiting",
            ),
        ]

    def __str__(self) -> str:
        return f"plan {self.plan_digest[:12]} ({self.application_id})"


class EnqueueOutcome(models.TextChoices):
    QUEUED = "queued", "Queued by this plan"
    ALREADY_QUEUED = "already_queued", "Already in the queue"
    CASE_GONE = "case_gone", "Case no longer exists"
    LABELLED = "labelled", "Already has its labels"


class PlanSelection(models.Model):
    plan = models.ForeignKey(SamplingPlan, on_delete=models.CASCADE, related_name="selections")
    case = models.ForeignKey(
        "adjudication.Case", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    case_ref = models.CharField(max_length=200, help_text="The case's case_id.")
    rank = models.PositiveIntegerField()
    signals = models.JSONField(default=list)
    pattern_key = models.CharField(max_length=64)
    reason = models.TextField()
    enqueue_outcome = models.CharField(
        max_length=16, choices=EnqueueOutcome.choices, blank=True, default=""
    )
    queue_entry = models.ForeignKey(
        "adjudication.QueueEntry", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["plan", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "rank"],
                name="%(app_label)s_%(class)s_rank_unique_per_plan",
                violation_error_code="duplicate_rank",
            ),
            models.UniqueConstraint(
                fields=["plan", "case_ref"],
                name="%(app_label)s_%(class)s_case_once_per_plan",
                violation_error_code="duplicate_case",
            ),
            models.CheckConstraint(
                condition=Q(rank__gte=1),
                name="%(app_label)s_%(class)s_rank_positive",
                violation_error_code="rank_positive",
            ),
            models.CheckConstraint(
                condition=~Q(reason=""),
                name="%(app_label)s_%(class)s_reason_required",
                violation_error_code="reason_required",
            ),
            models.CheckConstraint(
                condition=Q(pattern_key__regex=SHA256),
                name="%(app_label)s_%(class)s_pattern_key_is_sha256",
                violation_error_code="pattern_key_invalid",
            ),
            models.CheckConstraint(
                condition=Q(enqueue_outcome__in=["", *EnqueueOutcome.values]),
                name="%(app_label)s_%(class)s_enqueue_outcome_valid",
                violation_error_code="invalid_enqueue_outcome",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.rank} {self.case_ref}"


class PlanPattern(models.Model):
    """A pattern the plan touched: its size, what was selected, what the cap left out."""

    plan = models.ForeignKey(SamplingPlan, on_delete=models.CASCADE, related_name="patterns")
    pattern_key = models.CharField(max_length=64)
    case_count = models.PositiveIntegerField()
    selected_count = models.PositiveIntegerField()
    capped_count = models.PositiveIntegerField()

    class Meta:
        ordering = ["plan", "-capped_count", "pattern_key"]
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "pattern_key"],
                name="%(app_label)s_%(class)s_once_per_plan",
                violation_error_code="duplicate_pattern",
            ),
            models.CheckConstraint(
                condition=Q(case_count__gte=F("selected_count") + F("capped_count")),
                name="%(app_label)s_%(class)s_counts_consistent",
                violation_error_code="counts_inconsistent",
            ),
        ]

    def __str__(self) -> str:
        return f"pattern {self.pattern_key[:12]}: {self.selected_count}/{self.case_count}"


class PlanEventKind(models.TextChoices):
    CREATED = "created", "Created"
    ENQUEUED = "enqueued", "Enqueued"


class PlanEvent(models.Model):
    """Append-only log of what happened to plans, written in the service's transaction."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    plan = models.ForeignKey(SamplingPlan, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=16, choices=PlanEventKind.choices)
    # Empty for a command run by a scheduler.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    detail = models.JSONField(default=dict, blank=True)
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=PlanEventKind.values),
                name="%(app_label)s_%(class)s_kind_valid",
                violation_error_code="invalid_kind",
            ),
        ]
        indexes = [models.Index(fields=["application", "created_at"], name="sampling_event_app_created")]

    def __str__(self) -> str:
        return f"{self.kind} plan {self.plan_id}"
