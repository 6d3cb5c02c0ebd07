"""Reads for tenants. Every tenant-scoped read elsewhere starts from an Application
that one of these selectors returned for the current user or token."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from .errors import NotFound
from .models import ApiToken, Application, Membership


def application_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Application]:
    if not user.is_authenticated:
        return Application.objects.none()
    return Application.objects.filter(memberships__user=user).order_by("name", "slug")


def membership_get(*, user: AbstractBaseUser, slug: str) -> Membership:
    """The user's membership in the application `slug`; NotFound when there is none,
    so an application the user does not belong to looks exactly like a missing one."""
    if not user.is_authenticated:
        raise NotFound("No such application.")
    try:
        # get(), not first(): one membership per user and application, and first()
        # would sort by the model's ordering (two joins) on every screen's request.
        return Membership.objects.select_related("application").get(user=user, application__slug=slug)
    except Membership.DoesNotExist as exc:
        raise NotFound("No such application.") from exc


def application_get(*, slug: str) -> Application:
    """For commands run by operators on the server (no user scoping)."""
    try:
        return Application.objects.get(slug=slug)
    except Application.DoesNotExist as exc:
        raise NotFound(f"Unknown application {slug!r}.") from exc


def token_list(*, application: Application) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(application=application).order_by("-created_at")


def personal_token_list(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's own personal tokens, newest first (revoked ones too: the list is their record)."""
    return ApiToken.objects.filter(kind="personal", user=user).order_by("-created_at", "-pk")
