"""Tenant scoping for the Django admin (STYLE.md habit 11): one mixin for every ModelAdmin.

A superuser sees and edits everything. Any other staff user is an *application admin*: on top
of Django's model permissions, they see, filter, pick in forms and change only the rows of the
applications they administer (a `Membership` with role admin). Another tenant's row is a 404
on its change, delete and history URLs, is absent from lists, list filters, autocompletes and
foreign-key choices, and a form naming its id is refused. Rows of no application are for
superusers only.

Apply it to every ModelAdmin and inline, first in the bases:

    from consoles.admin_scope import TenantScopedAdminMixin

    @admin.register(WebhookEndpoint)
    class WebhookEndpointAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
        tenant_path = "application"   # lookup from a row to its Application (the default);
                                      # "endpoint__application" for a row one hop further,
                                      # None for rows of no tenant (superusers only)

A row whose owner is not one lookup (a personal token, a user, a log-in attempt) overrides
`scope_queryset` and `object_in_scope` together. A ModelAdmin a library registers is wrapped
with `rescope(Model)`. `consoles/tests/test_admin_tenancy.py` walks `admin.site._registry`
and fails for any ModelAdmin or inline without this mixin.
"""

from collections.abc import Sequence

from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin, InlineModelAdmin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import Http404, HttpRequest

from .models import Application, Membership, Role


def is_superuser(request: HttpRequest) -> bool:
    user = request.user
    return bool(user.is_active and user.is_superuser)


def administered_application_ids(request: HttpRequest) -> frozenset[int]:
    """The applications the request's user administers; read once per request."""
    cached = getattr(request, "_administered_application_ids", None)
    if cached is None:
        user = request.user
        if not (user.is_authenticated and user.is_active and user.is_staff):
            cached = frozenset()
        else:
            cached = frozenset(
                Membership.objects.filter(user=user, role=Role.ADMIN).values_list("application_id", flat=True)
            )
        request._administered_application_ids = cached
    return cached


def members_of(application_ids: frozenset[int]) -> QuerySet:
    """User ids with any membership in these applications (a subquery, not a list)."""
    return Membership.objects.filter(application_id__in=application_ids).values("user_id")


def scoped_queryset_for(model: type[models.Model], request: HttpRequest, admin_site: admin.AdminSite) -> QuerySet:
    """The rows of `model` the request's user may see: what its own (scoped) ModelAdmin
    lists, else the rows of the administered applications; nothing when neither applies."""
    queryset = model._default_manager.all()
    if is_superuser(request):
        return queryset
    related_admin = admin_site._registry.get(model)
    if isinstance(related_admin, TenantScopedAdminMixin):
        return related_admin.get_queryset(request)
    ids = administered_application_ids(request)
    if model is Application:
        return queryset.filter(pk__in=ids)
    if model is get_user_model():
        return queryset.filter(pk__in=members_of(ids))
    if any(f.name == "application" and f.related_model is Application for f in model._meta.concrete_fields):
        return queryset.filter(application_id__in=ids)
    return queryset.none()


class ScopedRelatedFieldListFilter(admin.RelatedFieldListFilter):
    """A foreign-key list filter that offers only the rows the staff user may see
    (Django's own offers every row of the related table: every tenant's name)."""

    def field_choices(self, field, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple]:
        queryset = scoped_queryset_for(field.related_model, request, model_admin.admin_site)
        ordering = self.field_admin_ordering(field, request, model_admin)
        if ordering:
            queryset = queryset.order_by(*ordering)
        return [(obj.pk, str(obj)) for obj in queryset.complex_filter(field.get_limit_choices_to())]


class TenantScopedAdminMixin:
    """Scopes a ModelAdmin or an inline to the applications the staff user administers.

    See the module docstring; `tenant_path` is the lookup from a row to its Application.
    """

    tenant_path: str | None = "application"
    superuser_only: bool = False  # rows that reach every tenant (groups and their permissions)

    # --- which rows -----------------------------------------------------------------

    def scope_queryset(self, request: HttpRequest, queryset: QuerySet, application_ids: frozenset[int]) -> QuerySet:
        if self.tenant_path is None or self.superuser_only:
            return queryset.none()
        return queryset.filter(**{f"{self.tenant_path}__in": application_ids})

    def object_in_scope(self, request: HttpRequest, obj: models.Model, application_ids: frozenset[int]) -> bool:
        """Whether `obj` (saved or about to be) belongs to an administered application."""
        if self.tenant_path is None:
            return False
        *hops, last = self.tenant_path.split("__")
        target = obj
        for hop in hops:
            target = getattr(target, hop, None)
            if target is None:
                return False
        owner = target.pk if last == "pk" else getattr(target, f"{last}_id", None)
        return owner in application_ids

    def _allowed(self, request: HttpRequest, obj: models.Model | None) -> bool:
        if is_superuser(request):
            return True
        ids = administered_application_ids(request)
        if not ids or self.superuser_only:
            return False
        # An inline is asked about its parent, which the parent's admin has already scoped.
        if obj is None or isinstance(self, InlineModelAdmin):
            return True
        return self.object_in_scope(request, obj, ids)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if is_superuser(request):
            return queryset
        return self.scope_queryset(request, queryset, administered_application_ids(request))

    # --- what forms offer -------------------------------------------------------------

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        if not is_superuser(request) and "queryset" not in kwargs:
            kwargs["queryset"] = scoped_queryset_for(db_field.related_model, request, self.admin_site)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request: HttpRequest, **kwargs):
        if not is_superuser(request) and "queryset" not in kwargs:
            kwargs["queryset"] = scoped_queryset_for(db_field.related_model, request, self.admin_site)
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_list_filter(self, request: HttpRequest) -> Sequence:
        scoped = []
        for item in super().get_list_filter(request):
            if isinstance(item, str):
                field = _relation(self.model, item)
                if field is not None:
                    item = (item, ScopedRelatedFieldListFilter)
            elif isinstance(item, tuple) and item[1] is admin.RelatedFieldListFilter:
                item = (item[0], ScopedRelatedFieldListFilter)
            scoped.append(item)
        return scoped

    # --- what the user may do ---------------------------------------------------------

    def has_module_permission(self, request: HttpRequest) -> bool:
        return super().has_module_permission(request) and self._allowed(request, None)

    def has_view_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return super().has_view_permission(request, obj) and self._allowed(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._allowed(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: models.Model | None = None) -> bool:
        return super().has_delete_permission(request, obj) and self._allowed(request, obj)

    def has_add_permission(self, request: HttpRequest, *args) -> bool:
        # ModelAdmin takes (request), an inline (request, obj): pass on what came.
        return super().has_add_permission(request, *args) and self._allowed(request, None)

    # --- writes -----------------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: models.Model, form, change: bool) -> None:
        # The forms offer only administered applications; this holds for any field a form
        # does not show (or a subclass forgets to limit).
        if not is_superuser(request) and not self.object_in_scope(request, obj, administered_application_ids(request)):
            raise PermissionDenied("You do not administer this application.")
        super().save_model(request, obj, form, change)

    def _get_obj_does_not_exist_redirect(self, request: HttpRequest, opts, object_id: str):
        # Django redirects to the index saying the object "doesn't exist": another tenant's
        # object is a plain 404, the same as a missing one.
        raise Http404("Not found.")


def _relation(model: type[models.Model], path: str) -> models.Field | None:
    """The relation field `path` names on `model` (a plain field name), else None."""
    if "__" in path:
        return None
    try:
        field = model._meta.get_field(path)
    except Exception:  # noqa: BLE001 - a callable or a name the admin resolves itself
        return None
    return field if field.is_relation and field.related_model is not None else None


class TenantScopedAdmin(TenantScopedAdminMixin, admin.ModelAdmin):
    """A ModelAdmin scoped by `tenant_path` (default: the row's `application`)."""


def rescope(model: type[models.Model], *, mixin: type | None = None, site: admin.AdminSite = admin.site,
            **attributes) -> type:
    """Re-register a ModelAdmin a library registered, with the mixin (or a subclass of it,
    `mixin`) in front of it. `attributes` set `tenant_path` or override methods.
    """
    original = type(site._registry[model])
    site.unregister(model)
    scoped = type(f"Scoped{original.__name__}", (mixin or TenantScopedAdminMixin, original), {
        "__module__": __name__, **attributes,
    })
    site.register(model, scoped)
    return scoped


def is_scoped(model_admin: BaseModelAdmin) -> bool:
    return isinstance(model_admin, TenantScopedAdminMixin)
