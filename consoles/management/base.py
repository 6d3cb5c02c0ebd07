"""Shared shape for management commands: domain errors become one clear line
on stderr and exit status 2, which cron and CI can act on."""

from django.core.management.base import BaseCommand, CommandError

from consoles.errors import DomainError


def one_line(exc: DomainError) -> str:
    """The refusal's message, naming each refused field the message does not name already."""
    named = "; ".join(f"{field}: {why.rstrip('.')}" for field, why in exc.fields.items()
                      if field not in exc.message and why not in exc.message)
    return f"{exc.message} {named}." if named else exc.message


class DomainCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except DomainError as exc:
            raise CommandError(one_line(exc), returncode=2) from exc

    def show_progress(self, options: dict) -> bool:
        """A progress bar only on a terminal, never under cron."""
        return self.stderr.isatty() and not options.get("json")
