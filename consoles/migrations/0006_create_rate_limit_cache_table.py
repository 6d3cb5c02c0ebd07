"""The rate-limit cache's table (consoles.ratelimit), made by `migrate` itself.

The publishable keys' limits count in Django's database cache so that every
gunicorn worker and every app server on one database shares the counts. Its table
is Django's own (`createcachetable`), not a model; creating it here means
`migrate` is the one setup step, as before, for `make run`, the tests and a
deployment. `createcachetable` skips a table that exists, so running it again
(or by hand) is harmless.
"""

from django.core.management import call_command
from django.db import migrations


def create_cache_tables(apps, schema_editor) -> None:
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("consoles", "0005_apitoken_publishable_keys_with_origins")]

    operations = [migrations.RunPython(create_cache_tables, migrations.RunPython.noop, elidable=False)]
