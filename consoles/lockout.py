"""Login throttling on top of django-axes: the page a locked-out log-in gets
(`login_locked`) and the handler that also counts failures per address."""

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def address_failures(request: HttpRequest) -> int:
    """Failed log-ins from this request's address within the cool-off, whatever the username."""
    address = getattr(request, "axes_ip_address", None)
    if not address:
        return 0
    attempts = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=get_cool_off_threshold(request))
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class ConsoleAxesHandler(AxesDatabaseHandler):
    """Locks a (username, address) after AXES_FAILURE_LIMIT failures, as axes does, and an
    address after AXES_ADDRESS_FAILURE_LIMIT failures over any usernames: password
    spraying (one guess each at many users) was never throttled. The address limit is
    higher, so colleagues behind one NAT who mistype do not lock each other out.

    axes compares every lockout parameter with one limit, hence a handler rather than
    `AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]`."""

    def is_locked(self, request: HttpRequest, credentials: dict | None = None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return _address_locked(request)

    def user_login_failed(self, sender, credentials: dict, request: HttpRequest | None = None, **kwargs) -> None:
        super().user_login_failed(sender, credentials, request=request, **kwargs)
        # axes marks the request locked out (its middleware then answers the lockout page)
        # only for its own limit; the address limit answers the same way.
        if request is not None and _address_locked(request):
            request.axes_locked_out = True


def _address_locked(request: HttpRequest) -> bool:
    return settings.AXES_LOCK_OUT_AT_FAILURE and address_failures(request) >= settings.AXES_ADDRESS_FAILURE_LIMIT


def login_locked(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    by_address = _address_locked(request)
    context = {
        "failure_limit": settings.AXES_ADDRESS_FAILURE_LIMIT if by_address else settings.AXES_FAILURE_LIMIT,
        "by_address": by_address,
        "minutes": minutes,
    }
    # 429 so scripts see "slow down", the page says the same to a person.
    return render(request, "registration/locked.html", context, status=429)
