"""The Django admin of tenants, memberships and tokens, and the scoping of every other admin.

Every ModelAdmin and inline of every app is tenant-scoped by `TenantScopedAdminMixin`
(`consoles/admin_scope.py`, STYLE.md habit 11): a superuser sees all; any other staff user
only the applications they administer. A new ModelAdmin starts like this, or the admin sweep
(`consoles/tests/test_admin_tenancy.py`) fails:

    from consoles.admin_scope import TenantScopedAdminMixin

    @admin.register(Thing)
    class ThingAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
        tenant_path = "application"   # the lookup from a Thing to its Application

A ModelAdmin registered by a library is wrapped with `rescope(Model)` here (axes, auth).

Tokens: the admin issues application tokens only (secret shown once on the response page,
never stored or put in a message); a personal token is created by its own user under
*My tokens* (`/tokens/`). An admin may revoke any token they can see.
"""

import axes.admin  # noqa: F401 - registers its admins first, so they can be re-registered scoped
import django_tasks_db.admin  # noqa: F401 - registers its admin first, so it can be re-registered scoped
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django import forms
from django.apps import apps
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import add_never_cache_headers
from django_tasks_db.models import DBTaskResult

from .admin_scope import (
    TenantScopedAdminMixin,
    administered_application_ids,
    is_superuser,
    members_of,
    rescope,
)
from .errors import InvalidInput
from .models import ApiToken, Application, Membership, TokenKind
from .origins import origins_clean
from .services import application_keys_in_use, token_issue, token_revoke


class LabelledInlineFormSet(BaseInlineFormSet):
    """A tabular inline's fields sit in table cells under a column heading, with no <label>:
    name each input after its column (and the row's delete box), so a screen reader says
    what a cell's select or checkbox is (axe `label`, `select-name`)."""

    def add_fields(self, form: forms.BaseForm, index: int | None) -> None:
        super().add_fields(form, index)
        for name, field in form.fields.items():
            label = "Delete this row" if name == "DELETE" else str(field.label or name)
            field.widget.attrs.setdefault("aria-label", label)


class MembershipInline(TenantScopedAdminMixin, admin.TabularInline):
    model = Membership
    formset = LabelledInlineFormSet
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Each row shows the membership's __str__ (user and application slug).
        return super().get_queryset(request).select_related("user", "application")


class ApplicationTokenInline(TenantScopedAdminMixin, admin.TabularInline):
    """Tokens are listed here; they are issued from the token admin (shown once)."""

    model = ApiToken
    extra = 0
    can_delete = False
    fields = ["name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = fields
    show_change_link = True
    verbose_name = "application token"

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Each row shows the token's __str__ (its owner).
        return super().get_queryset(request).select_related("application", "user")


class ApplicationForm(forms.ModelForm):
    """The admin's form (fields from the fieldsets): the model's rules, then the
    cross-app rule that a key stored rows use stays (a service, not the model)."""

    def _post_clean(self) -> None:
        super()._post_clean()  # the model's own rules (full_clean) first
        if self.errors:
            return  # a malformed list cannot be compared with the stored one
        try:
            application_keys_in_use(application=self.instance)
        except InvalidInput as exc:
            for field, why in exc.fields.items():
                self.add_error(field, why)


@admin.register(Application)
class ApplicationAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    tenant_path = "pk"
    form = ApplicationForm

    list_display = ["name", "slug", "capture_enabled", "retention_days", "created_at"]
    list_filter = ["capture_enabled", "gold_requires_two_agreeing"]
    search_fields = ["name", "slug"]
    readonly_fields = ["created_at"]
    inlines = [MembershipInline, ApplicationTokenInline]
    fieldsets = [
        (None, {"fields": ["slug", "name", "created_at"]}),
        ("Detection", {"fields": ["axes", "problems"]}),
        (
            "Capture of low-confidence and refused answers (opt-in)",
            {
                "fields": [
                    "capture_enabled",
                    "capture_on_low_confidence",
                    "capture_on_refusal",
                    "capture_max_items",
                    "capture_labels",
                ]
            },
        ),
        ("Adjudication", {"fields": ["case_labels", "gold_requires_two_agreeing"]}),
        # The exemplar bank's settings live with the bank (exemplars.BankSettings).
        ("Retention", {"fields": ["retention_days"]}),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # A new tenant would have no admin but its creator's superuser: tenants are a superuser's.
        return is_superuser(request) and super().has_add_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Application | None = None) -> bool:
        return is_superuser(request) and super().has_delete_permission(request, obj)

    def get_deleted_objects(self, objs, request: HttpRequest) -> tuple[list, dict, set, list]:
        # Django's confirmation lists every row a tenant's deletion cascades to, one link
        # each: minutes for a tenant with a few hundred thousand flags, only to end in "no
        # permission" because history (flags, events, proposals...) is read-only here. Ask
        # that first, one EXISTS per kind, and list the rows only for a tenant without it.
        # Every model, not only the admin's: history the admin does not show (adjudication
        # events, sampling plans) is append-only in the database too, and a cascade into it
        # would be refused there (a 500) rather than here.
        perms_needed = set()
        for model in apps.get_models():
            model_admin = self.admin_site._registry.get(model)
            if model_admin is not None and model_admin.has_delete_permission(request):
                continue
            for field in model._meta.concrete_fields:
                if field.related_model is self.model and model._base_manager.filter(
                    **{f"{field.name}__in": objs}
                ).exists():
                    perms_needed.add(model._meta.verbose_name)
        if perms_needed:
            return [], {}, perms_needed, []
        return super().get_deleted_objects(objs, request)


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    list_display = ["user", "application", "role", "created_at"]
    list_filter = ["role", "application"]
    search_fields = ["user__username", "user__email", "application__slug", "application__name"]
    autocomplete_fields = ["user", "application"]


class TokenCreateForm(forms.ModelForm):
    """The admin issues application tokens and publishable keys only. A personal token lets
    its holder act as a human reviewer, so it is created by that human alone, under My tokens."""

    kind = forms.ChoiceField(
        choices=[(TokenKind.APPLICATION.value, TokenKind.APPLICATION.label),
                 (TokenKind.PUBLISHABLE.value, TokenKind.PUBLISHABLE.label)],
        initial=TokenKind.APPLICATION,
        help_text="Personal tokens are created by their own user, under My tokens (/tokens/).",
    )
    origins = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Publishable keys only: one web origin per line (https://chat.example.com), "
        "the pages that may use the key.",
    )

    class Meta:
        model = ApiToken
        fields = ["kind", "name", "application", "origins"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["application"].required = True

    def clean_origins(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get("origins", "").splitlines() if line.strip()]

    def clean(self) -> dict:
        data = super().clean()
        kind = data.get("kind")
        if kind != TokenKind.PUBLISHABLE and data.get("origins"):
            self.add_error("origins", "Only a publishable key lists origins.")
        if kind == TokenKind.PUBLISHABLE:
            try:
                data["origins"] = origins_clean(data.get("origins") or [])
            except InvalidInput as exc:
                self.add_error("origins", exc.message)
        return data

    def _post_clean(self) -> None:
        # The row is issued by token_issue (digest, prefix); set the kind the form allows so
        # the model's owner-matches-kind check sees the row that will be written.
        self.instance.kind = self.cleaned_data.get("kind") or TokenKind.APPLICATION
        self.instance.user = None
        super()._post_clean()


@admin.action(description="Revoke selected tokens", permissions=["change"])
def revoke_tokens(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    # `queryset` is the changelist's: only tokens this admin may see.
    count = 0
    for token in queryset.filter(revoked_at__isnull=True):
        token_revoke(token=token)
        count += 1
    modeladmin.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "kind", "application", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["kind", "application", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "application__slug", "user__username"]
    autocomplete_fields = ["application"]
    actions = [revoke_tokens]

    # An application token belongs to its application; a personal token to its user, whom
    # an admin of an application the user belongs to may see (and revoke the token of).
    def scope_queryset(self, request: HttpRequest, queryset: QuerySet, application_ids: frozenset[int]) -> QuerySet:
        return queryset.filter(Q(application_id__in=application_ids)
                               | Q(kind=TokenKind.PERSONAL, user_id__in=members_of(application_ids)))

    def object_in_scope(self, request: HttpRequest, obj: ApiToken, application_ids: frozenset[int]) -> bool:
        if obj.application_id is not None:
            return obj.application_id in application_ids
        return obj.user_id is not None and Membership.objects.filter(
            user_id=obj.user_id, application_id__in=application_ids).exists()

    def get_form(self, request: HttpRequest, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = TokenCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj=None) -> list[str]:
        if obj is None:
            return ["kind", "name", "application", "origins"]
        return ["kind", "name", "application", "user", "origins", "prefix", "created_at", "created_by", "last_used_at",
                "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        if obj is None:
            return []
        # revoked_at too: revoking is the list's action (token_revoke), and a revoked token stays
        # revoked; an editable date would let a staff user bring a leaked token back to life.
        return ["kind", "application", "user", "origins", "prefix", "created_at", "created_by", "last_used_at",
                "revoked_at"]

    def has_change_permission(self, request: HttpRequest, obj: ApiToken | None = None) -> bool:
        # A personal token is its user's: others may see and revoke it (the list's action), not rename it.
        if obj is not None and obj.kind == TokenKind.PERSONAL and obj.user_id != request.user.pk:
            return False
        return super().has_change_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        if not is_superuser(request) and not self.object_in_scope(request, obj, administered_application_ids(request)):
            raise PermissionDenied("You do not administer this application.")
        publishable = obj.kind == TokenKind.PUBLISHABLE
        issued = token_issue(name=obj.name, application=obj.application, created_by=request.user,
                             publishable=publishable, origins=obj.origins if publishable else None)
        # The admin's "object added" log entry needs the saved row.
        obj.pk = issued.token.pk
        obj.__dict__.update({k: v for k, v in issued.token.__dict__.items() if not k.startswith("_")})
        # Kept on this request only, for response_add: never in the session, a message or a log.
        request._issued_token_secret = issued.secret

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue=None) -> HttpResponse:
        """The secret is shown on this response itself, once: Django's redirect would carry it
        in the messages cookie (signed, not encrypted) or the session."""
        secret = getattr(request, "_issued_token_secret", None)
        if secret is None:  # nothing was issued on this request
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": "Token created",
            "opts": self.opts,
            "token": obj,
            "secret": secret,
        }
        response = TemplateResponse(request, "admin/consoles/apitoken/issued.html", context)
        add_never_cache_headers(response)
        return response

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # Revoke instead: a deleted token would lose its audit trail.
        return False


# --- admins registered by Django and by libraries, scoped the same way -----------------


User = get_user_model()
admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class ScopedUserAdmin(TenantScopedAdminMixin, UserAdmin):
    """Application admins see the members of their applications, read-only: changing a user
    (a password, staff or superuser status, permissions) would reach every application the
    user belongs to, so it is a superuser's."""

    def scope_queryset(self, request: HttpRequest, queryset: QuerySet, application_ids: frozenset[int]) -> QuerySet:
        return queryset.filter(pk__in=members_of(application_ids))

    def object_in_scope(self, request: HttpRequest, obj, application_ids: frozenset[int]) -> bool:
        return obj.pk is not None and Membership.objects.filter(user_id=obj.pk, application_id__in=application_ids).exists()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request) and super().has_add_permission(request)

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return is_superuser(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return is_superuser(request) and super().has_delete_permission(request, obj)

    def get_fieldsets(self, request: HttpRequest, obj=None):
        if is_superuser(request) or obj is None:
            return super().get_fieldsets(request, obj)
        return [(None, {"fields": ["username", "first_name", "last_name", "email", "is_active", "last_login"]})]


@admin.register(Group)
class ScopedGroupAdmin(TenantScopedAdminMixin, GroupAdmin):
    superuser_only = True  # a group's model permissions reach every tenant


class _AxesScope(TenantScopedAdminMixin):
    """Log-in records name a username, not an application: an application admin sees (and
    unlocks, by deleting the attempt) those of their applications' members only."""

    tenant_path = None

    def scope_queryset(self, request: HttpRequest, queryset: QuerySet, application_ids: frozenset[int]) -> QuerySet:
        usernames = User._default_manager.filter(pk__in=members_of(application_ids)).values(User.USERNAME_FIELD)
        return queryset.filter(username__in=usernames)

    def object_in_scope(self, request: HttpRequest, obj, application_ids: frozenset[int]) -> bool:
        return self.scope_queryset(request, type(obj)._default_manager.filter(pk=obj.pk), application_ids).exists()

    def get_actions(self, request: HttpRequest, action_location=admin.ActionLocation.CHANGE_LIST) -> dict:
        actions = super().get_actions(request, action_location=action_location)
        if not is_superuser(request):
            # "Clean up expired attempts" deletes every user's, not only those listed.
            actions.pop("cleanup_expired_attempts", None)
        return actions


for _model in (AccessAttempt, AccessLog, AccessFailureLog):
    rescope(_model, mixin=_AxesScope)


class _SuperuserOnlyScope(TenantScopedAdminMixin):
    """Rows of no one tenant that can name every tenant's work (the task worker's results
    carry webhook delivery ids): superusers only."""

    tenant_path = None
    superuser_only = True


rescope(DBTaskResult, mixin=_SuperuserOnlyScope)


from . import webhook_admin  # noqa: E402, F401 - registers the webhook endpoints
