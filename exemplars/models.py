"""Models of the exemplar bank: per-application settings, detector profiles and
the persisted bank of each profile. No business logic here (see services.py).

The bank is derived data: approved flags (and their contrastive benign twins)
embedded on the unit sphere. It is stored so a restart does not re-embed, and
rebuilt only when its version (a SHA-256 over the embedder and the approved
set) changes.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from consoles.models import Application

DEFAULT_TAU = 0.88
NAME_REGEX = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
MAX_DIM = 4096
# `<flag public id>-<f|t>-<12 hex of the text's SHA-256>`: the flag and side are
# read from the id alone, and a corrected text is a new exemplar (a new id).
EXEMPLAR_ID_REGEX = r"^fb_[0-9a-f]{16}-[ft]-[0-9a-f]{12}$"


class Embedder(models.TextChoices):
    CONSOLE = "console", "The console embeds (EXEMPLAR_EMBEDDER)"
    EXTERNAL = "external", "External: the detector uploads its own vectors"


class BankSettings(models.Model):
    """Whether the score endpoint consults the bank (off by default) and its τ."""

    application = models.OneToOneField(Application, on_delete=models.CASCADE, related_name="bank_settings")
    enabled = models.BooleanField(
        default=False, help_text="Consult the exemplar bank when scoring. Off: scores pass through unchanged."
    )
    tau = models.FloatField(
        "τ (match floor)", default=DEFAULT_TAU,
        help_text="Cosine similarity at or above which an exemplar matches (exact-pattern recall: keep it high).",
    )
    # Bumped by every erasure or retention purge that touched this application's
    # flags: a cheap signal to every server process that its in-memory bank is stale.
    generation = models.PositiveBigIntegerField(default=0, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        editable=False,
    )

    class Meta:
        verbose_name = "bank settings"
        verbose_name_plural = "bank settings"
        constraints = [
            models.CheckConstraint(
                condition=Q(tau__gt=0, tau__lte=1),
                name="%(app_label)s_%(class)s_tau_range",
                violation_error_code="tau_range",
                violation_error_message="τ must be above 0 and at most 1.",
            ),
        ]

    def __str__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"bank of {self.application.slug}: {state}, τ {self.tau}"


class DetectorProfile(models.Model):
    """A detector an application runs, with its own axis set.

    Each profile has its own bank: an approved flag whose axis the profile
    lacks is skipped for that profile's bank.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="detector_profiles")
    name = models.CharField(max_length=64, help_text="What the runtime sends as `detector`.")
    axes = models.JSONField(help_text="The detector's axes: a non-empty list of the application's axes.")
    embedder = models.CharField(
        max_length=16, choices=Embedder.choices, default=Embedder.CONSOLE,
        help_text="External: the console never embeds; the detector uploads a vector per exemplar "
                  "and sends the query's vector with each score.",
    )
    # Fixed by the first upload of an external profile: every vector and query has this size.
    dim = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # Bumped in the transaction of every upload that stored a new or changed vector:
    # the cheap signal (read with every score) that the bank's version must be re-checked.
    vector_generation = models.PositiveBigIntegerField(default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["application", "name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(embedder__in=["console", "external"]),
                name="%(app_label)s_%(class)s_embedder_known",
                violation_error_code="profile_embedder",
            ),
            models.CheckConstraint(
                condition=Q(dim__isnull=True) | Q(embedder="external", dim__gte=1, dim__lte=MAX_DIM),
                name="%(app_label)s_%(class)s_dim_external_only",
                violation_error_code="profile_dim",
                violation_error_message=f"Only an external profile has a dimension (1 to {MAX_DIM}).",
            ),
            models.UniqueConstraint(
                fields=["application", "name"],
                name="%(app_label)s_%(class)s_unique_name",
                violation_error_code="duplicate_profile",
                violation_error_message="This application already has a detector profile with this name.",
            ),
            models.CheckConstraint(
                condition=Q(name__regex=NAME_REGEX),
                name="%(app_label)s_%(class)s_name_format",
                violation_error_code="profile_name_format",
                violation_error_message="Use letters, digits, '.', '_' or '-' (at most 64, no spaces).",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.application.slug})"

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        axes = self.axes
        if not isinstance(axes, list) or not axes or not all(isinstance(a, str) and a for a in axes):
            raise ValidationError({"axes": "Give a non-empty list of axis names."})
        if len(set(axes)) != len(axes):
            raise ValidationError({"axes": "Each axis once."})
        if self.application_id:
            unknown = [a for a in axes if a not in self.application.axes]
            if unknown:
                raise ValidationError(
                    {"axes": f"Not axes of this application: {', '.join(unknown)} "
                             f"(it has {', '.join(self.application.axes)})."}
                )


class BankBuild(models.Model):
    """The current bank of one detector profile, persisted.

    `payload` holds the numpy arrays (`numpy.savez`, float32 vectors, no
    pickles): the unit vectors and, per row, its flag, region, axis, verdict,
    kind (the flag's text or its twin) and weight. `flag_pks` (int64) lets an
    erasure find the builds that hold a subject's flags without loading the
    vectors. `fingerprint` is the cheap marker of the approved set this
    version was last checked against (see services.bank_fingerprint).
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    profile = models.OneToOneField(DetectorProfile, on_delete=models.CASCADE, related_name="build")
    version = models.CharField(max_length=64)
    embedder = models.CharField(max_length=100)
    fingerprint = models.CharField(max_length=64, blank=True)
    exemplar_count = models.PositiveIntegerField(default=0)
    flag_count = models.PositiveIntegerField(default=0)
    skipped_flag_count = models.PositiveIntegerField(
        default=0, help_text="Approved flags whose axis this profile lacks (not in this bank)."
    )
    missing_vector_count = models.PositiveIntegerField(
        default=0, help_text="External profiles: approved exemplars the detector has not uploaded a vector for."
    )
    stats = models.JSONField(default=dict, blank=True, help_text="Exemplars per axis, region and side.")
    payload = models.BinaryField()
    flag_pks = models.BinaryField()
    built_at = models.DateTimeField()
    build_seconds = models.FloatField(default=0)

    class Meta:
        ordering = ["application", "profile"]
        constraints = [
            models.CheckConstraint(
                condition=Q(version__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_version_sha256",
                violation_error_code="bank_version_format",
            ),
            models.CheckConstraint(
                condition=~Q(embedder=""),
                name="%(app_label)s_%(class)s_embedder_required",
                violation_error_code="bank_embedder_required",
            ),
            models.CheckConstraint(
                condition=Q(build_seconds__gte=0),
                name="%(app_label)s_%(class)s_build_seconds_positive",
                violation_error_code="bank_build_seconds",
            ),
        ]

    def __str__(self) -> str:
        return f"bank {self.version[:12]} of {self.profile_id} ({self.exemplar_count} exemplars)"


class ExemplarVector(models.Model):
    """The detector's own vector of one exemplar of an external profile.

    Stored as little-endian float32 bytes, already on the unit sphere, with
    the SHA-256 of those bytes (the bank version is computed from digests
    without reading the vectors). `flag` lets erasure and purge remove a
    subject's vectors with the flags.
    """

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="+")
    profile = models.ForeignKey(DetectorProfile, on_delete=models.CASCADE, related_name="vectors")
    flag = models.ForeignKey("feedback.Flag", on_delete=models.CASCADE, related_name="+")
    exemplar_id = models.CharField(max_length=40)
    vector = models.BinaryField()
    digest = models.CharField(max_length=64)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["profile", "exemplar_id"],
                name="%(app_label)s_%(class)s_one_per_exemplar",
                violation_error_code="duplicate_vector",
            ),
            models.CheckConstraint(
                condition=Q(exemplar_id__regex=EXEMPLAR_ID_REGEX),
                name="%(app_label)s_%(class)s_exemplar_id_format",
                violation_error_code="exemplar_id_format",
            ),
            models.CheckConstraint(
                condition=Q(digest__regex=r"^[0-9a-f]{64}$"),
                name="%(app_label)s_%(class)s_digest_sha256",
                violation_error_code="vector_digest_format",
            ),
        ]

    def __str__(self) -> str:
        return f"vector of {self.exemplar_id} ({self.profile_id})"
