"""Settings and detector profiles are editable here too; stored banks are derived data (read-only)."""

from django.contrib import admin
from django.http import HttpRequest

from consoles.admin_scope import TenantScopedAdmin

from .models import BankBuild, BankSettings, DetectorProfile


@admin.register(BankSettings)
class BankSettingsAdmin(TenantScopedAdmin):
    list_display = ["application", "enabled", "tau", "updated_at"]
    list_filter = ["enabled"]
    list_select_related = ["application"]
    readonly_fields = ["generation", "updated_at", "updated_by"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        # Settings belong to one application for good (the score path finds them by it).
        return [*self.readonly_fields, "application"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: BankSettings, form, change: bool) -> None:
        # As the bank screen's bank_settings_update does: "updated by" names whoever saved last.
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(DetectorProfile)
class DetectorProfileAdmin(TenantScopedAdmin):
    list_display = ["name", "application", "axes", "updated_at"]
    list_filter = ["application"]
    list_select_related = ["application"]
    search_fields = ["name", "application__slug"]

    def get_readonly_fields(self, request: HttpRequest, obj=None) -> list[str]:
        # A profile (and its bank of that tenant's flags) never moves to another tenant;
        # profile_save refuses it too.
        return ["application"] if obj is not None else []


@admin.register(BankBuild)
class BankBuildAdmin(TenantScopedAdmin):
    list_display = ["profile", "application", "short_version", "exemplar_count", "flag_count", "built_at",
                    "build_seconds"]
    # A profile's __str__ names its application's slug.
    list_select_related = ["profile__application", "application"]
    exclude = ["payload", "flag_pks"]

    def get_queryset(self, request: HttpRequest):
        return super().get_queryset(request).defer("payload", "flag_pks")

    @admin.display(description="version")
    def short_version(self, obj: BankBuild) -> str:
        return obj.version[:12]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
