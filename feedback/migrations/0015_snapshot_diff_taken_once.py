"""A snapshot's difference from the previous one of its format is taken once, when
it is recorded (`previous`, `diff`), rather than on every view of the list; the
snapshots recorded before get theirs here, in the order the list compared them."""

import django.db.models.deletion
from django.db import migrations, models


def take_the_diffs(apps, schema_editor):
    from feedback.exports import entries_diff

    DatasetSnapshot = apps.get_model("feedback", "DatasetSnapshot")
    order = list(DatasetSnapshot.objects.order_by("application_id", "export_format", "created_at", "id")
                 .values_list("pk", "application_id", "export_format"))
    last = {}  # (application, format) -> (pk, entries): two snapshots' entries in memory at most
    for pk, application_id, export_format in order:
        entries = DatasetSnapshot.objects.filter(pk=pk).values_list("entries", flat=True).get()
        key = (application_id, export_format)
        if key in last:
            previous_pk, previous_entries = last[key]
            diff = entries_diff(previous_entries, entries)
            DatasetSnapshot.objects.filter(pk=pk).update(
                previous_id=previous_pk,
                diff={"added": diff.added, "removed": diff.removed, "changed": diff.changed},
            )
        last[key] = (pk, entries)

class Migration(migrations.Migration):

    dependencies = [
        ("feedback", "0014_export_format_and_dataset_snapshot"),
    ]

    operations = [
        migrations.AddField(
            model_name="datasetsnapshot",
            name="diff",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="datasetsnapshot",
            name="previous",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="+", to="feedback.datasetsnapshot"),
        ),
        migrations.RunPython(take_the_diffs, migrations.RunPython.noop, elidable=True),
    ]
