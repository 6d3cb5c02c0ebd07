"""Models of the feedback app: fields, constraints and indexes; no business logic.

A `Flag` is a signal on one live message: a user's flag posted by an
integration, an operator's flag, or an automated capture of the runtime's own
low-confidence / refused answer. Curators review flags; every decision is a
`FlagReview` row whose reviewer is a NOT NULL foreign key to the user table
(only a human can be stored there: application tokens live in another table),
and every transition is an append-only `FlagEvent`.

The feedback app never produces adjudication labels; it only records signals
and their review.
"""

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from consoles.dbfunctions import UtcDay
from consoles.models import ApiToken, Application

PUBLIC_ID_PREFIX = "fb_"
PUBLIC_ID_REGEX = r"^fb_[0-9a-f]{16}$"


class Region(models.TextChoices):
    PROMPT = "prompt", "Prompt (a user message)"
    ANSWER = "answer", "Answer (an assistant message)"


class FlagStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    # Captures are labelled with the application's label set, never approved
    # with an axis/verdict: the two kinds of ground truth stay apart.
    LABELLED = "labelled", "Labelled"
    # A pending capture dropped at the application's capacity (seed 003); the
    # row stays, without its text, so the drop is auditable.
    DROPPED = "dropped", "Dropped"


class Verdict(models.TextChoices):
    FALSE_NEGATIVE = "false_negative", "False negative (a miss)"
    FALSE_POSITIVE = "false_positive", "False positive (an over-flag)"


class AuthorKind(models.TextChoices):
    END_USER = "end_user", "End user (via the integration)"
    OPERATOR = "operator", "Operator"
    AGENT = "agent", "Automated agent"


class CaptureReason(models.TextChoices):
    LOW_CONFIDENCE = "low_confidence", "Low confidence"
    REFUSED = "refused", "Refused"


class ActorKind(models.TextChoices):
    USER = "user", "Human user"
    TOKEN = "token", "Application token"
    SYSTEM = "system", "The system"


class Flag(models.Model):
    # Every index is written on each ingested flag, so none is redundant: the
    # application's foreign key is served by the composite indexes it leads, and
    # the nullable user keys by partial indexes that rows without a user skip.
    public_id = models.CharField(max_length=19, unique=True, editable=False)
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="flags", db_index=False)
    region = models.CharField(max_length=8, choices=Region.choices)
    # Blank only for captures, which the runtime posts without a user's problem.
    problem = models.CharField(max_length=64, blank=True)
    suggested_axis = models.CharField(max_length=64, blank=True)
    # The current axis: the suggested one until a curator decides, then the
    # curator's (final once approved). Filters and the export use this column.
    axis = models.CharField(max_length=64, blank=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    status = models.CharField(max_length=10, choices=FlagStatus.choices, default=FlagStatus.PENDING)

    prompt = models.TextField(blank=True)
    context = models.TextField(blank=True)
    answer = models.TextField(blank=True)
    detector_scores = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)
    message_id = models.CharField(max_length=200)
    session_id = models.CharField(max_length=200, blank=True)
    end_user_ref = models.CharField(max_length=200, blank=True)

    author_kind = models.CharField(max_length=10, choices=AuthorKind.choices)
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.RESTRICT, related_name="+", db_index=False
    )
    author_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    capture_reason = models.CharField(max_length=16, choices=CaptureReason.choices, blank=True)
    capture_label = models.CharField(max_length=64, blank=True)

    # Contrastive twin (optional, set at review time).
    twin_prompt = models.TextField(blank=True)
    twin_answer = models.TextField(blank=True)
    weight = models.FloatField(null=True, blank=True)
    attack_family = models.CharField(max_length=100, blank=True)
    review_note = models.TextField(blank=True)
    # The answer the assistant should have given (an approved answer-region flag
    # only): what the SFT and preference exports train on. The last review's.
    correction = models.TextField(blank=True, db_default="")

    # Optimistic concurrency: every write bumps it; a decision names the version it saw.
    version = models.PositiveIntegerField(default=1)

    # Soft claim while a curator has the flag open, so "next" skips it for others.
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    claimed_until = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField()
    # Set by every service write (not auto_now: bulk updates must set it too);
    # exports pick up changes since their last run with it.
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(public_id__regex=PUBLIC_ID_REGEX),
                name="%(app_label)s_%(class)s_public_id_format",
                violation_error_code="public_id_format",
            ),
            models.CheckConstraint(
                condition=Q(region__in=Region.values),
                name="%(app_label)s_%(class)s_region_valid",
                violation_error_code="region_invalid",
            ),
            models.CheckConstraint(
                condition=Q(status__in=FlagStatus.values),
                name="%(app_label)s_%(class)s_status_valid",
                violation_error_code="status_invalid",
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=["", *Verdict.values]),
                name="%(app_label)s_%(class)s_verdict_valid",
                violation_error_code="verdict_invalid",
            ),
            models.CheckConstraint(
                condition=Q(capture_reason__in=["", *CaptureReason.values]),
                name="%(app_label)s_%(class)s_capture_reason_valid",
                violation_error_code="capture_reason_invalid",
            ),
            # Who flagged: an operator is a human user; an end user (through the
            # integration) and an automated agent came in with an application token.
            models.CheckConstraint(
                condition=(
                    Q(author_kind=AuthorKind.OPERATOR, author_user__isnull=False, author_token__isnull=True)
                    | Q(author_kind__in=[AuthorKind.END_USER, AuthorKind.AGENT], author_user__isnull=True)
                ),
                name="%(app_label)s_%(class)s_author_matches_kind",
                violation_error_code="author_mismatch",
            ),
            # Captures are exactly the agent-authored rows.
            models.CheckConstraint(
                condition=(
                    Q(author_kind=AuthorKind.AGENT) & ~Q(capture_reason="")
                    | ~Q(author_kind=AuthorKind.AGENT) & Q(capture_reason="")
                ),
                name="%(app_label)s_%(class)s_capture_is_agent",
                violation_error_code="capture_author",
            ),
            # A user's flag needs a problem; only captures may come without one.
            models.CheckConstraint(
                condition=~Q(problem="") | ~Q(capture_reason=""),
                name="%(app_label)s_%(class)s_problem_required",
                violation_error_code="problem_required",
            ),
            # An approved flag has its final axis and verdict; captures are never approved.
            models.CheckConstraint(
                condition=~Q(status=FlagStatus.APPROVED)
                | (~Q(axis="") & ~Q(verdict="") & Q(capture_reason="")),
                name="%(app_label)s_%(class)s_approved_has_axis_and_verdict",
                violation_error_code="approved_incomplete",
            ),
            # Labels belong to captures only, and a labelled capture has one.
            models.CheckConstraint(
                condition=Q(capture_label="") | ~Q(capture_reason=""),
                name="%(app_label)s_%(class)s_label_only_on_captures",
                violation_error_code="label_on_flag",
            ),
            models.CheckConstraint(
                condition=~Q(status=FlagStatus.LABELLED) | ~Q(capture_label=""),
                name="%(app_label)s_%(class)s_labelled_has_label",
                violation_error_code="labelled_without_label",
            ),
            models.CheckConstraint(
                condition=~Q(status=FlagStatus.DROPPED) | ~Q(capture_reason=""),
                name="%(app_label)s_%(class)s_only_captures_dropped",
                violation_error_code="dropped_user_flag",
            ),
            models.CheckConstraint(
                condition=Q(weight__isnull=True) | Q(weight__gte=0, weight__lte=1),
                name="%(app_label)s_%(class)s_weight_range",
                violation_error_code="weight_range",
            ),
            models.CheckConstraint(
                condition=Q(version__gte=1),
                name="%(app_label)s_%(class)s_version_positive",
                violation_error_code="version_positive",
            ),
            models.CheckConstraint(
                condition=~Q(message_id=""),
                name="%(app_label)s_%(class)s_message_id_required",
                violation_error_code="message_id_required",
            ),
            # Posting the same message and region again finds the existing flag.
            # User flags and captures of one message are separate signals.
            models.UniqueConstraint(
                fields=["application", "message_id", "region"],
                condition=Q(capture_reason=""),
                name="%(app_label)s_%(class)s_one_flag_per_message_region",
                violation_error_code="duplicate_flag",
            ),
            models.UniqueConstraint(
                fields=["application", "message_id", "region"],
                condition=~Q(capture_reason=""),
                name="%(app_label)s_%(class)s_one_capture_per_message_region",
                violation_error_code="duplicate_capture",
            ),
        ]
        # The queue pages by keyset on (created_at, id) under each filter, so
        # each selective filter has an index ending in that order: no scan, no
        # COUNT(*). Region has two values: the (application[, status],
        # created_at, id) indexes serve it, reading about twice a page's rows
        # (EXPLAIN on both databases: the same plan shape, time within noise),
        # so it has none of its own and ingest writes two B-trees fewer.
        indexes = [
            models.Index(fields=["application", "created_at", "id"], name="fb_flag_app_created"),
            models.Index(fields=["application", "status", "created_at", "id"], name="fb_flag_status_created"),
            models.Index(
                fields=["application", "status", "axis", "created_at", "id"], name="fb_flag_status_axis"
            ),
            models.Index(
                fields=["application", "status", "problem", "created_at", "id"], name="fb_flag_status_problem"
            ),
            models.Index(
                fields=["application", "status", "author_kind", "created_at", "id"],
                name="fb_flag_status_author",
            ),
            models.Index(fields=["application", "axis", "created_at", "id"], name="fb_flag_axis_created"),
            models.Index(fields=["application", "problem", "created_at", "id"], name="fb_flag_problem_created"),
            models.Index(
                fields=["application", "author_kind", "created_at", "id"], name="fb_flag_author_created"
            ),
            models.Index(fields=["application", "updated_at", "id"], name="fb_flag_app_updated"),
            # The exemplar bank's per-score check: the latest approved change, one index lookup.
            models.Index(fields=["application", "status", "updated_at"], name="fb_flag_status_updated"),
            # A deleted user's rows, found without a scan; rows with no user skip them.
            models.Index(fields=["author_user"], condition=Q(author_user__isnull=False), name="fb_flag_author_user"),
            models.Index(fields=["claimed_by"], condition=Q(claimed_by__isnull=False), name="fb_flag_claimed_by"),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def is_capture(self) -> bool:
        return bool(self.capture_reason)


class FlagReview(models.Model):
    """One human decision on a flag (approve, reject, re-open, label).

    `reviewer` is a NOT NULL foreign key to the user table: an application
    token or an agent cannot be stored here, by the shape of the schema.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    flag = models.ForeignKey(Flag, on_delete=models.CASCADE, related_name="reviews")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.RESTRICT, related_name="+")
    from_status = models.CharField(max_length=10, choices=FlagStatus.choices)
    to_status = models.CharField(max_length=10, choices=FlagStatus.choices)
    axis = models.CharField(max_length=64, blank=True)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    capture_label = models.CharField(max_length=64, blank=True)
    note = models.TextField(blank=True)
    correction = models.TextField(blank=True, db_default="", help_text="The answer the assistant should have given (approve).")
    flag_version = models.PositiveIntegerField(help_text="The flag's version after this decision.")
    created_at = models.DateTimeField()
    # Copied from the flag at decision time (its arrival never changes), so the
    # overview's flag-to-decision quantiles read one index, with no join to flags.
    wait_seconds = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Seconds from the flag's arrival to this decision; empty for a re-opening."
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(to_status__in=[s for s in FlagStatus.values if s != FlagStatus.DROPPED]),
                name="%(app_label)s_%(class)s_to_status_valid",
                violation_error_code="review_status_invalid",
            ),
        ]
        indexes = [
            models.Index(fields=["flag", "created_at"], name="fb_review_flag"),
            models.Index(fields=["application", "created_at"], name="fb_review_app_created"),
            # The overview groups by UTC day (consoles.dbfunctions.UtcDay): indexed
            # on the day itself, the rows arrive grouped and nothing is sorted.
            # Decisions per day and curator:
            models.Index(F("application"), UtcDay("created_at"), F("reviewer"), F("to_status"),
                         name="fb_review_app_day_reviewer"),
            # Flag-to-decision quantiles per day: each day's waits in order
            # (a wait is set on decisions only, never on a re-opening).
            models.Index(F("application"), UtcDay("created_at"), F("wait_seconds"), name="fb_review_app_day_wait",
                         condition=Q(wait_seconds__isnull=False)),
            # Approvals per axis and verdict in a date range.
            models.Index(
                fields=["application", "to_status", "created_at", "axis", "verdict"], name="fb_review_app_approved"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.flag_id}: {self.from_status} → {self.to_status}"


class EventAction(models.TextChoices):
    CREATED = "created", "Created"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    REOPENED = "reopened", "Re-opened"
    LABELLED = "labelled", "Labelled"
    DROPPED = "dropped", "Dropped at capacity"


class AppendOnlyQuerySet(models.QuerySet):
    """Events are history: no bulk update or delete through the ORM.

    Retention and erasure are the one exception, and they say so by calling
    `erase()`; cascades from a deleted flag or application still apply.
    """

    def update(self, **kwargs):
        raise TypeError("Flag events are append-only; they are never updated.")

    def delete(self):
        raise TypeError("Flag events are append-only; use erase() for retention or erasure only.")

    def erase(self) -> int:
        """Delete these events: only for retention purges and erasure requests."""
        return super().delete()[0]


class FlagEvent(models.Model):
    """An append-only record of one transition: who, when, from, to, what."""

    # Foreign keys served by the composite indexes they lead (fb_event_app_created,
    # fb_event_flag), and the user by a partial one: an ingested flag's event
    # writes no index it does not need.
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+", db_index=False)
    flag = models.ForeignKey(Flag, on_delete=models.CASCADE, related_name="events", db_index=False)
    action = models.CharField(max_length=10, choices=EventAction.choices)
    from_status = models.CharField(max_length=10, choices=FlagStatus.choices, blank=True)
    to_status = models.CharField(max_length=10, choices=FlagStatus.choices)
    actor_kind = models.CharField(max_length=6, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.RESTRICT, related_name="+", db_index=False
    )
    actor_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # What changed, field -> [old, new] (or a short reason for system events).
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(actor_kind=ActorKind.USER, actor_user__isnull=False, actor_token__isnull=True)
                    | Q(actor_kind=ActorKind.TOKEN, actor_user__isnull=True)
                    | Q(actor_kind=ActorKind.SYSTEM, actor_user__isnull=True, actor_token__isnull=True)
                ),
                name="%(app_label)s_%(class)s_actor_matches_kind",
                violation_error_code="actor_mismatch",
            ),
            models.CheckConstraint(
                condition=Q(action__in=EventAction.values),
                name="%(app_label)s_%(class)s_action_valid",
                violation_error_code="action_invalid",
            ),
        ]
        indexes = [
            models.Index(fields=["flag", "created_at", "id"], name="fb_event_flag"),
            models.Index(fields=["application", "created_at"], name="fb_event_app_created"),
            # The overview's backlog: transitions per UTC day, grouped in index order.
            models.Index(F("application"), UtcDay("created_at"), F("from_status"), F("to_status"),
                         name="fb_event_app_day_transition"),
            models.Index(fields=["actor_user"], condition=Q(actor_user__isnull=False), name="fb_event_actor_user"),
        ]

    def __str__(self) -> str:
        return f"{self.flag_id}: {self.action} {self.from_status} → {self.to_status}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise TypeError("Flag events are append-only; an existing event cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("Flag events are append-only; use FlagEvent.objects.filter(...).erase().")


# --- Case feedback -------------------------------------------------------------
# An operator's or an agent's disposition on a mined case. It only raises the
# case's priority for sampling; it is never a review decision. `case_ref` is the
# case's id string, not a foreign key: the feedback app does not depend on the
# app that owns cases.


class Disposition(models.TextChoices):
    AGREES = "agrees", "Agrees with the verdict"
    DISAGREES = "disagrees", "Disagrees with the verdict"
    UNSURE = "unsure", "Unsure"


class CaseFeedback(models.Model):
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="case_feedback")
    case_ref = models.CharField(max_length=200)
    disposition = models.CharField(max_length=10, choices=Disposition.choices)
    note = models.TextField(blank=True)
    # Provenance binding: the case's replay manifest as it was when the feedback
    # was given, frozen here so later re-mining cannot change what it refers to.
    bound_manifest = models.JSONField()
    author_kind = models.CharField(max_length=10, choices=AuthorKind.choices)
    author_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.RESTRICT, related_name="+"
    )
    author_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "case feedback"
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(author_kind=AuthorKind.OPERATOR, author_user__isnull=False, author_token__isnull=True)
                    | Q(author_kind=AuthorKind.AGENT, author_user__isnull=True)
                ),
                name="%(app_label)s_%(class)s_author_matches_kind",
                violation_error_code="author_mismatch",
            ),
            models.CheckConstraint(
                condition=Q(disposition__in=Disposition.values),
                name="%(app_label)s_%(class)s_disposition_valid",
                violation_error_code="disposition_invalid",
            ),
            models.CheckConstraint(
                condition=~Q(case_ref=""),
                name="%(app_label)s_%(class)s_case_ref_not_empty",
                violation_error_code="case_ref_required",
            ),
        ]
        indexes = [
            models.Index(fields=["application", "case_ref", "created_at"], name="fb_casefb_app_case"),
            models.Index(fields=["application", "disposition"], name="fb_casefb_app_disposition"),
        ]

    def __str__(self) -> str:
        return f"{self.disposition} on {self.case_ref} ({self.author_kind})"
# --- Exports and data governance ---------------------------------------------


class ExportKind(models.TextChoices):
    FLAGS_FILE = "flags_file", "JSONL corpus file (export_flags)"
    FLAGS_DOWNLOAD = "flags_download", "JSONL download (API or queue button)"
    DRAFTS = "drafts", "YAML drafts (export_drafts)"
    SNAPSHOT = "snapshot", "Dataset snapshot (recorded from the screen, downloaded again on request)"


class ExportManifest(models.Model):
    """One export: where it went, what it held, and whether it is still valid.

    `flag_set` lists exactly which flags the export held (sorted primary keys,
    delta-encoded and compressed; see `feedback.exports.encode_id_set`), so an
    erasure or a retention purge finds every file an erased flag appears in and
    marks it stale, without reading the files. Downloads are recorded too
    (without a path): the operator then knows who holds a copy.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ExportKind.choices)
    path = models.CharField(max_length=1024, blank=True, help_text="The file (or drafts directory).")
    filters = models.JSONField(default=dict, blank=True)
    # sha256 of the canonical filters: `--since-last` continues the series with the same filters.
    filters_key = models.CharField(max_length=64)
    # The lines' shape (feedback.exports.EXPORT_FORMATS): classifier, sft or preference.
    export_format = models.CharField(max_length=16, default="classifier", db_default="classifier")
    row_count = models.PositiveBigIntegerField(default=0)
    # Flags the filters selected that the format had nothing to train on (not in the file).
    left_out = models.PositiveBigIntegerField(default=0, db_default=0)
    byte_count = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    corpus_version = models.CharField(max_length=32, blank=True)
    flag_set = models.BinaryField()
    # Rows changed after `since` (None: everything) and up to `watermark` (when the read began).
    since = models.DateTimeField(null=True, blank=True)
    watermark = models.DateTimeField()
    generated_at = models.DateTimeField()
    # Who asked: a human, an application token, or (both empty) an operator's command.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_token = models.ForeignKey(
        ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_label = models.CharField(max_length=200, blank=True)
    stale_at = models.DateTimeField(null=True, blank=True)
    stale_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-generated_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=ExportKind.values),
                name="%(app_label)s_%(class)s_kind_valid",
                violation_error_code="export_kind_invalid",
            ),
            models.CheckConstraint(
                condition=Q(export_format__in=["classifier", "sft", "preference"]),
                name="%(app_label)s_%(class)s_export_format_valid",
                violation_error_code="export_format_invalid",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[ExportKind.FLAGS_DOWNLOAD, ExportKind.SNAPSHOT]) | ~Q(path=""),
                name="%(app_label)s_%(class)s_file_has_path",
                violation_error_code="export_path_required",
            ),
            models.CheckConstraint(
                condition=Q(sha256="") | Q(sha256__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_sha256_format",
                violation_error_code="export_sha256_format",
            ),
            models.CheckConstraint(
                condition=Q(stale_at__isnull=True) | ~Q(stale_reason=""),
                name="%(app_label)s_%(class)s_stale_has_reason",
                violation_error_code="export_stale_reason_required",
            ),
            models.CheckConstraint(
                condition=Q(since__isnull=True) | Q(since__lte=models.F("watermark")),
                name="%(app_label)s_%(class)s_since_before_watermark",
                violation_error_code="export_since_after_watermark",
            ),
        ]
        indexes = [
            # --since-last: the newest export of a series.
            models.Index(
                fields=["application", "kind", "filters_key", "generated_at"], name="fb_export_series"
            ),
            # Erasure and retention: the exports still valid, newest first.
            models.Index(fields=["application", "stale_at", "generated_at"], name="fb_export_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.path or '(download)'} ({self.row_count} rows)"

    @property
    def is_stale(self) -> bool:
        return self.stale_at is not None


class DatasetSnapshot(models.Model):
    """A named, immutable record of one training export: its format, filters, row
    count, the SHA-256 of its lines and, per line, the flag and its line's hash
    (`entries`, in file order: `[[public_id, sha256 of the line[:16]], ...]`), so
    two snapshots diff by id (added, removed, changed) without their files.

    The export it was written as (`manifest`) holds the flag set erasure and
    purge search; they mark that manifest stale, never this row, which is
    never changed after it is written.

    Its difference from the application's previous snapshot of the same format
    (`previous`, `diff`: `{"added", "removed", "changed"}`, sorted flag ids) is
    taken once, when it is recorded, since neither of the two changes after:
    the list of snapshots reads it and never the entries (35 MB at a million lines).
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+", db_index=False)
    name = models.CharField(max_length=100)
    export_format = models.CharField(max_length=16)
    filters = models.JSONField(default=dict, blank=True)
    row_count = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    entries = models.JSONField(default=list, blank=True)
    manifest = models.ForeignKey(ExportManifest, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by_label = models.CharField(max_length=200, blank=True)
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    diff = models.JSONField(null=True, blank=True)  # None for the first snapshot of its format

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "name"],
                name="%(app_label)s_%(class)s_name_unique",
                violation_error_code="snapshot_name_taken",
            ),
            models.CheckConstraint(
                condition=Q(export_format__in=["classifier", "sft", "preference"]),
                name="%(app_label)s_%(class)s_export_format_valid",
                violation_error_code="snapshot_format_invalid",
            ),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_sha256_format",
                violation_error_code="snapshot_sha256_format",
            ),
            models.CheckConstraint(
                condition=~Q(name=""),
                name="%(app_label)s_%(class)s_name_required",
                violation_error_code="snapshot_name_required",
            ),
        ]
        indexes = [
            models.Index(fields=["application", "created_at"], name="fb_snapshot_app_created"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.export_format}, {self.row_count} rows)"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None and not self._state.adding:
            raise TypeError("Dataset snapshots are immutable; an existing snapshot cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("Dataset snapshots are immutable; they go only with their application.")


class ErasureKind(models.TextChoices):
    SESSION = "session_id", "A session (session id)"
    END_USER = "end_user_ref", "An end user (end-user reference)"
    RETENTION = "retention", "Retention purge (older than retention_days)"


class ErasureRecord(models.Model):
    """What an erasure or a retention purge removed: who, when, how many — never
    the erased content. The subject is kept only as a keyed digest, so an
    auditor can confirm that a given subject was erased without the console
    keeping the identifier itself."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=ErasureKind.choices)
    subject_digest = models.CharField(max_length=64, blank=True)
    requested_by = models.CharField(max_length=200, help_text="The operator (or cron) who ran it.")
    performed_at = models.DateTimeField()
    cutoff = models.DateTimeField(null=True, blank=True, help_text="Retention: flags created before this.")
    flags_deleted = models.PositiveIntegerField(default=0)
    events_deleted = models.PositiveIntegerField(default=0)
    reviews_deleted = models.PositiveIntegerField(default=0)
    bank_entries_removed = models.PositiveIntegerField(default=0)
    stale_exports = models.JSONField(
        default=list, blank=True, help_text="The export files that held erased flags (paths or downloads)."
    )

    class Meta:
        ordering = ["-performed_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=ErasureKind.values),
                name="%(app_label)s_%(class)s_kind_valid",
                violation_error_code="erasure_kind_invalid",
            ),
            # A subject erasure names its subject (as a digest); a purge names its cutoff.
            models.CheckConstraint(
                condition=(
                    Q(kind=ErasureKind.RETENTION, cutoff__isnull=False, subject_digest="")
                    | (~Q(kind=ErasureKind.RETENTION) & Q(subject_digest__regex=r"^[0-9a-f]{64}$"))
                ),
                name="%(app_label)s_%(class)s_subject_or_cutoff",
                violation_error_code="erasure_subject_required",
            ),
            models.CheckConstraint(
                condition=~Q(requested_by=""),
                name="%(app_label)s_%(class)s_requested_by_required",
                violation_error_code="erasure_requested_by_required",
            ),
        ]
        indexes = [
            models.Index(fields=["application", "performed_at"], name="fb_erasure_app_performed"),
            models.Index(fields=["application", "subject_digest"], name="fb_erasure_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} on {self.performed_at:%Y-%m-%d}: {self.flags_deleted} flags"


# --- Ended days of the history, summed ---------------------------------------
# Kept by feedback.history: the overview's per-day aggregates of a UTC day that
# has ended, computed on first read. The history they sum is append-only and
# written when it happens, so an ended day only changes by erasure, purge or a
# write dated in the past; those bump the application's epoch and drop its rows.


class HistoryEpoch(models.Model):
    application = models.OneToOneField(Application, on_delete=models.CASCADE, primary_key=True, related_name="+")
    epoch = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.application_id}: epoch {self.epoch}"


class HistoryDay(models.Model):
    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    # The application's epoch when this was computed: rows of an older epoch are
    # never read (a reader that raced an erasure may still write one).
    epoch = models.PositiveBigIntegerField()
    transitions = models.JSONField(default=list, help_text="[from_status, to_status, count], ...")
    decisions = models.JSONField(default=list, help_text="[reviewer id, decisions], ...")
    approvals = models.JSONField(default=list, help_text="[axis, verdict, approvals], ...")
    waits = models.BinaryField(
        default=b"",
        help_text="Each decision's wait in seconds, ascending: a width byte (4 or 8), then unsigned LE integers.",
    )
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["application", "day", "epoch"],
                name="%(app_label)s_%(class)s_one_per_day_and_epoch",
                violation_error_code="history_day_duplicate",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.application_id} {self.day} (epoch {self.epoch})"
