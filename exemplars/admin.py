"""Settings and detector profiles are editable here too; stored banks are derived data (read-only)."""

from django.contrib import admin
from django.http import HttpRequest

from .models import BankBuild, BankSettings, DetectorProfile


@admin.register(BankSettings)
class BankSettingsAdmin(admin.ModelAdmin):
    list_display = ["application", "enabled", "tau", "updated_at"]
    list_filter = ["enabled"]
    list_select_related = ["application"]
    readonly_fields = ["generation", "updated_at", "updated_by"]


@admin.register(DetectorProfile)
class DetectorProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "application", "axes", "updated_at"]
    list_filter = ["application"]
    list_select_related = ["application"]
    search_fields = ["name", "application__slug"]


@admin.register(BankBuild)
class BankBuildAdmin(admin.ModelAdmin):
    list_display = ["profile", "application", "short_version", "exemplar_count", "flag_count", "built_at",
                    "build_seconds"]
    list_select_related = ["profile", "application"]
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
