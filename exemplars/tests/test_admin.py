"""The Django admin of bank settings, detector profiles and stored banks."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from consoles.tests.factories import ApplicationFactory
from exemplars.models import BankBuild, BankSettings
from exemplars.tests.factories import BankSettingsFactory, DetectorProfileFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!")


@pytest.fixture
def admin_client(client, root):
    client.force_login(root)
    return client


def _builds(count: int) -> None:
    for _ in range(count):
        profile = DetectorProfileFactory(application=ApplicationFactory())
        BankBuild.objects.create(application=profile.application, profile=profile, version="a" * 64,
                                 embedder="hashed-ngrams", payload=b"", flag_pks=b"", built_at=timezone.now())


def test_the_stored_banks_list_reads_each_profile_with_its_application(admin_client):
    _builds(2)
    with CaptureQueriesContext(connection) as few:
        assert admin_client.get("/admin/exemplars/bankbuild/").status_code == 200
    _builds(5)
    with CaptureQueriesContext(connection) as more:
        response = admin_client.get("/admin/exemplars/bankbuild/")
    assert response.status_code == 200 and response.text.count("detector-") >= 7
    assert len(more) == len(few)


def test_saving_bank_settings_in_the_admin_records_who_saved(admin_client, root, application):
    settings = BankSettingsFactory(application=application, enabled=False)
    response = admin_client.post(f"/admin/exemplars/banksettings/{settings.pk}/change/",
                                 {"enabled": "on", "tau": "0.9"})
    assert response.status_code == 302
    settings.refresh_from_db()
    assert settings.enabled and settings.tau == 0.9 and settings.updated_by == root


def test_bank_settings_and_profiles_stay_with_their_application(admin_client, application):
    other = ApplicationFactory()
    settings = BankSettingsFactory(application=application)
    profile = DetectorProfileFactory(application=application, axes=["jailbreak"])
    admin_client.post(f"/admin/exemplars/banksettings/{settings.pk}/change/",
                      {"application": other.pk, "enabled": "on", "tau": "0.9"})
    admin_client.post(f"/admin/exemplars/detectorprofile/{profile.pk}/change/",
                      {"application": other.pk, "name": profile.name, "axes": '["jailbreak"]'})
    assert BankSettings.objects.get(pk=settings.pk).application == application
    profile.refresh_from_db()
    assert profile.application == application
    page = admin_client.get(f"/admin/exemplars/detectorprofile/{profile.pk}/change/")
    assert 'name="application"' not in page.text
