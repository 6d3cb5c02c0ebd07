from django.http import HttpRequest

from .selectors import application_list_for_user


def applications(request: HttpRequest) -> dict:
    """The application switcher: only the applications the user is a member of."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"switcher_applications": []}
    return {
        "switcher_applications": application_list_for_user(user=user).only("slug", "name"),
        "current_application": getattr(request, "application", None),
        "current_membership": getattr(request, "membership", None),
    }
