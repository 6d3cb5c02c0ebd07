"""`manage.py teaching <subcommand> --app SLUG ...`: the operator's teaching loop.

    import FILE.jsonl                      discovery candidates (all or nothing)
    import-evals FILE.jsonl                eval cases (create or update by case_id)
    propose CANDIDATE_ID [--allow-evaluative] [--json]
    proposals [--state STATE] [--json]     default: pending
    review PROPOSAL_ID --accept|--reject|--withdraw --operator USERNAME [--note ...]
    supersede NUMBER --by NUMBER --operator USERNAME [--note ...]
    export --out PATH                      the active corpus as JSONL (atomic, with a manifest;
                                           replaces only an earlier export)

Bad input is one line on stderr and exit status 2; nothing is written then.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import DatabaseError
from tqdm import tqdm

from consoles.errors import InvalidInput, NotFound
from consoles.management.base import DomainCommand, one_line_error, path_argument
from consoles.models import Application
from consoles.selectors import application_get
from consoles.text import count
from teaching import selectors, services
from teaching.models import ProposalState


def _unstorable(value: Any) -> str | None:
    """Why text in a record cannot be stored, if it cannot: PostgreSQL refuses NUL, and no
    database stores a lone surrogate (`"\\ud800"` is valid JSON)."""
    if isinstance(value, str):
        if "\x00" in value:
            return "text must not contain NUL (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text must not contain a lone surrogate (an unpaired \\ud800-\\udfff escape)"
        return None
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        return next(filter(None, map(_unstorable, value)), None)
    return None


def _jsonl(path: Path) -> list[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InvalidInput(f"No such file: {path}", fields={"file": "not found"}) from exc
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"Cannot read the file {path}: not valid UTF-8 (byte {exc.start + 1}).", fields={"file": "not UTF-8"}
        ) from exc
    except OSError as exc:
        raise InvalidInput(f"Cannot read the file {path}: {exc.strerror or exc}.", fields={"file": "unreadable"}) from exc
    records = []
    # Lines end at "\n" only: str.splitlines() also splits at U+2028 and other separators
    # that JSON allows inside a string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}: not valid JSON ({exc.msg})", fields={f"line {number}": "invalid JSON"}) from exc
        except RecursionError as exc:
            raise InvalidInput(f"line {number}: not valid JSON (nested too deeply)", fields={f"line {number}": "invalid JSON"}) from exc
        if why := _unstorable(record):
            raise InvalidInput(f"line {number}: {why}.", fields={f"line {number}": why})
        records.append((number, record))
    return records


def _operator(username: str):
    User = get_user_model()
    try:
        return User.objects.get(username=username, is_active=True)
    except User.DoesNotExist as exc:
        raise NotFound(f"Unknown user {username!r}: the operator is a human user of the console.") from exc


class Command(DomainCommand):
    help = "Teaching proposals: import candidates and eval cases, propose, list, review, supersede, export."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        def add(name: str, help_text: str):
            p = sub.add_parser(name, help=help_text)
            # --application as every other command spells it; --app as this one always has.
            p.add_argument("--app", "--application", dest="app", required=True, metavar="SLUG",
                           help="The application.")
            return p

        p = add("import", "Import discovery candidates from a JSONL file.")
        p.add_argument("file", type=path_argument)
        p.add_argument("--json", action="store_true")
        p = add("import-evals", "Import eval cases from a JSONL file.")
        p.add_argument("file", type=path_argument)
        p.add_argument("--json", action="store_true")
        p = add("propose", "Propose an eligible candidate and run the replay gate.")
        p.add_argument("candidate_id")
        p.add_argument("--allow-evaluative", action="store_true", help="Let an evaluative claim with a strong hedge through.")
        p.add_argument("--json", action="store_true")
        p = add("proposals", "List proposals (pending by default).")
        p.add_argument("--state", choices=ProposalState.values, default=ProposalState.PENDING)
        p.add_argument("--json", action="store_true")
        p = add("review", "Accept, reject or withdraw a proposal.")
        p.add_argument("proposal_id", help="The id or a unique prefix of 8+ characters.")
        group = p.add_mutually_exclusive_group(required=True)
        group.add_argument("--accept", dest="decision", action="store_const", const="accept")
        group.add_argument("--reject", dest="decision", action="store_const", const="reject")
        group.add_argument("--withdraw", dest="decision", action="store_const", const="withdraw")
        p.add_argument("--operator", required=True, metavar="USERNAME", help="The human operator deciding.")
        p.add_argument("--note", default="")
        p = add("supersede", "Retire a corpus entry in favour of another.")
        p.add_argument("entry_id", type=int, metavar="NUMBER", help="The entry's number in the corpus.")
        p.add_argument("--by", dest="superseded_by", type=int, required=True, metavar="NUMBER")
        p.add_argument("--operator", required=True, metavar="USERNAME")
        p.add_argument("--note", default="")
        p = add("export", "Write the active corpus as JSONL.")
        p.add_argument("--out", required=True, metavar="PATH", type=path_argument)

    def handle(self, *args, **options) -> None:
        application = application_get(slug=options["app"])
        handler = getattr(self, "_" + options["subcommand"].replace("-", "_"))
        handler(application, options)

    def _emit_json(self, value: Any) -> None:
        self.stdout.write(json.dumps(value, indent=2, sort_keys=True))

    def _progress(self, records: list, options: dict) -> Iterator:
        if self.show_progress(options):
            return iter(tqdm(records, file=self.stderr, unit="line"))
        return iter(records)

    def _import(self, application: Application, options: dict) -> None:
        records = _jsonl(options["file"])
        result = services.candidates_import(
            application=application, records=self._progress(records, options), actor=services.Actor.system()
        )
        if options["json"]:
            self._emit_json({"created": result.created, "unchanged": result.unchanged, "ineligible": result.ineligible})
            return
        self.stdout.write(f"Imported {count(result.created, 'candidate')} ({result.unchanged} already present).")
        for candidate_id, gates in result.ineligible.items():
            self.stdout.write(f"  not eligible: {candidate_id} (failing gates: {', '.join(gates)})")

    def _import_evals(self, application: Application, options: dict) -> None:
        result = services.eval_cases_import(application=application, records=self._progress(_jsonl(options["file"]), options))
        if options["json"]:
            self._emit_json({"created": result.created, "updated": result.updated, "unchanged": result.unchanged})
            return
        self.stdout.write(
            f"Eval cases: {result.created} created, {result.updated} updated, {result.unchanged} unchanged."
        )

    def _propose(self, application: Application, options: dict) -> None:
        proposal, created = services.proposal_create(
            application=application,
            candidate_id=options["candidate_id"],
            allow_evaluative=options["allow_evaluative"],
            actor=services.Actor.system(),
        )
        proposal = selectors.proposal_get(application=application, proposal_id=proposal.proposal_id)
        if options["json"]:
            self._emit_json({"created": created, **selectors.proposal_record(proposal)})
            return
        prefix = "Proposed" if created else "Already proposed"
        self.stdout.write(f"{prefix}: {proposal.proposal_id} ({proposal.state})")
        if proposal.replay_equivalent:
            # Only a pending proposal waits: an earlier one may be accepted or withdrawn already.
            waiting = "waiting for an operator" if proposal.state == ProposalState.PENDING else f"it is {proposal.state}"
            self.stdout.write(f"  replay-equivalent: no metric regressed; {waiting}.")
        else:
            self.stdout.write(f"  {proposal.operator_note}")

    def _proposals(self, application: Application, options: dict) -> None:
        proposals = selectors.proposal_list(application=application, state=options["state"])
        if options["json"]:
            self._emit_json([selectors.proposal_record(p) for p in proposals.iterator(chunk_size=500)])
            return
        count = 0
        for p in proposals.iterator(chunk_size=500):
            count += 1
            equivalent = "equivalent" if p.replay_equivalent else "regressed"
            chain = f"{p.subject} {p.intent} {p.connective} {p.object} ({p.polarity})"
            self.stdout.write(f"{p.proposal_id[:12]}  {p.state:<9}  {equivalent:<10}  {p.candidate.candidate_id}  {chain}")
        if not count:
            self.stdout.write(f"No {options['state']} proposals.")

    def _review(self, application: Application, options: dict) -> None:
        operator = _operator(options["operator"])
        proposal = selectors.proposal_resolve(application=application, ref=options["proposal_id"])
        proposal = services.proposal_decide(
            application=application,
            proposal_id=proposal.proposal_id,
            decision=options["decision"],
            operator=operator,
            note=options["note"],
        )
        line = f"{proposal.proposal_id} {proposal.state} by {operator.get_username()}"
        if proposal.state == ProposalState.ACCEPTED:
            line += f"; corpus entry {proposal.corpus_entry.number} appended"
        self.stdout.write(line)

    def _supersede(self, application: Application, options: dict) -> None:
        row = services.corpus_supersede(
            application=application,
            entry_number=options["entry_id"],
            superseded_by_number=options["superseded_by"],
            operator=_operator(options["operator"]),
            note=options["note"],
        )
        self.stdout.write(f"Corpus entry {row.entry.number} retired, superseded by {row.superseded_by.number}.")

    def _export(self, application: Application, options: dict) -> None:
        try:
            lines = services.corpus_export(application=application, out=options["out"])
        except (DatabaseError, OSError) as exc:
            # Exit 1, as export_flags: the export failed midway and nothing replaced the file.
            raise CommandError(f"Export failed, nothing written at {options['out']}: {one_line_error(exc)}") from exc
        self.stdout.write(f"Wrote {count(lines, 'active corpus entry', 'active corpus entries')} to {options['out']}.")
