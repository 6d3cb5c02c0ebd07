"""Shared shape for management commands: domain errors become one clear line
on stderr and exit status 2, which cron and CI can act on."""

from django.core.management.base import BaseCommand, CommandError

from consoles.errors import DomainError


class DomainCommand(BaseCommand):
    def execute(self, *args, **options):
        try:
            return super().execute(*args, **options)
        except DomainError as exc:
            raise CommandError(exc.message, returncode=2) from exc

    def show_progress(self, options: dict) -> bool:
        """A progress bar only on a terminal, never under cron."""
        return self.stderr.isatty() and not options.get("json")
