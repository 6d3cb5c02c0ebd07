"""Corpus entries are numbered per application (1, 2, ... in the order they were
appended), so a tenant's corpus reads #1-#5 rather than the global ids #1-4, 9.

Existing rows are numbered in id order. The corpus is append-only by trigger
(0002): the backfill lifts the trigger for its own UPDATE and puts it back, in
the migration's transaction on PostgreSQL. On SQLite, making the column NOT NULL
rebuilds the table, which drops its triggers: the trigger is created again after.
"""

from django.db import migrations, models

TABLE = "teaching_corpusentry"
TRIGGER = f"{TABLE}_append_only"
MESSAGE = "teaching history is append-only: rows of this table are never updated"


def _drop_trigger(schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {TABLE}")
    elif vendor == "sqlite":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}")


def _create_trigger(schema_editor) -> None:
    vendor = schema_editor.connection.vendor
    _drop_trigger(schema_editor)
    if vendor == "postgresql":
        schema_editor.execute(f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON {TABLE} "
                              "FOR EACH ROW EXECUTE FUNCTION teaching_refuse_rewrite()")
    elif vendor == "sqlite":
        schema_editor.execute(f"CREATE TRIGGER {TRIGGER} BEFORE UPDATE ON {TABLE} "
                              f"BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END")


def number_existing(apps, schema_editor):
    CorpusEntry = apps.get_model("teaching", "CorpusEntry")
    _drop_trigger(schema_editor)
    counters: dict[int, int] = {}
    for pk, application_id in CorpusEntry.objects.order_by("application_id", "id").values_list("pk", "application_id"):
        counters[application_id] = counters.get(application_id, 0) + 1
        CorpusEntry.objects.filter(pk=pk).update(number=counters[application_id])


def restore_trigger(apps, schema_editor):
    _create_trigger(schema_editor)


def lift_trigger(apps, schema_editor):
    _drop_trigger(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("teaching", "0002_append_only_triggers")]

    operations = [
        migrations.AddField(model_name="corpusentry", name="number", field=models.PositiveIntegerField(null=True)),
        migrations.RunPython(number_existing, restore_trigger),
        migrations.AlterField(model_name="corpusentry", name="number", field=models.PositiveIntegerField()),
        migrations.AddConstraint(
            model_name="corpusentry",
            constraint=models.UniqueConstraint(
                fields=("application", "number"), name="teaching_corpusentry_one_number_per_application",
                violation_error_code="duplicate_number",
            ),
        ),
        migrations.AddConstraint(
            model_name="corpusentry",
            constraint=models.CheckConstraint(
                condition=models.Q(number__gte=1), name="teaching_corpusentry_number_positive",
                violation_error_code="number_positive",
            ),
        ),
        migrations.RunPython(restore_trigger, lift_trigger),
    ]
