"""`manage.py purge_expired`: apply every application's retention period (for cron)."""

import json

from consoles.management.base import DomainCommand
from consoles.text import count
from feedback.services import flags_purge_expired

from ..exports_cli import operator_name


class Command(DomainCommand):
    help = (
        "Delete flags (with their events, reviews and exemplar-bank entries) older than their "
        "application's retention_days; applications without one keep everything. Safe to run repeatedly."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--json", action="store_true", help="Print the counts as JSON.")

    def handle(self, *args, **options) -> None:
        reports = flags_purge_expired(requested_by=f"purge_expired by {operator_name()}")
        rows = []
        for report in reports:
            record = report.record
            rows.append(
                {
                    "application_id": report.application.slug,
                    "cutoff": report.cutoff.isoformat(),
                    "flags_deleted": report.flags_deleted,
                    "events_deleted": record.events_deleted if record else 0,
                    "reviews_deleted": record.reviews_deleted if record else 0,
                    "bank_entries_removed": record.bank_entries_removed if record else 0,
                    "stale_exports": record.stale_exports if record else [],
                }
            )
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2, sort_keys=True))
            return
        if not rows:
            self.stdout.write("No application has a retention period; nothing to purge.")
        for row in rows:
            self.stdout.write(
                f"{row['application_id']}: deleted {count(row['flags_deleted'], 'flag')} created before "
                f"{row['cutoff']} ({count(row['events_deleted'], 'event')}, {count(row['reviews_deleted'], 'review')}, "
                f"{count(row['bank_entries_removed'], 'exemplar-bank entry', 'exemplar-bank entries')})."
            )
            for path in row["stale_exports"]:
                self.stdout.write(f"  stale export (regenerate it): {path}")
