"""On PostgreSQL a trigram index serves the cases screen's search (a substring
of the case id, the claim's subject or its text, case-insensitive: ILIKE).

Without it a term few cases hold reads every case of the table (about 120 ms at
200,000 cases); with it the planner, which estimates the term from the columns'
statistics, reads the few cases that hold it. A common term still walks the
newest cases by the created index and stops at one page.

pg_trgm ships with PostgreSQL and is a trusted extension: the database's owner
may create it. Where it cannot be created (a server without it, or a role that
may not) the index is left out with a warning, and the search still works, by
reading the table. SQLite has no such index and reads the table.

The index is built CONCURRENTLY (so not in the migration's transaction): on a
deployment that already holds many cases, imports go on while it builds. A
build that failed half-way leaves an invalid index, which a rerun replaces.
"""

import sys

from django.db import DatabaseError, migrations, transaction

INDEX = "adj_case_search_trgm"
CREATE = (
    f"CREATE INDEX CONCURRENTLY {INDEX} ON adjudication_case "
    "USING gin (case_id gin_trgm_ops, claim_subject gin_trgm_ops, claim_text gin_trgm_ops)"
)


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            try:
                with transaction.atomic(using=connection.alias):  # its own: a refusal spoils nothing
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            except DatabaseError as exc:
                sys.stderr.write(
                    f"adjudication: no trigram index for the case search (pg_trgm: {str(exc).strip()}); "
                    "the search reads the table instead.\n"
                )
                return
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [INDEX])
        found = cursor.fetchone()
        if found is not None and found[0]:
            return
        if found is not None:
            cursor.execute(f"DROP INDEX CONCURRENTLY {INDEX}")
        cursor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("adjudication", "0003_event_actor_kept")]

    operations = [migrations.RunPython(forwards, backwards)]
