"""`manage.py erase_subject --application SLUG (--session-id X | --end-user-ref Y)`."""

import json

from consoles.errors import InvalidInput
from consoles.management.base import DomainCommand
from consoles.selectors import application_get
from consoles.text import count
from feedback.services import subject_erase

from ..exports_cli import operator_name


class Command(DomainCommand):
    help = (
        "Erase every flag (with its events and reviews) of one session or end user, remove them "
        "from derived stores, mark the exports that held them stale and list those files. "
        "The erasure is recorded (who, when, how many) without the erased content."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, metavar="SLUG")
        subject = parser.add_mutually_exclusive_group(required=True)
        subject.add_argument("--session-id", metavar="X")
        subject.add_argument("--end-user-ref", metavar="Y")
        parser.add_argument(
            "--requested-by",
            help="Who asked for it (ticket or person); defaults to the operator's login.",
        )
        parser.add_argument("--json", action="store_true", help="Print the erasure record as JSON.")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        for kind in ("session_id", "end_user_ref"):
            # The service reads "" as "not given"; given on the command line, it is a blank subject.
            if options[kind] == "":
                raise InvalidInput(f"{kind}: must not be blank.", fields={kind: "must not be blank"})
        requested_by = options["requested_by"]
        record = subject_erase(
            application=application,
            session_id=options["session_id"] or "",
            end_user_ref=options["end_user_ref"] or "",
            # An explicit --requested-by "" is refused like "  ", not replaced by the login.
            requested_by=operator_name() if requested_by is None else requested_by,
        )
        summary = {
            "erasure_id": record.pk,
            "application_id": application.slug,
            "kind": record.kind,
            "requested_by": record.requested_by,
            "performed_at": record.performed_at.isoformat(),
            "flags_deleted": record.flags_deleted,
            "events_deleted": record.events_deleted,
            "reviews_deleted": record.reviews_deleted,
            "bank_entries_removed": record.bank_entries_removed,
            "stale_exports": record.stale_exports,
        }
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"Erased {count(record.flags_deleted, 'flag')} ({count(record.events_deleted, 'event')}, "
            f"{count(record.reviews_deleted, 'review')}, "
            f"{count(record.bank_entries_removed, 'exemplar-bank entry', 'exemplar-bank entries')}) "
            f"of that {record.kind.replace('_', ' ')} in {application.slug}; erasure #{record.pk}."
        )
        if record.stale_exports:
            self.stdout.write("These exports held the erased flags and are now stale; regenerate them:")
            for path in record.stale_exports:
                self.stdout.write(f"  {path}")
        else:
            self.stdout.write("No export held them.")
