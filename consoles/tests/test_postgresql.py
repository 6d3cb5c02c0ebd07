"""PostgreSQL's connection settings: Django's own backend, with health checks, so
a connection the server ended is caught and the next request reconnects
instead of failing."""

import time

import psycopg
import pytest
from django.db import connection

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL backend"),
    pytest.mark.django_db(transaction=True),
]


def _terminated_by_the_server() -> None:
    pid = connection.connection.info.backend_pid
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_settings_select_djangos_backend_with_health_checks_a_connect_timeout_and_bound_values():
    assert connection.settings_dict["ENGINE"] == "django.db.backends.postgresql"
    assert connection.settings_dict["CONN_HEALTH_CHECKS"] is True
    assert connection.settings_dict["OPTIONS"]["connect_timeout"] == 5
    assert "prepare_threshold" not in connection.settings_dict["OPTIONS"]
    assert connection.settings_dict["OPTIONS"]["server_side_binding"] is True


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


def test_the_token_lookup_reads_fresh_on_every_call():
    from consoles.services import token_authenticate, token_issue, token_revoke
    from consoles.tests.factories import ApplicationFactory

    issued = token_issue(name="ingest", application=ApplicationFactory())
    for _ in range(3):
        assert token_authenticate(secret=issued.secret).pk == issued.token.pk
    token_revoke(token=issued.token)
    assert token_authenticate(secret=issued.secret) is None
