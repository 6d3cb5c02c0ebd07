"""Reads of the exemplars app; each takes the application explicitly."""

import json
from dataclasses import dataclass

from django.db import connection
from django.db.models import OuterRef, QuerySet

from consoles.models import Application
from feedback.selectors import approved_set_marker_sql, approved_set_marker_subqueries

from .models import BankBuild, BankSettings, DetectorProfile, ExemplarVector


def bank_settings_get(*, application: Application) -> BankSettings:
    """The application's settings, or the defaults (disabled, τ 0.88) when none were saved."""
    row = BankSettings.objects.filter(application=application).first()
    if row is None:
        return BankSettings(application=application)
    row.application = application
    return row


def profile_list(*, application: Application) -> QuerySet[DetectorProfile]:
    return DetectorProfile.objects.filter(application=application).order_by("name")


def profile_get(*, application: Application, name: str) -> DetectorProfile | None:
    profile = DetectorProfile.objects.filter(application=application, name=name).first()
    if profile is not None:
        profile.application = application
    return profile


def profile_get_by_pk(*, application: Application, pk: int) -> DetectorProfile | None:
    profile = DetectorProfile.objects.filter(application=application, pk=pk).first()
    if profile is not None:
        profile.application = application
    return profile


def build_list(*, application: Application) -> dict[int, BankBuild]:
    """The stored bank of each profile (without the vectors), by profile pk."""
    builds = BankBuild.objects.filter(application=application).defer("payload", "flag_pks")
    return {build.profile_id: build for build in builds}


def bank_size(*, application: Application) -> int:
    return sum(BankBuild.objects.filter(application=application).values_list("exemplar_count", flat=True))


@dataclass(frozen=True)
class ScoreContext:
    profile: DetectorProfile
    bank_settings: BankSettings
    marker: tuple[object, object]  # feedback's approved-set marker (opaque)


def score_context(*, application: Application, name: str) -> ScoreContext | None:
    """The profile named `name`, the bank settings and the approved-set marker in
    one database round trip (what every score needs); None for an unknown profile.

    Hand-built SQL, this app's one such read: on PostgreSQL each round trip
    costs more than the whole match under load, and compiling the ORM statement
    costs 4.5x (PostgreSQL) to 25x (SQLite) the hand-built read (`python -m bench selectors`). `score_context_orm`
    is the same read through the ORM; a test holds the two equal on both databases.
    """
    profiles, bank_settings = DetectorProfile._meta.db_table, BankSettings._meta.db_table
    sql = (
        "SELECT p.id, p.axes, p.embedder, p.dim, p.vector_generation, s.id, s.enabled, s.tau, s.generation, "  # noqa: S608
        f"{approved_set_marker_sql('p.application_id')} "
        f"FROM {profiles} p LEFT JOIN {bank_settings} s ON s.application_id = p.application_id "
        "WHERE p.application_id = %s AND p.name = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [application.pk, name])
        row = cursor.fetchone()
    if row is None:
        return None
    (profile_pk, axes, embedder, dim, vector_generation, settings_pk, enabled, tau, generation,
     latest_approved, latest_review) = row
    profile = DetectorProfile(pk=profile_pk, application=application, name=name,
                              axes=json.loads(axes) if isinstance(axes, str | bytes) else axes,
                              embedder=embedder, dim=dim, vector_generation=int(vector_generation))
    if settings_pk is None:
        settings_row = BankSettings(application=application)
    else:
        settings_row = BankSettings(pk=settings_pk, application=application, enabled=bool(enabled), tau=float(tau),
                                    generation=int(generation))
    return ScoreContext(profile=profile, bank_settings=settings_row, marker=(latest_approved, latest_review))


def score_context_orm(*, application: Application, name: str) -> ScoreContext | None:
    """score_context through the ORM: the reference its test and bench compare against."""
    latest_approved, latest_review = approved_set_marker_subqueries(OuterRef("application_id"))
    profile = (
        DetectorProfile.objects.filter(application=application, name=name)
        .select_related("application__bank_settings")
        .annotate(latest_approved=latest_approved, latest_review=latest_review)
        .first()
    )
    if profile is None:
        return None
    try:
        settings_row = profile.application.bank_settings
    except BankSettings.DoesNotExist:
        settings_row = BankSettings(application=application)
    return ScoreContext(profile=profile, bank_settings=settings_row,
                        marker=(profile.latest_approved, profile.latest_review))


# --- Detector-owned vectors -----------------------------------------------------------


@dataclass(frozen=True)
class Exemplar:
    """One text of an external profile's bank the detector embeds."""

    exemplar_id: str
    flag_id: str
    source: str  # "flag" | "twin"
    region: str
    text: str
    has_vector: bool


@dataclass(frozen=True)
class ExemplarPage:
    items: list[Exemplar]
    next_after: str | None  # the last flag read, when more may follow


EXEMPLAR_SCAN_CHUNK = 500


def exemplar_page(
    *, profile: DetectorProfile, missing: bool, after: str | None, limit: int
) -> ExemplarPage:
    """The exemplars of `profile`'s bank in flag order after the flag `after`
    (only those without a vector when `missing`): at most `limit`, never
    splitting a flag's two exemplars across pages, so the key (a flag's public
    id) is all a cursor needs. Reads flags in chunks: a page of missing
    exemplars costs a scan up to the next `limit` of them, not the whole set.
    """
    from feedback.models import Region
    from feedback.selectors import approved_bank_rows

    from .bank import KIND_FLAG, KIND_TWIN, exemplar_id

    items: list[Exemplar] = []
    cursor = after
    while True:
        rows = list(approved_bank_rows(application=profile.application, axes=profile.axes, after=cursor,
                                       limit=EXEMPLAR_SCAN_CHUNK))
        if not rows:
            return ExemplarPage(items, None)
        candidates: list[tuple[str, list[Exemplar]]] = []
        for _pk, public_id, region, _axis, _verdict, prompt, answer, twin_prompt, twin_answer, _weight in rows:
            text, twin = (prompt, twin_prompt) if region == Region.PROMPT else (answer, twin_answer)
            ours = [
                Exemplar(exemplar_id(public_id, kind, value), public_id, "flag" if kind == KIND_FLAG else "twin",
                         region, value, False)
                for kind, value in ((KIND_FLAG, text), (KIND_TWIN, twin)) if value.strip()
            ]
            candidates.append((public_id, ours))
        stored = set(
            ExemplarVector.objects.filter(
                profile_id=profile.pk, exemplar_id__in=[e.exemplar_id for _, ours in candidates for e in ours],
            ).values_list("exemplar_id", flat=True)
        )
        for public_id, ours in candidates:
            ours = [Exemplar(**{**e.__dict__, "has_vector": e.exemplar_id in stored}) for e in ours]
            if missing:
                ours = [e for e in ours if not e.has_vector]
            if items and len(items) + len(ours) > limit:
                return ExemplarPage(items, cursor)
            items.extend(ours)
            cursor = public_id
            if len(items) == limit:
                return ExemplarPage(items, cursor)
        if len(rows) < EXEMPLAR_SCAN_CHUNK:
            return ExemplarPage(items, None)
