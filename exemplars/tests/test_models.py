"""Constraints hold in the database (raw writes) and in full_clean (forms, admin)."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from consoles.tests.factories import ApplicationFactory
from exemplars.models import BankBuild, BankSettings, DetectorProfile

from .factories import DetectorProfileFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("tau", [0, -0.1, 1.01])
def test_tau_is_above_0_and_at_most_1(application, tau):
    with pytest.raises(ValidationError):
        BankSettings(application=application, tau=tau).full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        BankSettings.objects.create(application=application, tau=tau)


def test_the_bank_is_off_by_default_with_tau_088(application):
    row = BankSettings.objects.create(application=application)
    assert (row.enabled, row.tau) == (False, 0.88)


def test_a_profile_name_is_unique_per_application(application):
    DetectorProfileFactory(application=application, name="hummingbird")
    DetectorProfileFactory(application=ApplicationFactory(slug="other"), name="hummingbird")  # another tenant: fine
    with pytest.raises(ValidationError):
        DetectorProfile(application=application, name="hummingbird", axes=["jailbreak"]).full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        DetectorProfile.objects.create(application=application, name="hummingbird", axes=["jailbreak"])


def test_a_profile_name_has_no_spaces_and_axes_are_the_applications(application):
    with pytest.raises(ValidationError):
        DetectorProfile(application=application, name="two words", axes=["jailbreak"]).full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        DetectorProfile.objects.create(application=application, name="two words", axes=["jailbreak"])
    with pytest.raises(ValidationError) as excinfo:
        DetectorProfile(application=application, name="ok", axes=["warp_drive"]).full_clean()
    assert "warp_drive" in str(excinfo.value)


def test_a_stored_bank_version_is_a_sha256(application):
    profile = DetectorProfileFactory(application=application)
    with pytest.raises(IntegrityError), transaction.atomic():
        BankBuild.objects.create(application=application, profile=profile, version="v1", embedder="e",
                                 payload=b"", flag_pks=b"", built_at=timezone.now())
