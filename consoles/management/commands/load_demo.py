"""Demo data for `make run`: idempotent (a second run changes nothing)."""

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from consoles.extensions import demo_loaders
from consoles.management.base import DomainCommand
from consoles.models import ApiToken, Application, Membership, Role, TokenKind
from consoles.tokens import token_digest, token_display_prefix

DEMO_PASSWORD = "demo-pass-2026"  # noqa: S105 - published demo login
DEMO_USERS = [
    # username, role in every demo application, staff/superuser
    ("admin", Role.ADMIN, True),
    ("curator", Role.CURATOR, False),
    ("curator2", Role.CURATOR, False),
    ("viewer", Role.VIEWER, False),
]
DEMO_APPLICATIONS = [
    ("acme-chat", "Acme support assistant"),
    ("globex-verifier", "Globex agent verifier"),
]
# The two demo applications run different detectors: the verifier has no
# self-harm detector but one for unsafe agent actions, and captures nothing.
DEMO_SETTINGS = {
    "globex-verifier": {
        "axes": ["hallucination", "prompt_injection", "jailbreak", "privacy_leak", "toxicity", "unsafe_action"],
        "problems": [
            {"key": "jailbreak_attempt", "label": "Tried to get around the rules", "axis": "jailbreak"},
            {"key": "hidden_instructions", "label": "Followed hidden instructions", "axis": "prompt_injection"},
            {"key": "fabricated", "label": "Made something up", "axis": "hallucination"},
            {"key": "offensive", "label": "Rude or offensive", "axis": "toxicity"},
            {"key": "personal_data", "label": "Revealed personal data", "axis": "privacy_leak"},
            {"key": "dangerous_advice", "label": "Took or advised an unsafe action", "axis": "unsafe_action"},
        ],
    },
}
# A fixed, published token so the README's curl examples work against the demo.
# It exists only in demo data (load_demo), never in a real deployment.
DEMO_TOKEN_SECRETS = {
    "acme-chat": "cc_app_demo-acme-chat-integration-token",
    "globex-verifier": "cc_app_demo-globex-verifier-integration-token",
}


class Command(DomainCommand):
    help = "Load demo applications, users and data (idempotent). Refused in production unless --scratch."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--scratch", action="store_true",
            help="load it even with DEBUG=0: for a throwaway server (the reliability harness), never a deployment",
        )

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION and not options["scratch"]:
            # The demo publishes its logins and tokens (README, this command's output):
            # on a deployment they would be an open door.
            raise CommandError(
                f"refusing to load the demo in production (DEBUG=0): it creates the published login "
                f"admin / {DEMO_PASSWORD} and published API tokens; pass --scratch only on a throwaway server",
                returncode=2,
            )
        User = get_user_model()
        with transaction.atomic():
            users = {}
            for username, _, is_admin in DEMO_USERS:
                user, created = User.objects.get_or_create(
                    username=username,
                    defaults={"is_staff": is_admin, "is_superuser": is_admin, "email": f"{username}@example.com"},
                )
                if created:
                    user.set_password(DEMO_PASSWORD)
                    user.save(update_fields=["password"])
                users[username] = user
            applications = []
            for slug, name in DEMO_APPLICATIONS:
                application, _ = Application.objects.get_or_create(
                    slug=slug, defaults={"name": name, **DEMO_SETTINGS.get(slug, {})}
                )
                if slug == "acme-chat" and not application.capture_enabled:
                    Application.objects.filter(pk=application.pk).update(
                        capture_enabled=True, capture_on_low_confidence=True, capture_on_refusal=True
                    )
                    application.refresh_from_db()
                applications.append(application)
                for username, role, _ in DEMO_USERS:
                    Membership.objects.get_or_create(
                        user=users[username], application=application, defaults={"role": role}
                    )
                secret = DEMO_TOKEN_SECRETS[slug]
                ApiToken.objects.get_or_create(
                    digest=token_digest(secret),
                    defaults={
                        "kind": TokenKind.APPLICATION,
                        "name": "demo integration",
                        "application": application,
                        "prefix": token_display_prefix(secret),
                    },
                )
            for loader in demo_loaders():
                for application in applications:
                    loader(application=application, users=users)

        # `make run` serves on HOST:PORT (the Makefile's defaults are 127.0.0.1:8000).
        host, port = os.environ.get("HOST") or "127.0.0.1", os.environ.get("PORT") or "8000"
        self.stdout.write(f"Demo data ready. Log in at http://{host}:{port}/login/ with:")
        for username, role, is_admin in DEMO_USERS:
            extra = " (also Django admin at /admin/)" if is_admin else ""
            self.stdout.write(f"  {username:<9} / {DEMO_PASSWORD}   {role}{extra}")
        for slug, secret in DEMO_TOKEN_SECRETS.items():
            self.stdout.write(f"  API token for {slug}: {secret}")
