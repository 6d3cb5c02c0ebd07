"""Models of the teaching app: fields, constraints and indexes; no business logic.

History is append-only: proposals are never deleted (PROTECT everywhere they are
referenced), every state change is a `ProposalEvent`, a decision is a
`ProposalDecision` whose operator column can only hold a human (`auth.User`), and
corpus entries are never rewritten: an entry is retired by appending a
`CorpusSupersession`, and the active corpus is the entries without one.
"""

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

from consoles.models import ApiToken, Application

from .domain import CANDIDATE_ID_PATTERN


class Polarity(models.TextChoices):
    AFFIRMS = "affirms", "Affirms"
    FALSIFIES = "falsifies", "Falsifies"
    UNDETERMINED = "undetermined", "Undetermined"


DECIDED = [Polarity.AFFIRMS, Polarity.FALSIFIES]


class HedgeTier(models.TextChoices):
    NONE = "", "None"
    WEAK = "weak", "Weak"
    STRONG = "strong", "Strong"


class ActorKind(models.TextChoices):
    USER = "user", "A human user"
    TOKEN = "token", "An application token"
    SYSTEM = "system", "The console itself (a command or the replay gate)"


def _actor_constraint(prefix: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=(
            Q(actor_kind=ActorKind.USER, actor_user__isnull=False, actor_token__isnull=True)
            # kind=token with a null token: the token row was deleted later (SET_NULL
            # keeps the history; the kind still says an automated identity acted).
            | Q(actor_kind=ActorKind.TOKEN, actor_user__isnull=True)
            | Q(actor_kind=ActorKind.SYSTEM, actor_token__isnull=True, actor_user__isnull=True)
        ),
        name="%(app_label)s_%(class)s_actor_matches_kind",
        violation_error_code=f"{prefix}_actor_mismatch",
    )


candidate_id_validator = RegexValidator(
    CANDIDATE_ID_PATTERN,
    "Use 1-128 letters, digits, dots, underscores, colons or hyphens.",
    code="invalid_candidate_id",
)


class Candidate(models.Model):
    """A discovery candidate, kept as evidence whether or not it is eligible.

    Chain fields may be empty: completeness is an eligibility gate, not an input rule.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="teaching_candidates")
    candidate_id = models.CharField(max_length=128, validators=[candidate_id_validator])
    subject = models.CharField(max_length=500, blank=True)
    intent = models.CharField(max_length=500, blank=True)
    connective = models.CharField(max_length=500, blank=True)
    object = models.CharField(max_length=500, blank=True)
    polarity = models.CharField(max_length=16, choices=Polarity.choices)
    claim_domain = models.CharField(max_length=64)
    evidence = models.JSONField(default=list, blank=True)
    boundary_clean = models.BooleanField()
    hedge_tier = models.CharField(max_length=8, choices=HedgeTier.choices, blank=True, default="")
    hedge_surface = models.TextField(blank=True, default="")
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "candidate_id"],
                name="%(app_label)s_%(class)s_one_per_id",
                violation_error_code="duplicate_candidate",
            ),
            models.CheckConstraint(
                condition=Q(polarity__in=Polarity.values),
                name="%(app_label)s_%(class)s_polarity_valid",
                violation_error_code="invalid_polarity",
            ),
            models.CheckConstraint(
                condition=Q(hedge_tier__in=HedgeTier.values),
                name="%(app_label)s_%(class)s_hedge_tier_valid",
                violation_error_code="invalid_hedge_tier",
            ),
            models.CheckConstraint(
                condition=~Q(claim_domain=""),
                name="%(app_label)s_%(class)s_claim_domain_required",
                violation_error_code="claim_domain_required",
            ),
            _actor_constraint("candidate"),
        ]
        indexes = [models.Index(fields=["application", "-created_at", "-id"], name="teach_cand_app_created")]

    def __str__(self) -> str:
        return self.candidate_id

    @property
    def chain(self) -> dict[str, str]:
        return {"subject": self.subject, "intent": self.intent, "connective": self.connective, "object": self.object}


class ProposalState(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"


class Proposal(models.Model):
    """A teaching-chain proposal; `state` is a projection of its events."""

    application = models.ForeignKey(Application, on_delete=models.PROTECT, related_name="teaching_proposals")
    proposal_id = models.CharField(max_length=64)
    candidate = models.ForeignKey(Candidate, on_delete=models.PROTECT, related_name="proposals")
    subject = models.CharField(max_length=500)
    intent = models.CharField(max_length=500)
    connective = models.CharField(max_length=500)
    object = models.CharField(max_length=500)
    polarity = models.CharField(max_length=16, choices=Polarity.choices)
    claim_domain = models.CharField(max_length=64)
    evidence = models.JSONField(default=list)
    allow_evaluative = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=ProposalState.choices, default=ProposalState.PENDING)
    operator_note = models.TextField(blank=True, default="")
    # The replay-equivalence gate's evidence, stored with the proposal.
    baseline = models.JSONField(default=dict)
    candidate_metrics = models.JSONField(default=dict)
    regressed_metrics = models.JSONField(default=list)
    replay_equivalent = models.BooleanField()
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "proposal_id"],
                name="%(app_label)s_%(class)s_one_per_id",
                violation_error_code="duplicate_proposal",
            ),
            models.CheckConstraint(
                condition=Q(proposal_id__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_id_is_sha256",
                violation_error_code="proposal_id_invalid",
            ),
            models.CheckConstraint(
                condition=Q(state__in=ProposalState.values),
                name="%(app_label)s_%(class)s_state_valid",
                violation_error_code="invalid_state",
            ),
            models.CheckConstraint(
                condition=Q(polarity__in=DECIDED),
                name="%(app_label)s_%(class)s_polarity_decided",
                violation_error_code="polarity_undetermined",
            ),
            models.CheckConstraint(
                condition=~Q(subject="") & ~Q(intent="") & ~Q(connective="") & ~Q(object=""),
                name="%(app_label)s_%(class)s_chain_complete",
                violation_error_code="chain_incomplete",
            ),
            # Only a replay-equivalent proposal can ever be accepted.
            models.CheckConstraint(
                condition=~Q(state=ProposalState.ACCEPTED) | Q(replay_equivalent=True),
                name="%(app_label)s_%(class)s_accepted_is_replay_equivalent",
                violation_error_code="not_replay_equivalent",
            ),
            _actor_constraint("proposal"),
        ]
        indexes = [
            models.Index(fields=["application", "state", "-created_at", "-id"], name="teach_prop_app_state"),
            models.Index(fields=["application", "-created_at", "-id"], name="teach_prop_app_created"),
            models.Index(fields=["proposal_id"], name="teach_prop_pid"),
        ]

    def __str__(self) -> str:
        return self.proposal_id[:12]

    @property
    def chain(self) -> dict[str, str]:
        return {"subject": self.subject, "intent": self.intent, "connective": self.connective, "object": self.object}


class EventKind(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    AUTO_REJECTED = "auto_rejected", "Auto-rejected by the replay gate"
    ACCEPTED = "accepted", "Accepted by an operator"
    REJECTED = "rejected", "Rejected by an operator"
    WITHDRAWN = "withdrawn", "Withdrawn by an operator"


class ProposalEvent(models.Model):
    """One state change of a proposal; appended, never updated or deleted."""

    application = models.ForeignKey(Application, on_delete=models.PROTECT, related_name="+")
    proposal = models.ForeignKey(Proposal, on_delete=models.PROTECT, related_name="events")
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16, choices=ProposalState.choices)
    note = models.TextField(blank=True, default="")
    actor_kind = models.CharField(max_length=8, choices=ActorKind.choices)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    actor_token = models.ForeignKey(ApiToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=EventKind.values),
                name="%(app_label)s_%(class)s_kind_valid",
                violation_error_code="invalid_event_kind",
            ),
            models.CheckConstraint(
                condition=Q(to_state__in=ProposalState.values)
                & (Q(from_state="") | Q(from_state__in=ProposalState.values)),
                name="%(app_label)s_%(class)s_states_valid",
                violation_error_code="invalid_event_state",
            ),
            _actor_constraint("event"),
        ]
        indexes = [models.Index(fields=["application", "id"], name="teach_event_app_id")]

    def __str__(self) -> str:
        return f"{self.kind} {self.from_state or '-'} -> {self.to_state}"


class Decision(models.TextChoices):
    ACCEPT = "accept", "Accept"
    REJECT = "reject", "Reject"
    WITHDRAW = "withdraw", "Withdraw"


class ProposalDecision(models.Model):
    """An operator's decision. `operator` is a NOT NULL foreign key to the user
    table, so an application token or an agent can never be stored here."""

    application = models.ForeignKey(Application, on_delete=models.PROTECT, related_name="+")
    proposal = models.OneToOneField(Proposal, on_delete=models.PROTECT, related_name="decision")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    operator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    note = models.TextField(blank=True, default="")
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-decided_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(decision__in=Decision.values),
                name="%(app_label)s_%(class)s_decision_valid",
                violation_error_code="invalid_decision",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} by {self.operator_id}"


class CorpusSource(models.TextChoices):
    SEED = "seed", "Seed"
    DISCOVERY_PROMOTED = "discovery_promoted", "Discovery promoted"


ADR_ID = "adr-0057"


class CorpusEntry(models.Model):
    """One teaching chain in the corpus, with its provenance. Never updated."""

    application = models.ForeignKey(Application, on_delete=models.PROTECT, related_name="teaching_corpus")
    # The entry's number within its application's corpus (1, 2, ...): what the
    # screens, the export and `teaching supersede` name it by. The id is global
    # across tenants and would show one application gaps where another's entries are.
    number = models.PositiveIntegerField()
    subject = models.CharField(max_length=500)
    intent = models.CharField(max_length=500)
    connective = models.CharField(max_length=500)
    object = models.CharField(max_length=500)
    polarity = models.CharField(max_length=16, choices=Polarity.choices)
    claim_domain = models.CharField(max_length=64)
    source = models.CharField(max_length=32, choices=CorpusSource.choices)
    adr_id = models.CharField(max_length=32, blank=True, default="")
    proposal = models.OneToOneField(
        Proposal, null=True, blank=True, on_delete=models.PROTECT, related_name="corpus_entry"
    )
    decision = models.OneToOneField(
        ProposalDecision, null=True, blank=True, on_delete=models.PROTECT, related_name="corpus_entry"
    )
    operator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    review_date = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "corpus entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(source__in=CorpusSource.values),
                name="%(app_label)s_%(class)s_source_valid",
                violation_error_code="invalid_source",
            ),
            models.CheckConstraint(
                condition=Q(polarity__in=DECIDED),
                name="%(app_label)s_%(class)s_polarity_decided",
                violation_error_code="polarity_undetermined",
            ),
            # A promoted entry always carries its full provenance.
            models.CheckConstraint(
                condition=~Q(source=CorpusSource.DISCOVERY_PROMOTED)
                | Q(
                    proposal__isnull=False,
                    decision__isnull=False,
                    operator__isnull=False,
                    review_date__isnull=False,
                ),
                name="%(app_label)s_%(class)s_promoted_has_provenance",
                violation_error_code="provenance_required",
            ),
            models.UniqueConstraint(
                fields=["application", "number"],
                name="%(app_label)s_%(class)s_one_number_per_application",
                violation_error_code="duplicate_number",
            ),
            models.CheckConstraint(
                condition=Q(number__gte=1),
                name="%(app_label)s_%(class)s_number_positive",
                violation_error_code="number_positive",
            ),
        ]
        indexes = [models.Index(fields=["application", "id"], name="teach_corpus_app_id")]

    def __str__(self) -> str:
        return f"{self.subject} {self.intent} {self.connective} {self.object} ({self.polarity})"


class CorpusSupersession(models.Model):
    """Retires `entry` in favour of `superseded_by`: appended by an operator, so the
    entry itself is never rewritten and the active corpus stays derived."""

    application = models.ForeignKey(Application, on_delete=models.PROTECT, related_name="+")
    entry = models.OneToOneField(CorpusEntry, on_delete=models.PROTECT, related_name="supersession")
    superseded_by = models.ForeignKey(CorpusEntry, on_delete=models.PROTECT, related_name="supersedes")
    operator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(entry=models.F("superseded_by")),
                name="%(app_label)s_%(class)s_not_itself",
                violation_error_code="supersedes_itself",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id} superseded by {self.superseded_by_id}"


class Split(models.TextChoices):
    PUBLIC = "public", "Public"
    DEV = "dev", "Dev"
    HOLDOUT = "holdout", "Holdout"


class EvalCase(models.Model):
    """An eval case of an application: subject + intent -> expected object and polarity."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="teaching_eval_cases")
    case_id = models.CharField(max_length=128, validators=[candidate_id_validator])
    split = models.CharField(max_length=8, choices=Split.choices)
    subject = models.CharField(max_length=500)
    intent = models.CharField(max_length=500)
    expected_object = models.CharField(max_length=500)
    expected_polarity = models.CharField(max_length=16, choices=Polarity.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["split", "case_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "case_id"],
                name="%(app_label)s_%(class)s_one_per_id",
                violation_error_code="duplicate_eval_case",
            ),
            models.CheckConstraint(
                condition=Q(split__in=Split.values),
                name="%(app_label)s_%(class)s_split_valid",
                violation_error_code="invalid_split",
            ),
            models.CheckConstraint(
                condition=Q(expected_polarity__in=DECIDED),
                name="%(app_label)s_%(class)s_polarity_decided",
                violation_error_code="polarity_undetermined",
            ),
            models.CheckConstraint(
                condition=~Q(subject="") & ~Q(intent="") & ~Q(expected_object=""),
                name="%(app_label)s_%(class)s_complete",
                violation_error_code="eval_case_incomplete",
            ),
        ]
        indexes = [models.Index(fields=["application", "split", "case_id"], name="teach_eval_app_split")]

    def __str__(self) -> str:
        return self.case_id
