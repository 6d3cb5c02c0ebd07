from consoles.errors import NotFound
from consoles.management.base import DomainCommand
from consoles.models import Membership
from consoles.selectors import application_get
from consoles.services import token_issue, user_get_by_username


class Command(DomainCommand):
    help = (
        "Issue an API token and print it once. Without --user: an application token "
        "(integrations, agents). With --user: a personal token for that human."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--user", default=None, help="Issue a personal token for this username.")

    def handle(self, *args, slug: str, name: str, user: str | None, **options) -> None:
        application = application_get(slug=slug)
        if user is None:
            issued = token_issue(name=name, application=application)
        else:
            human = user_get_by_username(username=user)
            if not Membership.objects.filter(user=human, application=application).exists():
                raise NotFound(f"User {user!r} is not a member of {slug!r}; add them first (add_member).")
            issued = token_issue(name=name, user=human)
        self.stderr.write("Store this token now; it is not shown again.")
        self.stdout.write(issued.secret)
