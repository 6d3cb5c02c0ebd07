from consoles.errors import InvalidInput, NotFound
from consoles.management.base import DomainCommand
from consoles.models import Membership
from consoles.selectors import application_get
from consoles.services import token_issue, user_get_by_username


class Command(DomainCommand):
    help = (
        "Issue an API token and print it once. Without --user: an application token "
        "(integrations, agents). With --user: a personal token for that human. With "
        "--publishable and one --origin or more: a publishable key for the flag widget."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", required=True)
        parser.add_argument("--user", default=None, help="Issue a personal token for this username.")
        parser.add_argument(
            "--publishable", action="store_true",
            help="Issue a publishable key (cc_pub_…) for the embeddable flag widget: it may only create "
            "user flags, from the --origin pages, rate-limited.",
        )
        parser.add_argument(
            "--origin", action="append", default=[], dest="origins", metavar="ORIGIN",
            help="A web origin whose pages may use the publishable key (https://chat.example.com); repeat for more.",
        )

    def handle(self, *args, slug: str, name: str, user: str | None, publishable: bool, origins: list[str],
               **options) -> None:
        if publishable and user is not None:
            raise InvalidInput("A publishable key belongs to the application: drop --user.", fields={"user": "not allowed"})
        if origins and not publishable:
            raise InvalidInput("--origin is for publishable keys: add --publishable.", fields={"origin": "not allowed"})
        application = application_get(slug=slug)
        if publishable:
            issued = token_issue(name=name, application=application, publishable=True, origins=origins)
        elif user is None:
            issued = token_issue(name=name, application=application)
        else:
            human = user_get_by_username(username=user)
            if not Membership.objects.filter(user=human, application=application).exists():
                raise NotFound(f"User {user!r} is not a member of {slug!r}; add them first (add_member).")
            issued = token_issue(name=name, user=human)
        self.stderr.write("Store this token now; it is not shown again.")
        if publishable:
            self.stderr.write(f"Publishable key for {', '.join(issued.token.origins)}: it sits in your pages, "
                              "so it may only create user flags (rate-limited).")
        self.stdout.write(issued.secret)
