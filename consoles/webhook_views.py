"""The webhooks screens (application admins): endpoints, the secret shown once,
each endpoint's delivery log with *Redeliver*, and why an endpoint was disabled.

Plain forms and links; nothing here calls the network (deliveries run in the worker).
"""

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from . import webhooks
from .access import member_required
from .errors import DomainError
from .models import WEBHOOK_EVENTS, Role, WebhookEndpoint


class EndpointForm(forms.Form):
    url = forms.URLField(label="URL", max_length=2000, assume_scheme="https",
                         help_text="Where each event is POSTed (http or https; public addresses in production).")
    events = forms.MultipleChoiceField(choices=[(e, e) for e in WEBHOOK_EVENTS], widget=forms.CheckboxSelectMultiple,
                                       initial=list(WEBHOOK_EVENTS))


def _endpoint_or_404(request: HttpRequest, pk: int) -> WebhookEndpoint:
    try:
        return webhooks.endpoint_get(application=request.application, pk=pk)
    except DomainError as exc:
        raise Http404(exc.message) from exc


def _list_page(request: HttpRequest, *, form: EndpointForm | None = None, created: WebhookEndpoint | None = None,
               status: int = 200) -> HttpResponse:
    endpoints = list(webhooks.endpoint_list(application=request.application))
    return render(request, "consoles/webhooks.html", {
        "endpoints": endpoints, "form": form or EndpointForm(), "created": created,
        "disabled": [e for e in endpoints if e.disabled_at], "events": WEBHOOK_EVENTS,
    }, status=status)


@member_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def endpoint_list(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _list_page(request)
    form = EndpointForm(request.POST)
    if not form.is_valid():
        return _list_page(request, form=form, status=400)
    try:
        endpoint = webhooks.endpoint_create(application=request.application, url=form.cleaned_data["url"],
                                            events=form.cleaned_data["events"], actor=request.user)
    except DomainError as exc:
        exc.add_to_form(form)
        return _list_page(request, form=form, status=400)
    # The one time the secret is shown: the page is rendered, not redirected to.
    return _list_page(request, created=endpoint, status=201)


@member_required(Role.ADMIN)
@require_http_methods(["GET"])
def endpoint_detail(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(request, pk)
    deliveries = list(webhooks.delivery_list(endpoint=endpoint))
    return render(request, "consoles/webhook_endpoint.html", {"endpoint": endpoint, "deliveries": deliveries})


@member_required(Role.ADMIN)
@require_POST
def endpoint_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(request, pk)
    endpoint = webhooks.endpoint_enable(endpoint=endpoint, active=not endpoint.is_active)
    messages.success(request, f"Endpoint {'enabled' if endpoint.is_active else 'disabled'}.")
    return redirect("webhooks:detail", app_slug=request.application.slug, pk=endpoint.pk)


@member_required(Role.ADMIN)
@require_POST
def endpoint_delete(request: HttpRequest, pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(request, pk)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm; nothing was deleted.")
        return redirect("webhooks:detail", app_slug=request.application.slug, pk=endpoint.pk)
    webhooks.endpoint_delete(endpoint=endpoint)
    messages.success(request, f"Endpoint {endpoint.url} deleted with its delivery log.")
    return redirect("webhooks:list", app_slug=request.application.slug)


@member_required(Role.ADMIN)
@require_POST
def delivery_redeliver(request: HttpRequest, pk: int, delivery_pk: int) -> HttpResponse:
    endpoint = _endpoint_or_404(request, pk)
    try:
        delivery = webhooks.delivery_get(application=request.application, pk=delivery_pk)
    except DomainError as exc:
        raise Http404(exc.message) from exc
    if delivery.endpoint_id != endpoint.pk:
        raise Http404("No such delivery.")
    try:
        webhooks.redeliver(delivery=delivery)
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("webhooks:detail", app_slug=request.application.slug, pk=endpoint.pk)
    messages.success(request, "Queued for redelivery: the worker sends it in a moment.")
    return redirect("webhooks:detail", app_slug=request.application.slug, pk=endpoint.pk)
