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


@pytest.fixture(autouse=True)
def _settle_flags_after_every_answer(settings):
    """Every staged flag goes into the queue as its answer closes, so a test can
    look at the tables right after a POST; tests of the interval itself (and of
    reads settling what is still a receipt) set their own."""
    settings.FLAG_SETTLE_INTERVAL = 0


@pytest.fixture(autouse=True, scope="session")
def _flush_clears_history_too() -> None:
    """Transactional tests (and live-server e2e tests) end with `flush`, which on SQLite
    is a DELETE per table: the history triggers refuse those as they refuse anyone's.
    The test database's flush runs under the same grant the retention service takes.
    (PostgreSQL flushes with TRUNCATE, which row triggers do not see.)"""
    from django.db import connection

    if connection.vendor != "sqlite":
        return
    from django.db.backends.sqlite3.operations import DatabaseOperations

    from consoles.appendonly import GRANT_TABLE

    execute = DatabaseOperations.execute_sql_flush

    def execute_sql_flush(self, sql_list):
        return execute(self, [f"INSERT INTO {GRANT_TABLE} DEFAULT VALUES", *sql_list, f"DELETE FROM {GRANT_TABLE}"])  # noqa: S608

    DatabaseOperations.execute_sql_flush = execute_sql_flush
