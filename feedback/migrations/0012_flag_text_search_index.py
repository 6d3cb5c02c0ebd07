"""The index behind the flags' free-text search (feedback.search): on SQLite an
external-content FTS5 table kept in step by triggers on the flag table, filled
from the flags already stored; on PostgreSQL a GIN index on the flag's text as
a `simple` tsvector, built CONCURRENTLY (so not in a transaction) so that a
deployment holding many flags keeps taking them while it builds. A build that
failed half-way leaves an invalid index, which a rerun replaces.
"""

from django.db import migrations

from feedback.search import PG_INDEX, create_pg_index_sql, drop_sqlite_index, ensure_sqlite_index


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        ensure_sqlite_index(using=connection.alias)
        return
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [PG_INDEX])
        found = cursor.fetchone()
        if found is not None and found[0]:
            return
        if found is not None:
            cursor.execute(f"DROP INDEX CONCURRENTLY {PG_INDEX}")
        cursor.execute(create_pg_index_sql(concurrently=True))


def backwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "sqlite":
        drop_sqlite_index(using=connection.alias)
    elif connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {PG_INDEX}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("feedback", "0011_history_append_only")]

    operations = [migrations.RunPython(forwards, backwards)]
