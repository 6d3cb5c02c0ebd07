"""`manage.py export_flags --application SLUG --out PATH`: the JSONL training corpus, for schedulers."""

import json
import sys
from pathlib import Path

from django.core.management.base import CommandError
from django.db import DatabaseError

from consoles.errors import InvalidInput
from consoles.files import check_export_target, manifest_path
from consoles.management.base import DomainCommand, one_line_error, path_argument
from consoles.selectors import application_get
from consoles.text import count
from feedback.services import (
    export_format_check,
    export_manifest_document,
    flags_export_file,
    snapshot_name_check,
)

from ..exports_cli import add_filter_arguments, filters_from_options, operator_name


class Command(DomainCommand):
    help = (
        "Export flags (approved ones by default) as JSONL to PATH, atomically, with a manifest "
        "next to it. Exit status: 0 done, 2 bad input (unknown application, unwritable path, "
        "bad filter), 1 the export failed midway (nothing was written)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, metavar="SLUG")
        parser.add_argument("--out", required=True, metavar="PATH", type=path_argument)
        add_filter_arguments(parser)
        parser.add_argument(
            "--since-last",
            action="store_true",
            help="Only flags changed since the previous export with the same filters.",
        )
        parser.add_argument(
            "--format",
            default="classifier",
            metavar="FORMAT",
            help='The lines\' shape: "classifier" (default, the detector corpus), "sft" (chat examples from '
            'corrections) or "preference" (chosen/rejected pairs).',
        )
        parser.add_argument(
            "--snapshot",
            default="",
            metavar="NAME",
            help="Also record the file as the named, immutable dataset snapshot NAME (unique per application).",
        )
        parser.add_argument("--json", action="store_true", help="Print the manifest as JSON.")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        try:
            export_format = export_format_check(options["format"])
        except InvalidInput as exc:
            raise CommandError(f"Invalid --format: {exc.message}", returncode=2) from exc
        if options["snapshot"]:
            try:
                snapshot_name_check(application=application, name=options["snapshot"])
            except InvalidInput as exc:
                raise CommandError(f"Invalid --snapshot: {exc.message}", returncode=2) from exc
        check_export_target(options["out"])
        try:
            filters = filters_from_options(options)
            filters.validate(application)
        except InvalidInput as exc:
            problems = "; ".join(f"--{name.replace('_', '-')}: {why}" for name, why in exc.fields.items())
            raise CommandError(f"Invalid filter: {problems}", returncode=2) from exc
        progress = None
        if self.show_progress(options):
            from tqdm import tqdm

            progress = tqdm(unit=" rows", desc=f"export {application.slug}", file=sys.stderr)
        try:
            manifest = flags_export_file(
                application=application,
                filters=filters,
                out=options["out"],
                since_last=options["since_last"],
                requested_by_label=f"export_flags by {operator_name()}",
                on_rows=progress.update if progress else None,
                export_format=export_format,
                snapshot_name=options["snapshot"],
            )
        except (DatabaseError, OSError) as exc:
            raise CommandError(f"Export failed, nothing written at {options['out']}: {one_line_error(exc)}") from exc
        finally:
            if progress is not None:
                progress.close()
        document = export_manifest_document(manifest)
        if options["json"]:
            self.stdout.write(json.dumps(document, indent=2, sort_keys=True))
            return
        increment = f" changed since {document['since']}" if manifest.since else ""
        shape = "" if export_format == "classifier" else (
            f" as {export_format} lines ({count(manifest.left_out, 'flag')} left out: nothing to train on)")
        self.stdout.write(
            f"Exported {count(manifest.row_count, 'flag')}{increment}{shape} to {manifest.path} "
            f"(manifest {manifest_path(Path(manifest.path))}, sha256 {manifest.sha256})."
        )
        if options["snapshot"]:
            self.stdout.write(f"Recorded it as snapshot {options['snapshot'].strip()!r}.")
