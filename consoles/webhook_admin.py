"""Webhook endpoints in the Django admin, scoped like every other admin by
`TenantScopedAdminMixin`: the applications the staff user administers (superusers see all)."""

import secrets

from django import forms
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers

from . import webhooks
from .admin_scope import TenantScopedAdminMixin
from .models import WebhookDelivery, WebhookEndpoint


class WebhookEndpointForm(forms.ModelForm):
    events = forms.MultipleChoiceField(choices=[(e, e) for e in webhooks.WEBHOOK_EVENTS],
                                       widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = WebhookEndpoint
        fields = ["application", "url", "events", "is_active"]

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        try:
            webhooks.resolve(url)
        except webhooks.AddressRefused as exc:
            raise forms.ValidationError(str(exc)) from exc
        return url


class DeliveryInline(TenantScopedAdminMixin, admin.TabularInline):
    model = WebhookDelivery
    fields = ["event", "status", "last_status_code", "last_attempt_at", "attempts", "last_error"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-created_at"]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "application", "is_active", "failing_since", "disabled_at"]
    list_filter = ["is_active"]
    readonly_fields = ["failing_since", "disabled_at", "disabled_reason", "created_at"]
    inlines = [DeliveryInline]

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form, change: bool) -> None:
        if not change:
            obj.secret = "whsec_" + secrets.token_hex(24)
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: WebhookEndpoint, post_url_continue=None) -> HttpResponse:
        """The signing secret is shown on this response, once, never in the messages cookie
        (signed, not encrypted) that Django's redirect would carry it in."""
        context = {**self.admin_site.each_context(request), "title": "Webhook endpoint created",
                   "opts": self.opts, "endpoint": obj}
        response = TemplateResponse(request, "admin/consoles/webhookendpoint/created.html", context)
        add_never_cache_headers(response)
        return response
