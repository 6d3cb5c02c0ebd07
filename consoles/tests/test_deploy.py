"""Production settings must pass `check --deploy` with no warnings at all."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    # Without DJANGO_SETTINGS_MODULE (pytest sets the test settings), manage.py reads
    # the real settings, as a deployment does.
    dropped = {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE"}
    full_env = {k: v for k, v in os.environ.items() if k not in dropped}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_in_production_settings():
    result = _manage(
        "check", "--deploy", "--fail-level", "WARNING",
        DEBUG="0", SECRET_KEY="k" * 20 + "-Zq9#pL2@vX7!mN4$bR8%tY1^wE6&uI3*oP5(aS0)dF", ALLOWED_HOSTS="console.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key():
    result = _manage("check", DEBUG="0", SECRET_KEY="")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_real_settings_hash_passwords_with_a_strong_hasher():
    """The suite's fast hasher lives in the test settings only."""
    from django.conf import global_settings

    import consoles.settings as real

    hashers = getattr(real, "PASSWORD_HASHERS", global_settings.PASSWORD_HASHERS)
    assert hashers[0] in {
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",
        "django.contrib.auth.hashers.Argon2PasswordHasher",
        "django.contrib.auth.hashers.ScryptPasswordHasher",
    }
    assert all("MD5" not in h and "Unsalted" not in h for h in hashers)
