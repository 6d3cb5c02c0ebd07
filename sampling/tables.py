"""django-tables2 tables of the sampling screens."""

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html

from consoles.timestamps import on_screen

from .models import SamplingPlan


class PlanTable(tables.Table):
    created_at = tables.Column(verbose_name="Made")
    created_by = tables.Column(verbose_name="By", default="command", orderable=False)
    budget = tables.Column(orderable=False)
    max_per_pattern = tables.Column(verbose_name="Per pattern", orderable=False)
    selected_count = tables.Column(verbose_name="Selected", orderable=False)
    capped_count = tables.Column(verbose_name="Left out by cap", orderable=False)
    enqueued_at = tables.Column(verbose_name="Enqueued", orderable=False, default="not yet")
    policy = tables.Column(empty_values=(), orderable=False, accessor="policy_name")

    class Meta:
        model = SamplingPlan
        fields = (
            "created_at", "created_by", "budget", "max_per_pattern", "selected_count",
            "capped_count", "enqueued_at", "policy",
        )
        orderable = False
        attrs = {"data-testid": "plans"}

    def __init__(self, *args, app_slug: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.app_slug = app_slug

    def render_created_at(self, value, record: SamplingPlan) -> str:
        url = reverse("sampling:plan", args=[self.app_slug, record.pk])
        return format_html('<a href="{}">{}</a>', url, on_screen(value))

    def render_enqueued_at(self, value) -> str:
        return on_screen(value)

    def render_policy(self, record: SamplingPlan) -> str:
        return f"{record.policy_name} v{record.policy_version}"
