"""The triage queue table (rows come pre-paged by keyset from the selector).

django-tables2 owns the columns, headers and the sort links; the body is
rendered by `feedback/flag_table.html` straight from the records, because
tables2's generic per-cell rendering (signature inspection, a template per
date cell) cost more than the whole query at a million flags.
"""

import django_tables2 as tables
from django.urls import reverse
from django.utils.timezone import localtime

from consoles.text import humanise

from .models import Flag

AUTHOR_LABELS = {"end_user": "End user", "operator": "Operator", "agent": "Automated agent"}
AUTHOR_SHORT = {"end_user": "end user", "operator": "operator", "agent": "agent"}
NOTE_LENGTH = 48
NOTE_TITLE = 500  # the note in full on hover, up to this many characters
# The columns a row reads (row_views); the queue reads no others, so a page
# never carries its flags' prompts and answers.
ROW_FIELDS = ("id", "public_id", "application", "status", "region", "problem", "axis", "author_kind",
              "capture_reason", "note", "created_at")


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
        self.records = row_views(data, application=application, querystring=querystring)
        super().__init__(data, *args, **kwargs)
        # Asked once here, not per row in the template (BoundColumns are rebuilt on each access).
        self.show_select = "select" not in (self.exclude or ())


def row_views(flags: list[Flag], *, application, querystring: str = "") -> list[dict]:
    """What each row shows, as `flag_row.html` reads it (also for one row swapped after
    a decision). Plain dicts of words made once here: the template engine finds a
    dict's keys at once, and template filters cost a page of 50 rows a third of its
    rendering."""
    problem_labels = {p["key"]: p["label"] for p in application.problems}
    detail = reverse("feedback:detail", args=[application.slug, "fb_0"])[: -len("fb_0/")]
    suffix = f"?{querystring}" if querystring else ""
    return [{
        "pk": flag.pk,
        "public_id": flag.public_id,
        "is_capture": flag.is_capture,
        "status": flag.status,
        "status_label": flag.get_status_display(),
        "region": flag.region,
        "detail_url": f"{detail}{flag.public_id}/{suffix}",
        "created_label": localtime(flag.created_at).strftime("%Y-%m-%d %H:%M"),
        "problem_label": (f"capture: {flag.get_capture_reason_display().lower()}" if flag.capture_reason
                          else problem_labels.get(flag.problem, flag.problem)),
        "axis_label": humanise(flag.axis) if flag.axis else "—",
        "author_short": AUTHOR_SHORT.get(flag.author_kind, flag.author_kind),
        "note": flag.note,
        "note_short": flag.note if len(flag.note) <= NOTE_LENGTH else flag.note[: NOTE_LENGTH - 1] + "…",
        "note_title": flag.note if len(flag.note) <= NOTE_TITLE else flag.note[: NOTE_TITLE - 1] + "…",
    } for flag in flags]
