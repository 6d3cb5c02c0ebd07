"""Reads of the exemplars app; each takes the application explicitly."""

from django.db.models import QuerySet

from consoles.models import Application

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
