"""Tenants, memberships and API tokens.

A *human* is a row of `auth.User`. Automated identities (integrations, the
runtime, agents) are application tokens, a different table; so every column
that records a review decision points at `auth.User` and can never hold an
agent, by the shape of the schema.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

DEFAULT_AXES = [
    "jailbreak",
    "prompt_injection",
    "hallucination",
    "toxicity",
    "privacy_leak",
    "self_harm",
]

# Plain-language problems a user picks when flagging (no ML jargon), each mapped
# to the detection axis it suggests; the curator may override the axis.
DEFAULT_PROBLEMS = [
    {"key": "jailbreak_attempt", "label": "Tried to get around the rules", "axis": "jailbreak"},
    {"key": "hidden_instructions", "label": "Followed hidden instructions", "axis": "prompt_injection"},
    {"key": "fabricated", "label": "Made something up", "axis": "hallucination"},
    {"key": "offensive", "label": "Rude or offensive", "axis": "toxicity"},
    {"key": "personal_data", "label": "Revealed personal data", "axis": "privacy_leak"},
    {"key": "dangerous_advice", "label": "Encouraged self-harm", "axis": "self_harm"},
]

DEFAULT_CAPTURE_LABELS = ["correct", "incomplete", "wrong", "should-have-refused"]
DEFAULT_CASE_LABELS = ["reliable", "unreliable", "contradicted", "insufficient_evidence"]

slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{0,62}$",
    "Use lowercase letters, digits and hyphens (start with a letter or digit).",
    code="invalid_slug",
)


def _default_axes() -> list[str]:
    return list(DEFAULT_AXES)


def _default_problems() -> list[dict[str, str]]:
    return [dict(p) for p in DEFAULT_PROBLEMS]


def _default_capture_labels() -> list[str]:
    return list(DEFAULT_CAPTURE_LABELS)


def _default_case_labels() -> list[str]:
    return list(DEFAULT_CASE_LABELS)


def _validate_key_list(value: object, field: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ValidationError({field: "Give a non-empty list."})
    keys = []
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValidationError({field: "Every entry must be a non-empty string."})
        keys.append(item)
    if len(set(keys)) != len(keys):
        raise ValidationError({field: "Entries must be unique."})
    return keys


class Application(models.Model):
    """A tenant: one AI system whose feedback loop a team runs here."""

    slug = models.SlugField(max_length=63, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    axes = models.JSONField(default=_default_axes, help_text="Detection axes (list of keys).")
    problems = models.JSONField(
        default=_default_problems,
        help_text='Plain-language problems: [{"key", "label", "axis"}], axis one of the axes.',
    )

    # Capture of the runtime's own low-confidence / refused answers: opt-in, off by default.
    capture_enabled = models.BooleanField(default=False)
    capture_on_low_confidence = models.BooleanField(default=False)
    capture_on_refusal = models.BooleanField(default=False)
    capture_max_items = models.PositiveIntegerField(
        default=1000,
        validators=[MinValueValidator(1)],
        help_text="Pending captures kept; at capacity the oldest pending capture is dropped.",
    )
    capture_labels = models.JSONField(default=_default_capture_labels)

    case_labels = models.JSONField(default=_default_case_labels)
    gold_requires_two_agreeing = models.BooleanField(
        default=False,
        help_text="Promoting a case label to gold needs two curators agreeing.",
    )

    retention_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Delete flags older than this; blank keeps them."
    )

    class Meta:
        ordering = ["name", "slug"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(slug=""),
                name="%(app_label)s_%(class)s_slug_not_empty",
                violation_error_code="slug_required",
            ),
            models.CheckConstraint(
                condition=Q(capture_max_items__gte=1),
                name="%(app_label)s_%(class)s_capture_max_items_positive",
                violation_error_code="capture_max_items_positive",
            ),
            models.CheckConstraint(
                condition=Q(retention_days__isnull=True) | Q(retention_days__gte=1),
                name="%(app_label)s_%(class)s_retention_days_positive",
                violation_error_code="retention_days_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    def clean(self) -> None:
        if self.retention_days is not None and self.retention_days < 1:
            # The database refuses it too; this says so in words, not the constraint's name.
            raise ValidationError({"retention_days": "Keep flags at least 1 day, or leave it blank to keep them."})
        axes = _validate_key_list(self.axes, "axes")
        if not isinstance(self.problems, list) or not self.problems:
            raise ValidationError({"problems": "Give a non-empty list of problems."})
        seen: set[str] = set()
        for problem in self.problems:
            if not isinstance(problem, dict) or not {"key", "label", "axis"} <= problem.keys():
                raise ValidationError({"problems": 'Each problem needs "key", "label" and "axis".'})
            # The admin edits this as raw JSON: a key of [..] would crash the set below, and
            # an empty or numeric key could never match what a flag posts.
            if not all(isinstance(problem[k], str) and problem[k].strip() for k in ("key", "label", "axis")):
                raise ValidationError({"problems": 'A problem\'s "key", "label" and "axis" are non-empty strings.'})
            if problem["key"] in seen:
                raise ValidationError({"problems": f"Problem {problem['key']!r} is listed twice."})
            seen.add(problem["key"])
            if problem["axis"] not in axes:
                raise ValidationError(
                    {"problems": f"Problem {problem['key']!r} maps to unknown axis {problem['axis']!r}."}
                )
        _validate_key_list(self.capture_labels, "capture_labels")
        _validate_key_list(self.case_labels, "case_labels")
        # Whether a removed key is still used by other apps' rows is asked by
        # consoles.services.application_keys_in_use (the admin form calls it):
        # the model knows only its own fields.

    # The lists an admin edits whose keys stored rows refer to, and how to read the keys.
    VOCABULARIES = {
        "axes": set,
        "problems": lambda value: {p["key"] for p in value},
        "capture_labels": set,
        "case_labels": set,
    }

    @property
    def problem_axis_map(self) -> dict[str, str]:
        return {p["key"]: p["axis"] for p in self.problems}

    @property
    def problem_keys(self) -> list[str]:
        return [p["key"] for p in self.problems]

    def captures_reason(self, reason: str) -> bool:
        """Whether a capture with `reason` ("low_confidence" | "refused") is accepted."""
        if not self.capture_enabled:
            return False
        return {
            "low_confidence": self.capture_on_low_confidence,
            "refused": self.capture_on_refusal,
        }.get(reason, False)


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    CURATOR = "curator", "Curator"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.VIEWER: 1, Role.CURATOR: 2, Role.ADMIN: 3}


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    application = models.ForeignKey(
        Application, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["application__slug", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "application"],
                name="%(app_label)s_%(class)s_one_per_user_and_application",
                violation_error_code="duplicate_membership",
            ),
            models.CheckConstraint(
                condition=Q(role__in=Role.values),
                name="%(app_label)s_%(class)s_role_valid",
                violation_error_code="invalid_role",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.application.slug} ({self.role})"

    def has_role(self, minimum: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(minimum)]


class TokenKind(models.TextChoices):
    APPLICATION = "application", "Application token (integration or agent)"
    PERSONAL = "personal", "Personal token (a human user)"
    # A browser-side key for the embeddable flag widget: public by design (it sits in
    # the host page), so it may only create user flags, from its listed origins, at a
    # bounded rate (consoles.embed).
    PUBLISHABLE = "publishable", "Publishable key (the flag widget in a web page)"


class ApiToken(models.Model):
    """A bearer token. Only its SHA-256 digest is stored; the secret is shown once.

    An application token belongs to an application and never to a user: it is
    what integrations and automated agents use. A personal token belongs to a
    human user and carries that user's memberships.
    """

    kind = models.CharField(max_length=16, choices=TokenKind.choices)
    name = models.CharField(max_length=100)
    application = models.ForeignKey(
        Application, null=True, blank=True, on_delete=models.CASCADE, related_name="tokens"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_tokens",
    )
    prefix = models.CharField(max_length=16, help_text="First characters, to recognise a token.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    origins = models.JSONField(
        default=list,
        blank=True,
        help_text="Publishable keys only: the web origins (https://chat.example.com) whose pages may use it.",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(kind=TokenKind.APPLICATION, application__isnull=False, user__isnull=True)
                    | Q(kind=TokenKind.PERSONAL, user__isnull=False, application__isnull=True)
                    | Q(kind=TokenKind.PUBLISHABLE, application__isnull=False, user__isnull=True)
                ),
                name="%(app_label)s_%(class)s_owner_matches_kind",
                violation_error_code="token_owner_mismatch",
                violation_error_message=(
                    "An application token or a publishable key belongs to an application only; "
                    "a personal token to a user only."
                ),
            ),
            # A publishable key without an origin could be used by no page, and one with
            # origins on another kind would suggest a restriction that is not applied.
            models.CheckConstraint(
                condition=(Q(kind=TokenKind.PUBLISHABLE) & ~Q(origins=[])) | (~Q(kind=TokenKind.PUBLISHABLE) & Q(origins=[])),
                name="%(app_label)s_%(class)s_origins_only_on_publishable",
                violation_error_code="token_origins_mismatch",
                violation_error_message="A publishable key lists at least one origin; other tokens list none.",
            ),
            models.CheckConstraint(
                condition=Q(digest__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_digest_is_sha256",
                violation_error_code="token_digest_invalid",
            ),
        ]

    def __str__(self) -> str:
        owner = self.application.slug if self.application_id else self.user
        return f"{self.name} ({self.kind}, {owner}, {self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


# --- Webhooks: endpoints, the outbox of decision events, deliveries -------------------------

WEBHOOK_EVENTS = (
    "flag.approved", "flag.rejected", "flag.reopened", "capture.labelled",
    "case.gold_promoted", "proposal.accepted", "proposal.rejected", "bank.rebuilt",
)


class WebhookEndpoint(models.Model):
    """Where an application's decisions are posted, signed with the endpoint's secret.

    The secret is kept in clear (unlike API tokens, which we only verify): the
    console must compute the HMAC of every delivery with it. It is shown to the
    admin once, when the endpoint is created.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    events = models.JSONField(help_text="Event types delivered to this endpoint.")
    secret = models.CharField(max_length=64, editable=False)
    is_active = models.BooleanField(default=True)
    # When deliveries started failing without a success since; 24 hours of it disables the endpoint.
    failing_since = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_reason = models.CharField(max_length=300, blank=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                   related_name="+", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["application", "pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"),
                name="%(app_label)s_%(class)s_http_url",
                violation_error_code="webhook_url_scheme",
                violation_error_message="Use an http:// or https:// URL.",
            ),
            models.CheckConstraint(
                condition=~Q(secret=""),
                name="%(app_label)s_%(class)s_secret_required",
                violation_error_code="webhook_secret_required",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.url} ({self.application.slug})"


class WebhookEvent(models.Model):
    """The outbox: one decision event, written in the decision's own transaction."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    event_id = models.CharField(max_length=40, unique=True)
    type = models.CharField(max_length=32)
    occurred_at = models.DateTimeField()
    data = models.JSONField()

    class Meta:
        ordering = ["-occurred_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=WEBHOOK_EVENTS),
                name="%(app_label)s_%(class)s_type_known",
                violation_error_code="webhook_event_type",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.event_id}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RETRYING = "retrying", "Retrying"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed (gave up)"


class WebhookDelivery(models.Model):
    """One event to one endpoint: its attempts so far and their last outcome."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["endpoint", "-created_at", "-id"], name="webhook_delivery_log")]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event"], name="%(app_label)s_%(class)s_once_per_endpoint",
                                    violation_error_code="duplicate_delivery"),
            models.CheckConstraint(
                condition=Q(status__in=DeliveryStatus.values),
                name="%(app_label)s_%(class)s_status_known",
                violation_error_code="webhook_delivery_status",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} -> {self.endpoint_id}: {self.status}"
