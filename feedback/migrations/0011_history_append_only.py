"""History of feedback is append-only in the database: no UPDATE (but the columns a deleted
token or user sets to NULL), no DELETE but by retention and erasure (consoles.appendonly)."""

from django.db import migrations

from consoles.appendonly import protect, unprotect

# table -> (columns ON DELETE SET NULL may still clear, whether UPDATE is refused here)
TABLES = {
    "feedback_flagevent": (("actor_token_id",), True),
    "feedback_flagreview": ((), True),
}


def forwards(apps, schema_editor):
    for table, (settable, update) in TABLES.items():
        protect(schema_editor, table, settable=settable, update=update)


def backwards(apps, schema_editor):
    for table in TABLES:
        unprotect(schema_editor, table)


class Migration(migrations.Migration):
    dependencies = [("feedback", "0010_drop_region_indexes_covered_by_composites"), ("consoles", "0003_history_append_only_guard")]

    operations = [migrations.RunPython(forwards, backwards)]
