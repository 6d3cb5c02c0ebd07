"""created_at is written by the services (`at=` when given: the demo data's
history is decided in the past) instead of auto_now_add, so no process-wide
clock patch is needed. State only: a Python default is not in the schema, and on
SQLite altering the field would rebuild the tables (and drop their triggers)."""

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sampling', '0002_enqueue_outcome_labelled'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='planevent',
                    name='created_at',
                    field=models.DateTimeField(default=django.utils.timezone.now, editable=False),
                ),
                migrations.AlterField(
                    model_name='samplingplan',
                    name='created_at',
                    field=models.DateTimeField(default=django.utils.timezone.now, editable=False),
                ),
            ],
        ),
    ]
