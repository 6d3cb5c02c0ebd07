import pytest

from consoles.models import Role
from consoles.testing import TenantPair
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    application_token,
)


@pytest.fixture
def application(db):
    return ApplicationFactory(slug="acme", name="Acme")


@pytest.fixture
def curator(db, application):
    return MembershipFactory(user=UserFactory(username="cora"), application=application, role=Role.CURATOR).user


@pytest.fixture
def viewer(db, application):
    return MembershipFactory(user=UserFactory(username="vic"), application=application, role=Role.VIEWER).user


@pytest.fixture
def app_token(db, application) -> str:
    return application_token(application)


@pytest.fixture
def tenant_pair(db) -> TenantPair:
    a = ApplicationFactory(slug="tenant-a")
    b = ApplicationFactory(slug="tenant-b")
    member_a = MembershipFactory(user=UserFactory(username="alice"), application=a, role=Role.ADMIN).user
    member_b = MembershipFactory(user=UserFactory(username="bob"), application=b, role=Role.ADMIN).user
    return TenantPair(
        a=a, b=b, member_of_a=member_a, member_of_b=member_b,
        token_a=application_token(a), token_b=application_token(b),
    )
