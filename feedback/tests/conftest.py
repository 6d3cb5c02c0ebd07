import pytest

from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory


@pytest.fixture
def curator2(db, application):
    return MembershipFactory(user=UserFactory(username="carl"), application=application, role=Role.CURATOR).user


@pytest.fixture
def capturing_application(application):
    application.capture_enabled = True
    application.capture_on_low_confidence = True
    application.capture_on_refusal = True
    application.capture_max_items = 3
    application.save()
    return application
