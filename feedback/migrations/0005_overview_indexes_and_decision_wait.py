"""Indexes for the overview's per-day aggregates (on the UTC day itself, so the
rows arrive grouped), and each decision's wait since the flag arrived, copied
onto the review and filled in here for the decisions already made."""

import consoles.dbfunctions
from django.conf import settings
from django.db import migrations, models


BACKFILL = {
    "sqlite": """
        UPDATE feedback_flagreview SET wait_seconds = MAX(0, CAST(ROUND((julianday(created_at) - julianday(
            (SELECT f.created_at FROM feedback_flag f WHERE f.id = feedback_flagreview.flag_id))) * 86400000) / 1000
            AS INTEGER))
        WHERE to_status <> 'pending'
    """,
    "postgresql": """
        UPDATE feedback_flagreview r SET wait_seconds = GREATEST(0, FLOOR(EXTRACT(EPOCH FROM r.created_at - f.created_at)))
        FROM feedback_flag f WHERE f.id = r.flag_id AND r.to_status <> 'pending'
    """,
}


def backfill_wait(apps, schema_editor):
    sql = BACKFILL.get(schema_editor.connection.vendor)
    if sql:
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('consoles', '0001_initial'),
        ('feedback', '0004_flag_fb_flag_status_updated'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='flagreview',
            name='wait_seconds',
            field=models.PositiveBigIntegerField(blank=True, help_text="Seconds from the flag's arrival to this decision; empty for a re-opening.", null=True),
        ),
        migrations.AddIndex(
            model_name='flagevent',
            index=models.Index(models.F('application'), consoles.dbfunctions.UtcDay('created_at'), models.F('from_status'), models.F('to_status'), name='fb_event_app_day_transition'),
        ),
        migrations.AddIndex(
            model_name='flagreview',
            index=models.Index(models.F('application'), consoles.dbfunctions.UtcDay('created_at'), models.F('reviewer'), models.F('to_status'), name='fb_review_app_day_reviewer'),
        ),
        migrations.AddIndex(
            model_name='flagreview',
            index=models.Index(models.F('application'), consoles.dbfunctions.UtcDay('created_at'), models.F('wait_seconds'), condition=models.Q(('wait_seconds__isnull', False)), name='fb_review_app_day_wait'),
        ),
        migrations.AddIndex(
            model_name='flagreview',
            index=models.Index(fields=['application', 'to_status', 'created_at', 'axis', 'verdict'], name='fb_review_app_approved'),
        ),
        migrations.RunPython(backfill_wait, migrations.RunPython.noop),
    ]
