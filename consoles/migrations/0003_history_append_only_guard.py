"""The shared half of append-only history (consoles.appendonly): PostgreSQL's trigger
function and SQLite's transaction-scoped delete grant. Each app's migration then
protects its own history tables."""

from django.db import migrations

from consoles.appendonly import install_guard, remove_guard


def forwards(apps, schema_editor):
    install_guard(schema_editor)


def backwards(apps, schema_editor):
    remove_guard(schema_editor)


class Migration(migrations.Migration):
    dependencies = [("consoles", "0002_remove_application_exemplar_bank_enabled")]

    operations = [migrations.RunPython(forwards, backwards)]
