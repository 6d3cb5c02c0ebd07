import sys

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .access import member_required
from .errors import InvalidInput
from .extensions import home_cards
from .models import ApiToken
from .selectors import application_list_for_user, personal_token_list
from .services import token_issue, token_revoke


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


class PersonalTokenForm(forms.Form):
    name = forms.CharField(
        max_length=ApiToken._meta.get_field("name").max_length,
        help_text="Where you will use it, e.g. laptop or notebook.",
    )


@never_cache  # the page that shows a new secret must not stay in any cache
@login_required
@require_http_methods(["GET", "POST"])
def my_tokens(request: HttpRequest) -> HttpResponse:
    """The user's personal tokens: create one (its secret shown on this response, once), list,
    revoke. Only here is a personal token made: it acts as its user, a human reviewer, so no
    one else (an admin included) may mint one for them."""
    issued = None
    form = PersonalTokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            issued = token_issue(name=form.cleaned_data["name"], user=request.user, created_by=request.user)
        except InvalidInput as exc:
            exc.add_to_form(form)
        else:
            form = PersonalTokenForm()
    return render(
        request,
        "consoles/my_tokens.html",
        {"form": form, "issued": issued, "tokens": personal_token_list(user=request.user)},
        status=201 if issued else (422 if form.errors else 200),
    )


@login_required
@require_POST
def my_token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = personal_token_list(user=request.user).filter(pk=pk).first()
    if token is None:  # someone else's token is no token of yours
        raise Http404("No such token.")
    if token.is_active:
        token_revoke(token=token)
        messages.success(request, f"Token {token.name!r} revoked: it no longer authenticates.")
    return redirect("my_tokens")


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


@cache_control(max_age=86400, public=True)
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico on pages that name no icon (the admin, the API docs)."""
    return redirect(static("consoles/favicon.svg"))


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a lost database is 503 (retry later), not a bug; anything else is 500.

    Each write runs in one transaction, so a request that lost its database has
    written nothing; saying so lets clients and load balancers retry. The page is
    rendered without context processors or the layout: they would need the database.
    """
    exc = sys.exc_info()[1]
    if isinstance(exc, OperationalError | InterfaceError):
        message = "The database is unavailable; nothing was saved. Try again in a moment."
        if request.path_info.startswith("/api/"):
            response = JsonResponse(
                {"error": {"code": "unavailable", "message": message, "fields": {}}}, status=503
            )
        else:
            response = HttpResponse(loader.get_template("503.html").render({"message": message}), status=503)
        response["Retry-After"] = "5"
        return response
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {"error": {"code": "server_error", "message": "Something went wrong on our side.", "fields": {}}},
            status=500,
        )
    return defaults.server_error(request)
