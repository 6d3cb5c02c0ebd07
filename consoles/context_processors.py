from django.http import HttpRequest

from . import webhooks
from .selectors import application_list_for_user


def applications(request: HttpRequest) -> dict:
    """The application switcher: only the applications the user is a member of."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"switcher_applications": []}
    application = getattr(request, "application", None)
    return {
        "switcher_applications": application_list_for_user(user=user).only("slug", "name"),
        "current_application": application,
        "current_membership": getattr(request, "membership", None),
        # Endpoints disabled after 24 hours of failures, on the admins' menu of every screen;
        # a callable, so the count is only read where the template shows it (admins).
        "disabled_webhooks": (lambda: webhooks.disabled_endpoint_count(application=application))
        if application is not None else 0,
    }
