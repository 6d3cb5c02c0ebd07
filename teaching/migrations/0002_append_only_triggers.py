"""Append-only history, enforced by the database: corpus entries, decisions,
supersessions and events are never updated, whoever writes (a raw UPDATE too).

Deletes are left to PROTECT foreign keys and to the services (which never delete),
because test databases are flushed with DELETE on SQLite. The event trigger leaves
actor_token_id out, so deleting a token can still SET NULL its reference.
"""

from django.db import migrations

PROTECTED = {
    "teaching_corpusentry": None,
    "teaching_proposaldecision": None,
    "teaching_corpussupersession": None,
    "teaching_proposalevent": [
        "application_id", "proposal_id", "kind", "from_state", "to_state", "note",
        "actor_kind", "actor_user_id", "created_at",
    ],
}
MESSAGE = "teaching history is append-only: rows of this table are never updated"


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(
            "CREATE OR REPLACE FUNCTION teaching_refuse_rewrite() RETURNS trigger AS $$ BEGIN "
            f"RAISE EXCEPTION '{MESSAGE} (%)', TG_TABLE_NAME USING ERRCODE = '23000'; "
            "END; $$ LANGUAGE plpgsql",
            None,  # no parameters: the % above is PL/pgSQL's, not a placeholder
        )
    for table, columns in PROTECTED.items():
        of = f" OF {', '.join(columns)}" if columns else ""
        name = f"{table}_append_only"
        if vendor == "postgresql":
            schema_editor.execute(
                f"CREATE TRIGGER {name} BEFORE UPDATE{of} ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION teaching_refuse_rewrite()"
            )
        elif vendor == "sqlite":
            schema_editor.execute(
                f"CREATE TRIGGER {name} BEFORE UPDATE{of} ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"
            )


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in PROTECTED:
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
        elif vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_append_only")
    if vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS teaching_refuse_rewrite()")


class Migration(migrations.Migration):
    dependencies = [("teaching", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
