"""Shared shape for management commands: domain errors become one clear line
on stderr and exit status 2, which cron and CI can act on."""

from argparse import ArgumentTypeError
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from consoles.errors import DomainError


def one_line(exc: DomainError) -> str:
    """The refusal's message, naming each refused field the message does not name already."""
    named = "; ".join(f"{field}: {why.rstrip('.')}" for field, why in exc.fields.items()
                      if field not in exc.message and why not in exc.message)
    return f"{exc.message} {named}." if named else exc.message


def one_line_error(exc: BaseException) -> str:
    """An unexpected error's text on one line: PostgreSQL's lost connection, for
    one, spans three ("server closed the connection unexpectedly\\n\\tThis ...")."""
    return " ".join(str(exc).split())


def path_argument(value: str) -> Path:
    """The argparse type of a FILE or `--out` argument. A blank one (`--out "$DIR"` with
    DIR unset) is refused: `Path("")` is the current directory, and `"  "` a file named
    with spaces, where nobody would look for the export."""
    path = Path(value)
    if not value.strip() or (path.name and not path.name.strip()):
        raise ArgumentTypeError(f"give a path, not {value!r}")
    return path


class DomainCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except DomainError as exc:
            raise CommandError(one_line(exc), returncode=2) from exc

    def show_progress(self, options: dict) -> bool:
        """A progress bar only on a terminal, never under cron."""
        return self.stderr.isatty() and not options.get("json")
