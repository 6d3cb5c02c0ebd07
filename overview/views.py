from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from consoles.access import member_required

from . import charts
from .forms import DateRangeForm


@require_GET
@member_required()
def overview(request: HttpRequest) -> HttpResponse:
    """The application at a glance, for any member; the range lives in the URL."""
    form = DateRangeForm(request.GET)
    if not form.is_valid():
        # A form error beside its field, status 200: the same as a bad date on the flags
        # screen (a person mistyped a filter; nothing about the request is malformed).
        return render(request, "overview/index.html", {"form": form, "sections": []})
    first, last = form.range
    # Show the range in effect (the defaults included) in the form's inputs.
    form.data = {"from": first.isoformat(), "to": last.isoformat()}
    sections = charts.build(request.application, first, last, today=timezone.now().date())
    return render(
        request,
        "overview/index.html",
        {"form": form, "sections": sections, "first": first, "last": last, "days": (last - first).days + 1},
    )
