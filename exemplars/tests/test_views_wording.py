"""A refused duplicate on the bank screen says what exists and what to do."""

import pytest
from django.urls import reverse

from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory
from exemplars.models import DetectorProfile

from .factories import DetectorProfileFactory

pytestmark = pytest.mark.django_db


def test_a_duplicate_profile_name_says_to_pick_another_or_edit_that_one(client, application):
    admin = MembershipFactory(user=UserFactory(username="ada"), application=application, role=Role.ADMIN).user
    DetectorProfileFactory(application=application, name="hummingbird", axes=["toxicity"])
    client.force_login(admin)
    response = client.post(reverse("exemplars:profile_create", args=[application.slug]),
                           {"new-name": "hummingbird", "new-axes": ["jailbreak"]})
    assert response.status_code == 400
    assert ("&#x27;hummingbird&#x27; already exists: choose another name, or edit that profile instead"
            in response.content.decode())
    assert DetectorProfile.objects.get().axes == ["toxicity"]
