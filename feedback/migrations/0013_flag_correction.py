"""A curator's correction (issue 34) on the flag and on each review.

SQLite adds a NOT NULL column by rebuilding the table, which drops the review
table's append-only triggers (0011): they are dropped before and put back
after, on every database, so the history stays guarded whatever the backend.
The database default ("") keeps inserts that name no correction valid.
"""

from django.db import migrations, models

from consoles.appendonly import protect, unprotect


def guard_off(apps, schema_editor):
    unprotect(schema_editor, "feedback_flagreview")


def guard_on(apps, schema_editor):
    protect(schema_editor, "feedback_flagreview")


class Migration(migrations.Migration):

    dependencies = [
        ('feedback', '0012_flag_text_search_index'),
    ]

    operations = [
        migrations.RunPython(guard_off, guard_on),
        migrations.AddField(
            model_name='flag',
            name='correction',
            field=models.TextField(blank=True, db_default=''),
        ),
        migrations.AddField(
            model_name='flagreview',
            name='correction',
            field=models.TextField(blank=True, db_default='',
                                   help_text='The answer the assistant should have given (approve).'),
        ),
        migrations.RunPython(guard_on, guard_off),
    ]
