"""Read-only admin views: flags change only through the services (and their events)."""

from django.contrib import admin
from django.http import HttpRequest

from consoles.admin_scope import TenantScopedAdmin

from .models import Flag, FlagEvent, FlagReview


class ReadOnlyAdmin(TenantScopedAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Flag)
class FlagAdmin(ReadOnlyAdmin):
    # Newest first by key: the models' (created_at, id) orderings have an index only
    # under an application, so the unfiltered list sorted every row (1.5 s at 500k flags).
    ordering = ["-id"]
    list_display = ["public_id", "application", "status", "region", "problem", "axis", "author_kind", "created_at"]
    list_filter = ["application", "status", "region", "author_kind"]
    search_fields = ["public_id", "message_id"]
    show_full_result_count = False
    list_select_related = ["application"]


@admin.register(FlagReview)
class FlagReviewAdmin(ReadOnlyAdmin):
    # Newest first by key: the models' (created_at, id) orderings have an index only
    # under an application, so the unfiltered list sorted every row (1.5 s at 500k flags).
    ordering = ["-id"]
    list_display = ["flag", "reviewer", "from_status", "to_status", "created_at"]
    list_filter = ["application", "to_status"]
    search_fields = ["flag__public_id", "reviewer__username"]
    list_select_related = ["flag", "reviewer"]
    show_full_result_count = False


@admin.register(FlagEvent)
class FlagEventAdmin(ReadOnlyAdmin):
    # Newest first by key: the models' (created_at, id) orderings have an index only
    # under an application, so the unfiltered list sorted every row (1.5 s at 500k flags).
    ordering = ["-id"]
    list_display = ["flag", "action", "from_status", "to_status", "actor_kind", "created_at"]
    list_filter = ["application", "action", "actor_kind"]
    search_fields = ["flag__public_id"]
    list_select_related = ["flag"]
    show_full_result_count = False
