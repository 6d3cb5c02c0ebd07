from consoles.management.base import DomainCommand
from consoles.services import application_create


class Command(DomainCommand):
    help = "Create an application (a tenant)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, *args, slug: str, name: str, **options) -> None:
        application = application_create(slug=slug, name=name)
        self.stdout.write(f"Created application {application.slug} ({application.name}).")
