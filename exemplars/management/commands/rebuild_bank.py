"""`manage.py rebuild_bank --application SLUG [--profile NAME] [--json]`

Checks each detector profile's bank and builds it if the approved set (or the
embedder) changed since; prints what it did. Exit 2 with one line for an
unknown application or profile.
"""

import json

from consoles.errors import NotFound
from consoles.management.base import DomainCommand
from consoles.models import Application
from exemplars import selectors
from exemplars.services import bank_rebuild


class Command(DomainCommand):
    help = "Build the exemplar bank of an application's detector profiles when their version changed."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, help="The application's slug.")
        parser.add_argument("--profile", help="Only this detector profile (default: every profile).")
        parser.add_argument("--json", action="store_true", help="One JSON object per profile.")

    def handle(self, *args, **options) -> None:
        application = Application.objects.filter(slug=options["application"]).first()
        if application is None:
            raise NotFound(f"Unknown application {options['application']!r}.")
        if options["profile"] is not None:  # "" is an unknown profile, not "every profile"
            profile = selectors.profile_get(application=application, name=options["profile"])
            if profile is None:
                raise NotFound(f"Unknown detector profile {options['profile']!r} for {application.slug}.")
            profiles = [profile]
        else:
            profiles = list(selectors.profile_list(application=application))
            for profile in profiles:
                profile.application = application
        if not profiles:
            self.stderr.write(f"{application.slug} has no detector profile: nothing to build.")
        for profile in profiles:
            state = bank_rebuild(profile=profile)
            index = state.index
            if options["json"]:
                self.stdout.write(json.dumps({
                    "application": application.slug, "profile": profile.name, "built": state.built,
                    "version": index.version, "exemplars": index.size, "flags": index.flag_count,
                    "seconds": round(state.seconds, 3), "stats": index.stats(),
                }))
                continue
            what = f"built in {state.seconds:.2f} s" if state.built else "unchanged"
            self.stdout.write(
                f"{application.slug}/{profile.name}: {what}, version {index.version[:12]}, "
                f"{index.size} exemplars from {index.flag_count} approved flags"
            )
