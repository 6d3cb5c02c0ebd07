"""Settings for the ingest benchmark: the console's own settings plus one bare
JSON endpoint (the reference), served by the same gunicorn and middleware."""

from consoles.settings import *  # noqa: F403

ROOT_URLCONF = "bench.flags_urls"
