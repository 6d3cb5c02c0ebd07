from consoles.management.base import DomainCommand
from consoles.models import Role
from consoles.selectors import application_get
from consoles.services import membership_set, user_get_by_username


class Command(DomainCommand):
    help = "Add a user to an application with a role (or change their role)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, default=Role.VIEWER)

    def handle(self, *args, slug: str, username: str, role: str, **options) -> None:
        application = application_get(slug=slug)
        user = user_get_by_username(username=username)
        membership_set(application=application, user=user, role=role)
        self.stdout.write(f"{username} is now {role} of {slug}.")
