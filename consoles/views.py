from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .access import member_required
from .extensions import home_cards
from .selectors import application_list_for_user


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The user's applications; straight to the only one when there is one."""
    applications = list(application_list_for_user(user=request.user))
    if len(applications) == 1:
        return redirect("application_home", app_slug=applications[0].slug)
    return render(request, "consoles/home.html", {"applications": applications})


@member_required()
def application_home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "consoles/application_home.html",
        {"cards": home_cards(request.application)},
    )


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
