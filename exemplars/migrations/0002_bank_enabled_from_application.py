"""Carry `Application.exemplar_bank_enabled` (never read by any code, now
removed from consoles) over to the bank's own settings before the column goes."""

from django.db import migrations


def copy_enabled(apps, schema_editor):
    Application = apps.get_model("consoles", "Application")
    BankSettings = apps.get_model("exemplars", "BankSettings")
    for application_id in Application.objects.filter(exemplar_bank_enabled=True).values_list("pk", flat=True):
        BankSettings.objects.update_or_create(application_id=application_id, defaults={"enabled": True})


class Migration(migrations.Migration):

    dependencies = [
        ("consoles", "0001_initial"),
        ("exemplars", "0001_initial"),
    ]
    run_before = [
        ("consoles", "0002_remove_application_exemplar_bank_enabled"),
    ]

    operations = [
        migrations.RunPython(copy_enabled, migrations.RunPython.noop),
    ]
