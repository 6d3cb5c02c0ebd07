"""Shared argument handling of the export and governance commands."""

import getpass
import os
from argparse import ArgumentParser, ArgumentTypeError
from datetime import date

from consoles.errors import InvalidInput
from feedback.models import FlagStatus
from feedback.selectors import FlagFilters


def operator_name() -> str:
    """Who runs the command: the login of the operator (or of cron's user)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a container without a passwd entry
        return f"uid:{os.getuid()}"


def day_argument(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ArgumentTypeError(f"not a day (YYYY-MM-DD): {value!r}") from None


def add_filter_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--status",
        default="approved",
        help='Flag status to export (default "approved"; "any" exports every status).',
    )
    parser.add_argument("--axis", default="", help="Only flags on this axis.")
    parser.add_argument("--region", default="", help='"prompt" or "answer".')
    parser.add_argument("--problem", default="", help="Only flags with this problem key.")
    parser.add_argument("--author-kind", default="", help='"end_user", "operator" or "agent".')
    parser.add_argument("--created-from", type=day_argument, help="First day (YYYY-MM-DD), inclusive.")
    parser.add_argument("--created-to", type=day_argument, help="Last day (YYYY-MM-DD), inclusive.")


def filters_from_options(options: dict) -> FlagFilters:
    status = options["status"]
    if not status.strip():
        # Blank would mean "no status filter": every pending and rejected flag in the corpus.
        raise InvalidInput("Invalid filter.", fields={"status": 'give a status, or "any" for every status'})
    if status != "any" and status not in FlagStatus.values:
        raise InvalidInput("Invalid filter.", fields={"status": f"Use one of {', '.join(FlagStatus.values)}, or any."})
    return FlagFilters(
        status="" if status == "any" else status,
        axis=options["axis"],
        region=options["region"],
        problem=options["problem"],
        author_kind=options["author_kind"],
        created_from=options["created_from"],
        created_to=options["created_to"],
    )
