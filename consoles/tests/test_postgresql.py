"""PostgreSQL's health check: a reused connection is checked before each
request's first query without a round trip, and a connection the server ended
is still caught, so the next request reconnects instead of failing."""

import time

import psycopg
import pytest
from django.db import connection

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL backend"),
    pytest.mark.django_db(transaction=True),
]


def _no_round_trips(monkeypatch):
    """Make any statement on the current connection fail the test."""
    raw = connection.connection

    def refuse(*args, **kwargs):
        raise AssertionError("the health check asked the server")

    monkeypatch.setattr(raw, "cursor", refuse)
    monkeypatch.setattr(raw, "execute", refuse)


def _terminated_by_the_server() -> None:
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_settings_select_the_round_trip_free_backend_with_health_checks():
    assert connection.settings_dict["ENGINE"] == "consoles.backends.postgresql"
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True


def test_an_idle_healthy_connection_is_usable_without_asking_the_server(monkeypatch):
    connection.ensure_connection()
    _no_round_trips(monkeypatch)
    assert connection.is_usable() is True


def test_a_connection_the_server_ended_is_unusable(monkeypatch):
    connection.ensure_connection()
    _terminated_by_the_server()
    _no_round_trips(monkeypatch)
    deadline = time.monotonic() + 5
    while connection.is_usable() and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's goodbye arrives asynchronously
    assert connection.is_usable() is False
    connection.close()  # as Django does with an unusable connection (the test's teardown needs one)


def test_the_next_request_reconnects_after_the_server_ended_the_connection():
    connection.ensure_connection()
    old_pid = connection.connection.info.backend_pid
    _terminated_by_the_server()
    time.sleep(0.2)
    # What Django does at a request's end and its next first query.
    connection.close_if_unusable_or_obsolete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != old_pid


def test_mid_transaction_the_check_asks_the_server(monkeypatch):
    connection.ensure_connection()
    raw = connection.connection
    asked = []
    cursor = raw.cursor
    monkeypatch.setattr(raw, "cursor", lambda *a, **k: asked.append(1) or cursor(*a, **k))
    connection.set_autocommit(False)
    try:
        with connection.cursor() as c:
            c.execute("SELECT 1")
        asked.clear()
        assert connection.is_usable() is True and asked == [1]
    finally:
        connection.rollback()
        connection.set_autocommit(True)


def test_the_token_lookup_is_planned_once_per_connection_and_still_reads_fresh():
    from consoles.services import token_authenticate, token_issue, token_revoke
    from consoles.tests.factories import ApplicationFactory

    issued = token_issue(name="ingest", application=ApplicationFactory())
    for _ in range(3):
        assert token_authenticate(secret=issued.secret).pk == issued.token.pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s", ["%t.digest = $1%"])
        assert cursor.fetchone()[0] == 1  # prepared once, executed three times
    token_revoke(token=issued.token)
    assert token_authenticate(secret=issued.secret) is None  # a prepared plan, not a cached answer
