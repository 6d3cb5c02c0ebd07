"""manage.py import_cases --application SLUG FILE.jsonl

One case per line. Each line is imported on its own: a bad line (not UTF-8, not
JSON, refused by the schema, e.g. an `observed_at` without a time zone) is
reported with its line number and writes nothing; the other lines are imported.
Idempotent on case id (re-running the same file changes nothing).

Exit status: 0 all lines imported or unchanged; 1 some lines failed (see stderr
or --json); 2 the command could not run (unknown application, unreadable file).
"""

import json
from pathlib import Path

from django.core.management.base import CommandError
from pydantic import ValidationError
from tqdm import tqdm

from adjudication.schemas import CaseIn
from adjudication.services import case_import
from consoles.errors import DomainError, InvalidInput
from consoles.management.base import DomainCommand, path_argument
from consoles.selectors import application_get


def _schema_message(exc: ValidationError) -> tuple[str, dict[str, str]]:
    fields: dict[str, str] = {}
    for err in exc.errors():
        name = ".".join(str(p) for p in err["loc"]) or "__all__"
        fields[name] = f"{fields[name]}; {err['msg']}" if name in fields else err["msg"]
    return "; ".join(f"{k}: {v}" for k, v in fields.items()), fields


class Command(DomainCommand):
    help = "Import candidate cases from a JSONL file (one case per line)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--application", required=True, help="Application slug.")
        parser.add_argument("file", type=path_argument, help="Path to a .jsonl file.")
        parser.add_argument("--json", action="store_true", help="Print a JSON summary on stdout.")

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["application"])
        path: Path = options["file"]
        if path.is_dir():
            raise InvalidInput(f"Cannot read {path}: it is a directory, not a .jsonl file.")
        if not path.is_file():
            raise InvalidInput(f"No such file: {path}")
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise InvalidInput(f"Cannot read {path}: {exc.strerror or exc}.") from exc
        imported = unchanged = 0
        errors: list[dict] = []
        progress = tqdm(
            total=path.stat().st_size, unit="B", unit_scale=True, disable=not self.show_progress(options),
            file=self.stderr._out,
        )
        with handle, progress:
            for number, raw in enumerate(handle, start=1):
                progress.update(len(raw))
                try:
                    # Strict: a replacement character would be imported as if it were the text.
                    text = raw.decode("utf-8").strip()
                except UnicodeDecodeError as exc:
                    errors.append({"line": number, "message": f"not valid UTF-8 (byte {exc.start + 1} of the line)",
                                   "fields": {}})
                    continue
                if not text:
                    continue
                try:
                    document = json.loads(text)
                except json.JSONDecodeError as exc:
                    errors.append({"line": number, "message": f"not valid JSON ({exc.msg})", "fields": {}})
                    continue
                except RecursionError:
                    errors.append({"line": number, "message": "not valid JSON (nested too deeply)", "fields": {}})
                    continue
                try:
                    data = CaseIn.model_validate(document)
                    result = case_import(application=application, data=data, actor=None)
                except ValidationError as exc:
                    message, fields = _schema_message(exc)
                    errors.append({"line": number, "message": message, "fields": fields})
                    continue
                except DomainError as exc:
                    errors.append({"line": number, "message": exc.message, "fields": exc.fields})
                    continue
                if result.created:
                    imported += 1
                else:
                    unchanged += 1

        if options["json"]:
            self.stdout.write(json.dumps({"imported": imported, "unchanged": unchanged, "failed": len(errors), "errors": errors}))
        else:
            for error in errors:
                self.stderr.write(f"line {error['line']}: {error['message']}")
            self.stdout.write(f"{imported} imported, {unchanged} unchanged, {len(errors)} failed")
        if errors:
            raise CommandError(f"{len(errors)} line(s) failed; nothing was written for them.", returncode=1)
