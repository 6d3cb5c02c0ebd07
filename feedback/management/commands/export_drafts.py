"""`manage.py export_drafts --application SLUG --out DIR`: seed 003's three YAML draft files."""

import json

from django.core.management.base import CommandError
from django.db import DatabaseError

from consoles.management.base import DomainCommand, one_line_error, path_argument
from consoles.selectors import application_get
from consoles.text import count
from feedback.services import drafts_export, export_manifest_document

from ..exports_cli import operator_name


class Command(DomainCommand):
    help = (
        "Write judge-probe drafts, confidence-fit cases and eval-case drafts (YAML) under DIR "
        "from approved flags and labelled captures. Never overwrites a file that is not a draft."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, metavar="SLUG")
        parser.add_argument("--out", required=True, metavar="DIR", type=path_argument)
        parser.add_argument("--json", action="store_true", help="Print the manifest as JSON.")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        try:
            manifest = drafts_export(
                application=application,
                out_dir=options["out"],
                requested_by_label=f"export_drafts by {operator_name()}",
            )
        except (DatabaseError, OSError) as exc:
            raise CommandError(f"Draft export failed: {one_line_error(exc)}") from exc
        document = export_manifest_document(manifest)
        if options["json"]:
            self.stdout.write(json.dumps(document, indent=2, sort_keys=True))
            return
        files = ", ".join(manifest.filters.get("files", []))
        self.stdout.write(f"Wrote {count(manifest.row_count, 'reviewed item')} as drafts under {manifest.path}: {files}.")
        contradicted = manifest.filters.get("contradicted_items", 0)
        if contradicted:
            self.stderr.write(
                f"{count(contradicted, 'approved flag')} contradict another review (same axis, region and text, "
                "the opposite verdict); each names the others in provenance.contradicted_by: resolve them before merging."
            )
