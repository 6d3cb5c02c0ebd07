"""Who may do what: the one place where screens and the API resolve the tenant
and check roles.

Screens: `@member_required("curator")` on a view taking `app_slug`; a user who
is not a member gets 404 (the application does not exist for them), a member
whose role is too low gets 403.

API: `Principal` is what a request authenticated as (an application token, a
personal token, or a logged-in session); `principal.application_for(...)`
resolves the tenant with the same rules.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse

from .errors import NotFound, PermissionDeniedError
from .models import ROLE_RANK, ApiToken, Application, Membership, Role
from .selectors import membership_get


def member_required(role: str = Role.VIEWER) -> Callable:
    """Require a logged-in member of the application named by the `app_slug` URL kwarg.

    Sets `request.application` and `request.membership` for the view.
    """
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}")

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, app_slug: str, *args, **kwargs) -> HttpResponse:
            try:
                membership = membership_get(user=request.user, slug=app_slug)
            except NotFound as exc:
                raise Http404("No such application.") from exc
            # Set before the role check, so a refusal's page keeps the member's navigation.
            request.application = membership.application
            request.membership = membership
            if not membership.has_role(role):
                raise PermissionDenied(f"This needs the {role} role.")
            return view(request, *args, **kwargs)

        wrapper.required_role = role
        return wrapper

    return decorator


@dataclass(frozen=True)
class Principal:
    """The identity behind an API request."""

    kind: str  # "application" | "publishable" | "personal" | "session"
    user: AbstractBaseUser | None = None
    token: ApiToken | None = None
    application: Application | None = None  # the token's own, for application tokens and publishable keys

    @property
    def is_application_bound(self) -> bool:
        """An application token or a publishable key: it acts on its own application only."""
        return self.kind in ("application", "publishable")

    @property
    def is_human(self) -> bool:
        return self.user is not None

    @property
    def label(self) -> str:
        if self.is_application_bound:
            return f"token:{self.token.name}"
        return f"user:{self.user.get_username()}"

    def application_for(self, slug: str | None = None, *, role: str = Role.VIEWER) -> Application:
        """The application this request acts on.

        Application tokens act on their own application; naming another one is
        a 403. Humans name the application (`slug`) and must be members with
        at least `role`: not a member is a 404, too low a role is a 403.
        """
        if self.is_application_bound:
            if slug and slug != self.application.slug:
                raise PermissionDeniedError(
                    "This token belongs to another application.",
                    code="application_mismatch",
                    fields={"application_id": "does not match the token's application"},
                )
            if ROLE_RANK[Role(role)] > ROLE_RANK[Role.CURATOR]:
                raise PermissionDeniedError("An application token cannot do this.")
            return self.application
        if not slug:
            raise PermissionDeniedError(
                "Name the application (application_id) when using a personal token or a session.",
                code="application_required",
                fields={"application_id": "required"},
            )
        membership = membership_get(user=self.user, slug=slug)
        self._require(membership, role)
        return membership.application

    def visible_applications(self) -> QuerySet[Application]:
        """The applications this caller may see, for finding an object by id.

        Filtering by these makes another tenant's object and a missing one the same
        case, "no row": one code path and one 404 body, so an id (a content hash) cannot
        be confirmed across tenants."""
        if self.kind == "application":
            return Application.objects.filter(pk=self.application.pk)
        return Application.objects.filter(memberships__user=self.user)

    def require_member(self, application: Application, *, role: str = Role.VIEWER) -> Membership | None:
        """Check access to an object's application (found by id, e.g. a flag).

        Raises NotFound for an outsider, so another tenant's object is a 404.
        Returns the membership for humans, None for the application's own token.
        """
        if self.is_application_bound:
            if application.pk != self.application.pk:
                raise NotFound("Not found.")
            return None
        try:
            membership = Membership.objects.get(user=self.user, application=application)
        except Membership.DoesNotExist as exc:
            raise NotFound("Not found.") from exc
        self._require(membership, role)
        return membership

    def require_human(self, what: str = "This action") -> AbstractBaseUser:
        if not self.is_human:
            raise PermissionDeniedError(
                f"{what} needs a human: use a personal token or a logged-in session.",
                code="human_required",
            )
        return self.user

    @staticmethod
    def _require(membership: Membership, role: str) -> None:
        if not membership.has_role(role):
            raise PermissionDeniedError(f"This needs the {role} role.", code="role_required")
