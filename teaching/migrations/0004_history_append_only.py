"""History of teaching is append-only in the database: no UPDATE (but the columns a deleted
token or user sets to NULL), no DELETE but by retention and erasure (consoles.appendonly)."""

from django.db import migrations

from consoles.appendonly import protect, unprotect

# table -> (columns ON DELETE SET NULL may still clear, whether UPDATE is refused here)
TABLES = {
    # UPDATE: 0002_append_only_triggers
    "teaching_corpusentry": ((), False),
    "teaching_proposaldecision": ((), False),
    "teaching_corpussupersession": ((), False),
    "teaching_proposalevent": ((), False),
}


def forwards(apps, schema_editor):
    for table, (settable, update) in TABLES.items():
        protect(schema_editor, table, settable=settable, update=update)


def backwards(apps, schema_editor):
    for table in TABLES:
        unprotect(schema_editor, table)


class Migration(migrations.Migration):
    dependencies = [("teaching", "0003_corpus_entry_number_per_application"), ("consoles", "0003_history_append_only_guard")]

    operations = [migrations.RunPython(forwards, backwards)]
