"""Gold-label revisions are append-only: the database itself refuses an UPDATE,
on SQLite and PostgreSQL, whatever code (or raw SQL) tries it. Deleting is left
to the case's cascade (a tenant being removed), never to a single revision."""

from django.db import migrations

SQLITE_UP = """
CREATE TRIGGER adjudication_goldlabelrevision_no_update
BEFORE UPDATE ON adjudication_goldlabelrevision
BEGIN
    SELECT RAISE(ABORT, 'gold label revisions are append-only');
END;
"""
SQLITE_DOWN = "DROP TRIGGER IF EXISTS adjudication_goldlabelrevision_no_update;"

POSTGRES_UP = """
CREATE OR REPLACE FUNCTION adjudication_goldlabelrevision_refuse_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'gold label revisions are append-only' USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER adjudication_goldlabelrevision_no_update
BEFORE UPDATE ON adjudication_goldlabelrevision
FOR EACH ROW EXECUTE FUNCTION adjudication_goldlabelrevision_refuse_update();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS adjudication_goldlabelrevision_no_update ON adjudication_goldlabelrevision;
DROP FUNCTION IF EXISTS adjudication_goldlabelrevision_refuse_update();
"""


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute(SQLITE_UP)
    elif vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        schema_editor.execute(SQLITE_DOWN)
    elif vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN)


class Migration(migrations.Migration):
    dependencies = [("adjudication", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards)]
