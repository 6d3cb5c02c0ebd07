"""Models of the adjudication app: fields, constraints and indexes; no business logic.

Only humans review: `CaseLabel.reviewer` and `GoldLabelRevision.promoted_by` are
NOT NULL foreign keys to the user table, so an application token (another table)
can never be stored as a reviewer, whatever writes the row.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from consoles.models import ApiToken, Application


class Relation(models.TextChoices):
    SUPPORTS = "supports", "supports"
    CONTRADICTS = "contradicts", "contradicts"


class TrustClass(models.TextChoices):
    HOST_OBSERVED = "host_observed", "host-observed"
    AGENT_ADJACENT = "agent_adjacent", "agent-adjacent"
    MODEL_INTERNAL = "model_internal", "model-internal"
    INDEPENDENT_EXTERNAL = "independent_external", "independent-external"
    HUMAN_REVIEWED = "human_reviewed", "human-reviewed"



class Case(models.Model):
    """A candidate case from the mining pipeline: a claim, the local verdict, evidence."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="cases")
    case_id = models.CharField(max_length=200)
    claim_subject = models.CharField(max_length=300)
    claim_text = models.TextField()
    local_verdict = models.CharField(max_length=64)
    mined_by = models.JSONField(default=list, blank=True)
    sanitization_altered_outcome = models.BooleanField(default=False)
    context = models.CharField(max_length=200, blank=True, default="")
    replay_manifest = models.JSONField(default=dict, blank=True)
    # SHA-256 of the imported content: a re-import of the same case is a no-op,
    # a different content under the same case id is refused, never merged.
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "case_id"],
                name="%(app_label)s_%(class)s_case_id_unique_per_application",
                violation_error_code="duplicate_case_id",
            ),
            models.CheckConstraint(
                condition=~Q(case_id=""),
                name="%(app_label)s_%(class)s_case_id_not_empty",
                violation_error_code="case_id_required",
            ),
            models.CheckConstraint(
                condition=Q(digest__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_digest_is_sha256",
                violation_error_code="digest_invalid",
            ),
        ]
        indexes = [
            models.Index(fields=["application", "-created_at", "-id"], name="adj_case_app_created"),
            models.Index(fields=["application", "local_verdict"], name="adj_case_app_verdict"),
        ]

    def __str__(self) -> str:
        return self.case_id

    @property
    def ref(self) -> str:
        """How a URL names the case: its case id, or its number when the id
        cannot be one path segment (it holds a `/`) or is empty."""
        return self.case_id if self.case_id and "/" not in self.case_id else str(self.pk)


class Evidence(models.Model):
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="evidence")
    position = models.PositiveIntegerField(help_text="Order in the imported case.")
    evidence_id = models.CharField(max_length=200)
    relation = models.CharField(max_length=16, choices=Relation.choices)
    trust_class = models.CharField(max_length=32, choices=TrustClass.choices)
    # "" means unknown (no recorded event / group); unknown never groups records.
    source_event_id = models.CharField(max_length=200, blank=True, default="")
    correlation_group = models.CharField(max_length=200, blank=True, default="")
    derived_from = models.JSONField(default=list, blank=True)
    sensor = models.CharField(max_length=200, blank=True, default="")
    observed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["case", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["case", "evidence_id"],
                name="%(app_label)s_%(class)s_evidence_id_unique_per_case",
                violation_error_code="duplicate_evidence_id",
            ),
            models.CheckConstraint(
                condition=Q(relation__in=Relation.values),
                name="%(app_label)s_%(class)s_relation_valid",
                violation_error_code="invalid_relation",
            ),
            models.CheckConstraint(
                condition=Q(trust_class__in=TrustClass.values),
                name="%(app_label)s_%(class)s_trust_class_valid",
                violation_error_code="invalid_trust_class",
            ),
        ]
        indexes = [models.Index(fields=["case", "position"], name="adj_evidence_case_pos")]

    def __str__(self) -> str:
        return f"{self.case_id}:{self.evidence_id}"


class QueueState(models.TextChoices):
    OPEN = "open", "Open"
    DONE = "done", "Done"
    WITHDRAWN = "withdrawn", "Withdrawn"


class QueueEntry(models.Model):
    """A case waiting for human labels. Claimed by one curator at a time; a claim
    expires so a curator who walks away does not hold the entry forever."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="queue_entries")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="queue_entries")
    selection_reason = models.TextField()
    state = models.CharField(max_length=16, choices=QueueState.choices, default=QueueState.OPEN)
    labels_wanted = models.PositiveSmallIntegerField(
        default=2, help_text="Independent labels before the entry is done (2 = double review)."
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_expires_at = models.DateTimeField(null=True, blank=True)
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The curator who enqueued by hand; empty for a plan enqueued by a command.",
    )
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "queue entries"
        constraints = [
            models.UniqueConstraint(
                fields=["case"],
                condition=Q(state="open"),
                name="%(app_label)s_%(class)s_one_open_entry_per_case",
                violation_error_code="already_queued",
            ),
            models.CheckConstraint(
                condition=Q(state__in=QueueState.values),
                name="%(app_label)s_%(class)s_state_valid",
                violation_error_code="invalid_state",
            ),
            models.CheckConstraint(
                condition=(
                    Q(claimed_by__isnull=True, claimed_at__isnull=True, claim_expires_at__isnull=True)
                    | Q(claimed_by__isnull=False, claimed_at__isnull=False, claim_expires_at__isnull=False)
                ),
                name="%(app_label)s_%(class)s_claim_complete",
                violation_error_code="claim_incomplete",
            ),
            models.CheckConstraint(
                condition=Q(state="open") | Q(claimed_by__isnull=True),
                name="%(app_label)s_%(class)s_only_open_entries_are_claimed",
                violation_error_code="claimed_closed_entry",
            ),
            models.CheckConstraint(
                condition=Q(labels_wanted__gte=1),
                name="%(app_label)s_%(class)s_labels_wanted_positive",
                violation_error_code="labels_wanted_positive",
            ),
            models.CheckConstraint(
                condition=~Q(selection_reason=""),
                name="%(app_label)s_%(class)s_selection_reason_required",
                violation_error_code="selection_reason_required",
            ),
        ]
        indexes = [
            # Claim next and the queue screen: open entries of an application, oldest first.
            models.Index(fields=["application", "state", "created_at", "id"], name="adj_queue_app_state"),
            models.Index(fields=["claimed_by", "state"], name="adj_queue_claimant"),
        ]

    def __str__(self) -> str:
        return f"queue #{self.pk} ({self.state})"


class QueueSkip(models.Model):
    """A curator passed on an entry: claim next stops offering it to them."""

    entry = models.ForeignKey(QueueEntry, on_delete=models.CASCADE, related_name="skips")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["entry", "user"],
                name="%(app_label)s_%(class)s_once_per_user",
                violation_error_code="already_skipped",
            )
        ]

    def __str__(self) -> str:
        return f"skip of queue #{self.entry_id} by {self.user_id}"


class CaseLabel(models.Model):
    """One curator's independent judgement of a case."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="case_labels_given")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="labels")
    # Invariant 1: NOT NULL FK to the user table; an application token cannot be stored here.
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    label = models.CharField(max_length=64)
    rationale = models.TextField()
    queue_entry = models.ForeignKey(
        QueueEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="labels"
    )
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["case", "reviewer"],
                name="%(app_label)s_%(class)s_one_per_reviewer",
                violation_error_code="already_labelled",
            ),
            models.CheckConstraint(
                condition=~Q(label=""),
                name="%(app_label)s_%(class)s_label_not_empty",
                violation_error_code="label_required",
            ),
            models.CheckConstraint(
                condition=~Q(rationale=""),
                name="%(app_label)s_%(class)s_rationale_not_empty",
                violation_error_code="rationale_required",
            ),
        ]
        indexes = [models.Index(fields=["application", "created_at"], name="adj_label_app_created")]

    def __str__(self) -> str:
        return f"{self.label} on {self.case_id} by {self.reviewer_id}"


class GoldLabelRevision(models.Model):
    """Append-only: the current gold label of a case is its highest revision.
    A database trigger (migration 0002) refuses UPDATE on this table."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="gold_revisions")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="gold_revisions")
    revision = models.PositiveIntegerField()
    label = models.CharField(max_length=64)
    rationale = models.TextField(blank=True, default="")
    # Invariant 1: the adjudicator is a human user, by the shape of the schema.
    promoted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    based_on = models.ForeignKey(CaseLabel, on_delete=models.PROTECT, related_name="gold_revisions")
    agreeing_label = models.ForeignKey(
        CaseLabel, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["case", "-revision"]
        constraints = [
            models.UniqueConstraint(
                fields=["case", "revision"],
                name="%(app_label)s_%(class)s_revision_unique_per_case",
                violation_error_code="revision_taken",
            ),
            models.CheckConstraint(
                condition=Q(revision__gte=1),
                name="%(app_label)s_%(class)s_revision_positive",
                violation_error_code="revision_positive",
            ),
            models.CheckConstraint(
                condition=~Q(label=""),
                name="%(app_label)s_%(class)s_label_not_empty",
                violation_error_code="label_required",
            ),
        ]
        indexes = [models.Index(fields=["application", "case", "-revision"], name="adj_gold_app_case_rev")]

    def __str__(self) -> str:
        return f"gold r{self.revision} {self.label} on {self.case_id}"


class EventKind(models.TextChoices):
    CASE_IMPORTED = "case_imported"
    ENQUEUED = "enqueued"
    CLAIMED = "claimed"
    RELEASED = "released"
    SKIPPED = "skipped"
    LABELLED = "labelled"
    GOLD_PROMOTED = "gold_promoted"


class AdjudicationEvent(models.Model):
    """The audit log of every write, appended in the service's transaction."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    case = models.ForeignKey(Case, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=32, choices=EventKind.choices)
    actor_kind = models.CharField(max_length=16)  # "user" | "token" | "system"
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    detail = models.JSONField(default=dict, blank=True)
    # Not auto_now_add: a service writes it, `at=` when given (the demo's past history).
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(actor_kind__in=["user", "token", "system"]),
                name="%(app_label)s_%(class)s_actor_kind_valid",
                violation_error_code="invalid_actor_kind",
            ),
            models.CheckConstraint(
                condition=~(Q(actor_user__isnull=False) & Q(actor_token__isnull=False)),
                name="%(app_label)s_%(class)s_one_actor",
                violation_error_code="two_actors",
            ),
        ]
        indexes = [models.Index(fields=["application", "created_at"], name="adj_event_app_created")]

    def __str__(self) -> str:
        return f"{self.kind} ({self.actor_kind}) at {self.created_at:%Y-%m-%d %H:%M}"
