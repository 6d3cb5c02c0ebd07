"""Append-only history, enforced by the database (triggers installed by migrations).

History rows (flag events and reviews, adjudication events, case labels and gold
revisions, sampling plan events, teaching proposal events, decisions and corpus
entries) are never updated, and deleted only by the retention and erasure services,
whatever writes: the ORM, a cascade, or raw SQL in a shell.

The services say so for their own transaction only, with `history_delete_allowed()`:

- PostgreSQL: `set_config('console.history_delete', 'on', true)`, transaction-local
  (like SET LOCAL), read by the trigger function `console_history_guard()`;
- SQLite (no session variables): a row in `consoles_history_delete_grant`, written
  and removed inside the service's own transaction. SQLite has one writer at a time
  and no other connection sees an uncommitted row, so the grant is the transaction's.

Columns a deleted token or user sets to NULL (`actor_token_id`, ...) stay updatable,
so that ON DELETE SET NULL keeps working; nothing else does.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.db import connection

GRANT_TABLE = "consoles_history_delete_grant"
SETTING = "console.history_delete"
UPDATE_MESSAGE = "history is append-only: its rows are never updated"
DELETE_MESSAGE = "history is append-only: its rows are deleted only by retention or erasure"


@contextmanager
def history_delete_allowed() -> Iterator[None]:
    """Let this transaction delete history rows (retention purges and erasure only)."""
    if not connection.in_atomic_block:
        raise RuntimeError("history_delete_allowed() needs the service's own transaction (transaction.atomic)")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT set_config(%s, 'on', true)", [SETTING])
        else:
            cursor.execute(f"INSERT INTO {GRANT_TABLE} DEFAULT VALUES")  # noqa: S608 - a constant
            grant = cursor.lastrowid
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT set_config(%s, 'off', true)", [SETTING])
            else:
                cursor.execute(f"DELETE FROM {GRANT_TABLE} WHERE id = %s", [grant])  # noqa: S608 - a constant


# --- installed by migrations ---------------------------------------------------------


def install_guard(schema_editor) -> None:
    """The shared pieces: the PostgreSQL trigger function, the SQLite grant table."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "CREATE OR REPLACE FUNCTION console_history_guard() RETURNS trigger AS $$ BEGIN "
            f"IF TG_OP = 'DELETE' THEN IF current_setting('{SETTING}', true) = 'on' THEN RETURN OLD; END IF; "
            f"RAISE EXCEPTION '{DELETE_MESSAGE} (%)', TG_TABLE_NAME USING ERRCODE = '23000'; END IF; "
            f"RAISE EXCEPTION '{UPDATE_MESSAGE} (%)', TG_TABLE_NAME USING ERRCODE = '23000'; "
            "END; $$ LANGUAGE plpgsql",
            None,  # no parameters: the % above are PL/pgSQL's
        )
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f"CREATE TABLE IF NOT EXISTS {GRANT_TABLE} (id integer PRIMARY KEY AUTOINCREMENT)")


def remove_guard(schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS console_history_guard()")
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(f"DROP TABLE IF EXISTS {GRANT_TABLE}")


def protect(schema_editor, table: str, *, settable: Sequence[str] = (), update: bool = True) -> None:
    """Refuse UPDATE (except of `settable` columns) and DELETE (except under a grant) on `table`.

    `update=False` for tables whose UPDATE an earlier migration already refuses."""
    vendor = schema_editor.connection.vendor
    statements = []
    if update:
        of = ""
        if settable:
            with schema_editor.connection.cursor() as cursor:
                columns = [c.name for c in schema_editor.connection.introspection.get_table_description(cursor, table)]
            of = " OF " + ", ".join(c for c in columns if c not in settable)
        if vendor == "postgresql":
            statements.append(f"CREATE TRIGGER {table}_history_no_update BEFORE UPDATE{of} ON {table} "
                              "FOR EACH ROW EXECUTE FUNCTION console_history_guard()")
        else:
            statements.append(f"CREATE TRIGGER {table}_history_no_update BEFORE UPDATE{of} ON {table} "
                              f"BEGIN SELECT RAISE(ABORT, '{UPDATE_MESSAGE}'); END")
    if vendor == "postgresql":
        statements.append(f"CREATE TRIGGER {table}_history_no_delete BEFORE DELETE ON {table} "
                          "FOR EACH ROW EXECUTE FUNCTION console_history_guard()")
    else:
        statements.append(f"CREATE TRIGGER {table}_history_no_delete BEFORE DELETE ON {table} "  # noqa: S608
                          f"WHEN NOT EXISTS (SELECT 1 FROM {GRANT_TABLE}) "
                          f"BEGIN SELECT RAISE(ABORT, '{DELETE_MESSAGE}'); END")
    for sql in statements:
        schema_editor.execute(sql, None)


def unprotect(schema_editor, table: str) -> None:
    on = f" ON {table}" if schema_editor.connection.vendor == "postgresql" else ""
    for kind in ("update", "delete"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_history_no_{kind}{on}")
