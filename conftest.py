import io

import pytest
from django.core.management import call_command
from django.db import transaction

from consoles.models import Role
from consoles.testing import TenantPair
from consoles.tests.factories import (
    ApplicationFactory,
    MembershipFactory,
    UserFactory,
    application_token,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Within each module, the tests that use `demo_loaded` run after the others.

    The shared demo's outer transaction stays open until its module ends, so a test
    that did not ask for the demo but ran after one that did would see its rows
    (one asserting an empty table failed). Modules keep their order; the sort is stable.
    """
    modules: dict[str, int] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], len(modules))
    items.sort(key=lambda item: (modules[item.nodeid.split("::", 1)[0]],
                                 "demo_loaded" in getattr(item, "fixturenames", ())))


@pytest.fixture(scope="module")
def demo_loaded(django_db_setup, django_db_blocker):
    """`load_demo` once per test module, for tests that only need the demo's rows there.

    As Django's `TestCase.setUpTestData` does: the demo is written inside an outer
    transaction held open for the module, each test's own transaction nests in it as a
    savepoint and is rolled back, and the outer one is rolled back at the end, so no
    test sees another's writes and nothing outlives the module. One run costs about
    2 s, and the tenant sweep and bad-input catalogue alone ran it 45 times.
    """
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            call_command("load_demo", stdout=io.StringIO())
            yield
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


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
