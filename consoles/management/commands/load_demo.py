"""Demo data for `make run`: idempotent (a second run changes nothing)."""

import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import transaction

from consoles.extensions import demo_loaders
from consoles.management.base import DomainCommand
from consoles.models import ApiToken, Application, Membership, Role, TokenKind
from consoles.origins import origins_clean
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
# The flag widget's publishable key on the sample chat page (/demo/chat/): public by
# design, for the origins `make run` serves from (more with --origin).
DEMO_PUBLISHABLE_APPLICATION = "acme-chat"
DEMO_PUBLISHABLE_KEY = "cc_pub_demo-acme-chat-widget-key"  # noqa: S105 - published demo key
DEMO_WIDGET_ORIGINS = ["http://127.0.0.1:8000", "http://localhost:8000"]


class Command(DomainCommand):
    help = "Load demo applications, users and data (idempotent). Refused in production unless --scratch."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--scratch", action="store_true",
            help="load it even with DEBUG=0: for a throwaway server (the reliability harness), never a deployment",
        )
        parser.add_argument(
            "--origin", action="append", default=[], dest="origins", metavar="ORIGIN",
            help="another origin the demo chat page is served from (make run passes http://HOST:PORT)",
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
            _demo_publishable_key(applications, options["origins"])
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
        self.stdout.write(f"  Publishable key for {DEMO_PUBLISHABLE_APPLICATION}: {DEMO_PUBLISHABLE_KEY} "
                          "(the sample chat page, /demo/chat/)")


def _demo_publishable_key(applications: list[Application], extra_origins: list[str]) -> None:
    """The widget key of the sample chat page, listing every origin asked for so far."""
    application = next(a for a in applications if a.slug == DEMO_PUBLISHABLE_APPLICATION)
    origins = origins_clean([*DEMO_WIDGET_ORIGINS, *extra_origins])
    token, created = ApiToken.objects.get_or_create(
        digest=token_digest(DEMO_PUBLISHABLE_KEY),
        defaults={
            "kind": TokenKind.PUBLISHABLE,
            "name": "demo chat widget",
            "application": application,
            "prefix": token_display_prefix(DEMO_PUBLISHABLE_KEY),
            "origins": origins,
        },
    )
    if not created and not set(origins) <= set(token.origins):
        ApiToken.objects.filter(pk=token.pk).update(origins=[*token.origins, *(o for o in origins if o not in token.origins)])
