"""The page a locked-out log-in gets (django-axes calls `login_locked`)."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def login_locked(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes}
    # 429 so scripts see "slow down", the page says the same to a person.
    return render(request, "registration/locked.html", context, status=429)
