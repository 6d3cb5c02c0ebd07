"""Settings for the test suites: the real settings, made cheap where only speed differs.

Production and `make run` never import this module (`consoles.settings` is theirs);
pytest selects it in pyproject.toml, and a test proves the real settings still hash
passwords with a strong hasher.
"""

from .settings import *  # noqa: F403

# Django's default PBKDF2 costs about 0.5 s a hash on this machine, and the suite
# gives a password to hundreds of users. MD5 is unsafe for real passwords and fine
# for throwaway test users; only the cost differs, not what a login checks.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Tasks are recorded, not run: a test runs a delivery itself (or the real
# database worker, in the one test that proves that path).
TASKS = {
    "default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"},
    "database": {"BACKEND": "django_tasks_db.DatabaseBackend"},
}
