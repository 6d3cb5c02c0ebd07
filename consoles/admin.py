from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from .errors import InvalidInput
from .models import ApiToken, Application, Membership, TokenKind
from .origins import origins_clean
from .services import token_issue, token_revoke


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        # Each row shows the membership's __str__ (user and application slug).
        return super().get_queryset(request).select_related("user", "application")


class ApplicationTokenInline(admin.TabularInline):
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


@admin.register(Application)
class ApplicationAdmin(admin.ModelAdmin):
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

    def get_deleted_objects(self, objs, request: HttpRequest) -> tuple[list, dict, set, list]:
        # Django's confirmation lists every row a tenant's deletion cascades to, one link
        # each: minutes for a tenant with a few hundred thousand flags, only to end in "no
        # permission" because history (flags, events, proposals...) is read-only here. Ask
        # that first, one EXISTS per kind, and list the rows only for a tenant without it.
        perms_needed = set()
        for model, model_admin in self.admin_site._registry.items():
            if model_admin.has_delete_permission(request):
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
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "application", "role", "created_at"]
    list_filter = ["role", "application"]
    search_fields = ["user__username", "user__email", "application__slug", "application__name"]
    autocomplete_fields = ["user", "application"]


class TokenCreateForm(forms.ModelForm):
    origins = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Publishable keys only: one web origin per line (https://chat.example.com), "
        "the pages that may use the key.",
    )

    class Meta:
        model = ApiToken
        fields = ["kind", "name", "application", "user", "origins"]

    def clean_origins(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get("origins", "").splitlines() if line.strip()]

    def clean(self) -> dict:
        data = super().clean()
        kind = data.get("kind")
        if kind != TokenKind.PUBLISHABLE and data.get("origins"):
            self.add_error("origins", "Only a publishable key lists origins.")
        if kind == TokenKind.PUBLISHABLE:
            if not data.get("application") or data.get("user"):
                raise forms.ValidationError("A publishable key needs an application and no user.")
            try:
                data["origins"] = origins_clean(data.get("origins") or [])
            except InvalidInput as exc:
                self.add_error("origins", exc.message)
        if kind == TokenKind.APPLICATION and (not data.get("application") or data.get("user")):
            raise forms.ValidationError("An application token needs an application and no user.")
        if kind == TokenKind.PERSONAL and (not data.get("user") or data.get("application")):
            raise forms.ValidationError("A personal token needs a user and no application.")
        return data


@admin.action(description="Revoke selected tokens")
def revoke_tokens(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    count = 0
    for token in queryset.filter(revoked_at__isnull=True):
        token_revoke(token=token)
        count += 1
    modeladmin.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "application", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["kind", "application", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "application__slug", "user__username"]
    autocomplete_fields = ["application", "user"]
    actions = [revoke_tokens]

    def get_form(self, request: HttpRequest, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = TokenCreateForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj=None) -> list[str]:
        if obj is None:
            return ["kind", "name", "application", "user", "origins"]
        return ["kind", "name", "application", "user", "origins", "prefix", "created_at", "created_by", "last_used_at",
                "revoked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        if obj is None:
            return []
        # revoked_at too: revoking is the list's action (token_revoke), and a revoked token stays
        # revoked; an editable date would let a staff user bring a leaked token back to life.
        return ["kind", "application", "user", "origins", "prefix", "created_at", "created_by", "last_used_at",
                "revoked_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        publishable = obj.kind == TokenKind.PUBLISHABLE
        issued = token_issue(
            name=obj.name,
            application=obj.application if obj.kind in (TokenKind.APPLICATION, TokenKind.PUBLISHABLE) else None,
            user=obj.user if obj.kind == TokenKind.PERSONAL else None,
            created_by=request.user,
            publishable=publishable,
            origins=obj.origins if publishable else None,
        )
        # The admin's "object added" redirect needs the saved row.
        obj.pk = issued.token.pk
        obj.__dict__.update({k: v for k, v in issued.token.__dict__.items() if not k.startswith("_")})
        messages.warning(
            request,
            f"Token {issued.token.name!r} created. Copy it now, it is not shown again: {issued.secret}",
        )

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        # Revoke instead: a deleted token would lose its audit trail.
        return False
