"""Webhook endpoints in the Django admin, scoped to the applications the staff user administers.

A plain ModelAdmin scoped by hand (superusers see all); the shared tenant-scoping
mixin replaces `_admin_applications` and the overrides below when it lands.
"""

import secrets

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from . import webhooks
from .models import Application, Membership, Role, WebhookDelivery, WebhookEndpoint


def _admin_applications(request: HttpRequest) -> QuerySet[Application]:
    if request.user.is_superuser:
        return Application.objects.all()
    ids = Membership.objects.filter(user=request.user, role=Role.ADMIN).values("application_id")
    return Application.objects.filter(pk__in=ids)


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


class DeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    fields = ["event", "status", "last_status_code", "last_attempt_at", "attempts", "last_error"]
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    ordering = ["-created_at"]


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "application", "is_active", "failing_since", "disabled_at"]
    list_filter = ["is_active"]
    readonly_fields = ["failing_since", "disabled_at", "disabled_reason", "created_at"]
    inlines = [DeliveryInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).filter(application__in=_admin_applications(request))

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if db_field.name == "application":
            kwargs["queryset"] = _admin_applications(request)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _may(self, request: HttpRequest, obj: WebhookEndpoint | None) -> bool:
        return obj is None or _admin_applications(request).filter(pk=obj.application_id).exists()

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return super().has_view_permission(request, obj) and self._may(request, obj)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return super().has_change_permission(request, obj) and self._may(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and self._may(request, obj)

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form, change: bool) -> None:
        if not change:
            obj.secret = "whsec_" + secrets.token_hex(24)
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change:
            # The one time the secret is shown.
            messages.warning(request, f"Signing secret of {obj.url} (shown once): {obj.secret}")
