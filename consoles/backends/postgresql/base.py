"""PostgreSQL, as Django's backend, with a health check that costs no round trip.

With CONN_HEALTH_CHECKS (what lets the workers outlive a database restart),
Django checks a reused connection before the first query of every request, and
its check is a `SELECT 1`: one more round trip on every request, the ingest's
token lookup included (about a tenth of a flag's time on PostgreSQL).

A connection the server ended (restart, `pg_terminate_backend`, idle timeout)
tells the client so: the server's goodbye, or the socket's end, is waiting to be
read. An idle connection otherwise has nothing to read (the console neither
LISTENs nor relies on notices), so a zero-timeout poll of the socket answers the
same question without asking the server. Anything unexpected (not idle,
anything to read, a socket the poll refuses) counts as unusable, or falls back
to Django's `SELECT 1`: a false alarm costs one reconnect, never an error.
"""

import select

from django.db.backends.postgresql import base
from psycopg import pq

_UNUSABLE = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


class PreparedCursor(base.ServerBindingCursor):
    """Binds values on the server and prepares every statement it runs (Django
    turns psycopg's automatic preparing off): a statement is parsed and planned
    once per connection, then only executed."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        conn = self.connection
        if conn is None or conn.closed or conn.broken:
            return False
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            # Mid-transaction (tests, an atomic block): ask the server, as Django does.
            return super().is_usable()
        try:
            poller = select.poll()
            poller.register(conn.fileno(), _UNUSABLE)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def prepared_cursor(self):
        """A cursor whose statements PostgreSQL plans once per connection.

        Django's cursors bind values on the client (the SQL sent has them inlined),
        so the server parses and plans every statement again: about 0.7 ms for
        the ingest's receipt insert, more than running it. This cursor binds on
        the server and prepares each statement, so the hot path's fixed
        statements are planned once per connection. For statements whose bound values carry
        their types (or are cast in the SQL): the server, not psycopg, types them.
        """
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            return self._prepare_cursor(PreparedCursor(self.connection))
