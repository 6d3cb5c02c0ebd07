"""The triage queue table (rows come pre-paged by keyset from the selector)."""

import django_tables2 as tables
from django.urls import reverse
from django.utils.html import format_html

from .models import Flag

AUTHOR_LABELS = {"end_user": "End user", "operator": "Operator", "agent": "Automated agent"}
AUTHOR_SHORT = {"end_user": "end user", "operator": "operator", "agent": "agent"}


class FlagTable(tables.Table):
    select = tables.CheckBoxColumn(
        accessor="public_id",
        attrs={"input": {"form": "bulk-form", "name": "ids", "aria-label": "Select"},
               "th__input": {"hidden": True, "aria-hidden": "true"}},
        orderable=False,
    )
    public_id = tables.Column(verbose_name="Flag", orderable=False)
    status = tables.Column(orderable=False)
    region = tables.Column(orderable=False)
    problem = tables.Column(orderable=False, empty_values=())
    axis = tables.Column(orderable=False)
    author_kind = tables.Column(verbose_name="Flagged by", orderable=False)
    note = tables.Column(orderable=False)
    created = tables.DateTimeColumn(accessor="created_at", verbose_name="Created", format="Y-m-d H:i",
                                    order_by=("created_at",))

    class Meta:
        model = Flag
        fields = ()
        sequence = ("select", "public_id", "status", "region", "problem", "axis", "author_kind", "note", "created")
        order_by_field = "sort"
        empty_text = "No flags match these filters."
        attrs = {"class": "queue-table", "data-testid": "queue-table"}
        row_attrs = {
            "data-flag-id": lambda record: record.public_id,
            "aria-selected": lambda record, table: "true" if record.pk == table.current_pk else "false",
        }

    def __init__(self, *args, application, querystring: str = "", current_pk: int | None = None, **kwargs):
        self.application = application
        self.querystring = querystring
        self.current_pk = current_pk
        self.problem_labels = {p["key"]: p["label"] for p in application.problems}
        super().__init__(*args, **kwargs)

    def render_public_id(self, record: Flag) -> str:
        url = reverse("feedback:detail", args=[self.application.slug, record.public_id])
        if self.querystring:
            url = f"{url}?{self.querystring}"
        return format_html(
            '<a href="{}" hx-get="{}" hx-target="#detail" hx-swap="innerHTML" data-row-link>{}</a>',
            url, url, record.public_id,
        )

    def render_status(self, record: Flag) -> str:
        return format_html('<span class="badge {}">{}</span>', record.status, record.status)

    def render_problem(self, value: str, record: Flag) -> str:
        if record.capture_reason:
            return f"capture: {record.get_capture_reason_display().lower()}"
        return self.problem_labels.get(value, value)

    # Columns with choices receive the long display value; the short key reads better here.
    def render_author_kind(self, record: Flag) -> str:
        return AUTHOR_SHORT.get(record.author_kind, record.author_kind)

    def render_region(self, record: Flag) -> str:
        return record.region

    def render_note(self, value: str) -> str:
        return value if len(value) <= 48 else value[:47] + "…"
