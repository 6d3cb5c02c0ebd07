"""SQLite is configured for concurrent use: WAL, a busy timeout, IMMEDIATE
transactions; concurrent writers queue instead of failing with 'database is locked'."""

import threading

import pytest
from django.conf import settings
from django.db import connection, connections, transaction

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite configuration")


@pytest.fixture
def file_db(tmp_path, django_db_blocker):
    """A file-backed database with the project's SQLite settings, as `make run` uses."""
    alias = f"concurrency-{tmp_path.name}"
    connections.settings[alias] = {**settings.DATABASES["default"], "NAME": str(tmp_path / "c.sqlite3")}
    with django_db_blocker.unblock():
        yield alias
        connections[alias].close()
    del connections[alias]
    del connections.settings[alias]


def test_sqlite_uses_wal_and_a_busy_timeout(file_db):
    with connections[file_db].cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 5000


def test_concurrent_writers_queue_instead_of_failing(file_db):
    with connections[file_db].cursor() as cursor:
        cursor.execute("CREATE TABLE counter (n INTEGER)")
        cursor.execute("INSERT INTO counter VALUES (0)")
    errors: list[Exception] = []

    def writer() -> None:
        try:
            for _ in range(25):
                # A read-modify-write transaction: with deferred transactions two
                # writers deadlock on the lock upgrade and one fails "locked".
                with transaction.atomic(using=file_db), connections[file_db].cursor() as cursor:
                    cursor.execute("SELECT n FROM counter")
                    n = cursor.fetchone()[0]
                    cursor.execute("UPDATE counter SET n = %s", [n + 1])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            connections[file_db].close()

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with connections[file_db].cursor() as cursor:
        cursor.execute("SELECT n FROM counter")
        assert cursor.fetchone()[0] == 150
