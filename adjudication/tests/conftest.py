import pytest

from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory


@pytest.fixture
def curator2(db, application):
    return MembershipFactory(user=UserFactory(username="cid"), application=application, role=Role.CURATOR).user


@pytest.fixture
def curator3(db, application):
    return MembershipFactory(user=UserFactory(username="cyd"), application=application, role=Role.CURATOR).user
