"""The triage queue table (rows come pre-paged by keyset from the selector).

django-tables2 owns the columns, headers and the sort links; the body is
rendered by `feedback/flag_table.html` straight from the records, because
tables2's generic per-cell rendering (signature inspection, a template per
date cell) cost more than the whole query at a million flags.
"""

import django_tables2 as tables
from django.urls import reverse

from .models import Flag

AUTHOR_LABELS = {"end_user": "End user", "operator": "Operator", "agent": "Automated agent"}
AUTHOR_SHORT = {"end_user": "end user", "operator": "operator", "agent": "agent"}
NOTE_LENGTH = 48


class FlagTable(tables.Table):
    select = tables.Column(verbose_name="Select", accessor="public_id", orderable=False)
    public_id = tables.Column(verbose_name="Flag", orderable=False)
    status = tables.Column(orderable=False)
    region = tables.Column(orderable=False)
    problem = tables.Column(orderable=False)
    axis = tables.Column(orderable=False)
    author_kind = tables.Column(verbose_name="Flagged by", orderable=False)
    note = tables.Column(orderable=False)
    created = tables.Column(accessor="created_at", verbose_name="Created", order_by=("created_at",))

    class Meta:
        model = Flag
        fields = ()
        # Created (the sort key) beside the id. Beside an open flag on a laptop
        # screen, region, author and note step aside (feedback.css): they come last.
        sequence = ("select", "public_id", "created", "status", "region", "problem", "axis", "author_kind", "note")
        order_by_field = "sort"
        empty_text = "No flags match these filters."
        template_name = "feedback/flag_table.html"

    def __init__(self, data: list[Flag], *args, application, querystring: str = "",
                 current_pk: int | None = None, **kwargs) -> None:
        self.application = application
        self.current_pk = current_pk
        decorate_rows(data, application=application, querystring=querystring)
        self.records = data
        super().__init__(data, *args, **kwargs)
        # Asked once here, not per row in the template (BoundColumns are rebuilt on each access).
        self.show_select = "select" not in (self.exclude or ())


def decorate_rows(data: list[Flag], *, application, querystring: str = "") -> list[Flag]:
    """What a row shows beyond the model's fields (also for one row swapped after a decision)."""
    problem_labels = {p["key"]: p["label"] for p in application.problems}
    detail = reverse("feedback:detail", args=[application.slug, "fb_0"])[: -len("fb_0/")]
    suffix = f"?{querystring}" if querystring else ""
    for flag in data:
        flag.detail_url = f"{detail}{flag.public_id}/{suffix}"
        flag.problem_label = (
            f"capture: {flag.get_capture_reason_display().lower()}" if flag.capture_reason
            else problem_labels.get(flag.problem, flag.problem)
        )
        flag.author_short = AUTHOR_SHORT.get(flag.author_kind, flag.author_kind)
        flag.note_short = flag.note if len(flag.note) <= NOTE_LENGTH else flag.note[: NOTE_LENGTH - 1] + "…"
    return data
