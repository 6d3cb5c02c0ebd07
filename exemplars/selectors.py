"""Reads of the exemplars app; each takes the application explicitly."""

import json
from dataclasses import dataclass

from django.db import connection
from django.db.models import QuerySet

from consoles.models import Application
from feedback.selectors import approved_set_marker_sql

from .models import BankBuild, BankSettings, DetectorProfile


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

    Raw SQL: on PostgreSQL each round trip costs more than the whole match under
    load, and compiling an ORM query costs more than running it.
    """
    profiles, bank_settings = DetectorProfile._meta.db_table, BankSettings._meta.db_table
    sql = (
        f"SELECT p.id, p.axes, s.id, s.enabled, s.tau, s.generation, {approved_set_marker_sql('p.application_id')} "  # noqa: S608
        f"FROM {profiles} p LEFT JOIN {bank_settings} s ON s.application_id = p.application_id "
        "WHERE p.application_id = %s AND p.name = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [application.pk, name])
        row = cursor.fetchone()
    if row is None:
        return None
    profile_pk, axes, settings_pk, enabled, tau, generation, latest_approved, latest_review = row
    profile = DetectorProfile(pk=profile_pk, application=application, name=name,
                              axes=json.loads(axes) if isinstance(axes, str | bytes) else axes)
    if settings_pk is None:
        settings_row = BankSettings(application=application)
    else:
        settings_row = BankSettings(pk=settings_pk, application=application, enabled=bool(enabled), tau=float(tau),
                                    generation=int(generation))
    return ScoreContext(profile=profile, bank_settings=settings_row, marker=(latest_approved, latest_review))
