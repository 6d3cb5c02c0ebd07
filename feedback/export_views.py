"""The queue's download button: the JSONL export of exactly what the queue's
filters show (kept apart from the triage views; same streaming as the API)."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from consoles.access import member_required
from consoles.errors import InvalidInput

from .export_api import flags_export_response
from .forms import FlagFilterForm
from .selectors import FlagFilters
from .services import export_format_check


@member_required()
def export(request: HttpRequest) -> HttpResponse:
    application = request.application
    form = FlagFilterForm(request.GET or None, application=application)
    if form.is_bound and not form.is_valid():
        messages.error(request, "Fix the filters before downloading.")
        return redirect(reverse("feedback:queue", args=[application.slug]) + "?" + request.GET.urlencode())
    try:
        export_format = export_format_check(request.GET.get("format"))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        query = request.GET.copy()
        query.pop("format", None)
        return redirect(reverse("feedback:queue", args=[application.slug]) + "?" + query.urlencode())
    # No status filter shows every status in the queue, so it exports every status.
    filters = form.filters() if form.is_bound else FlagFilters()
    return flags_export_response(
        application=application,
        filters=filters,
        user=request.user,
        label=f"queue:{request.user.get_username()}",
        export_format=export_format,
    )
