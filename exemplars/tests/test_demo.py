import io

import pytest
from django.core.management import call_command

from exemplars.models import BankBuild, BankSettings, DetectorProfile

pytestmark = pytest.mark.django_db


def test_demo_has_profiles_for_both_applications_and_a_bank_enabled_for_acme_only(demo_loaded):
    profiles = {(p.application.slug, p.name): p.axes for p in DetectorProfile.objects.select_related("application")}
    assert profiles[("acme-chat", "hummingbird")] != profiles[("acme-chat", "tapestry")]
    assert ("globex-verifier", "verifier-guard") in profiles
    enabled = set(BankSettings.objects.filter(enabled=True).values_list("application__slug", flat=True))
    assert enabled == {"acme-chat"}
    acme = {b.profile.name: b for b in BankBuild.objects.filter(application__slug="acme-chat").select_related("profile")}
    assert acme["hummingbird"].exemplar_count > 0
    assert acme["tapestry"].skipped_flag_count >= 1  # the self_harm flag tapestry lacks
    builds = dict(BankBuild.objects.values_list("profile_id", "version"))
    call_command("load_demo", stdout=io.StringIO())
    assert dict(BankBuild.objects.values_list("profile_id", "version")) == builds
