"""`manage.py sum_history [--application SLUG] [--days 30] [--json]` (for cron, after midnight UTC)

Sums and stores the ended days of the flag history the overview reads
(feedback.history), so the first view of the day reads them back instead of
summing them. Safe to run repeatedly: stored days are left as they are.
Exit 2 with one line for an unknown application or a bad --days.
"""

import json

from consoles.errors import InvalidInput, NotFound
from consoles.management.base import DomainCommand
from consoles.models import Application
from consoles.text import count
from feedback.history import history_days_sum

MAX_DAYS = 366


class Command(DomainCommand):
    help = "Sum and store the ended days of the flag history the overview reads (default: the last 30)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", help="Only this application's slug (default: every application).")
        parser.add_argument("--days", type=int, default=30, help=f"How many days back, 1 to {MAX_DAYS} (default 30).")
        parser.add_argument("--json", action="store_true", help="One JSON object per application.")

    def handle(self, *args, **options) -> None:
        days = options["days"]
        if not 1 <= days <= MAX_DAYS:
            raise InvalidInput(f"--days must be between 1 and {MAX_DAYS}, not {days}.", fields={"days": "out of range"})
        applications = Application.objects.order_by("slug")
        if options["application"] is not None:  # "" is an unknown application, not "every application"
            applications = applications.filter(slug=options["application"])
            if not applications.exists():
                raise NotFound(f"Unknown application {options['application']!r}.")
        for application in applications:
            summed, stored = history_days_sum(application=application, days=days)
            if options["json"]:
                self.stdout.write(json.dumps({"application": application.slug, "summed": summed, "stored": stored}))
            else:
                self.stdout.write(f"{application.slug}: {count(summed, 'day')} summed, {stored} already stored")
