"""The approved set as the exemplar bank reads it."""

from collections.abc import Iterable, Iterator

from django.db import connection
from django.db.models import OuterRef, Subquery

from consoles.models import Application

from ..models import (
    Flag,
    FlagReview,
    FlagStatus,
)


def approved_set_marker_sql(application_id_sql: str = "%s") -> str:
    """Two scalar subqueries (latest update of an approved flag, latest review)
    for the application whose id is `application_id_sql`: a parameter
    placeholder, or a column of an outer query (the score endpoint folds this
    into its one query). Never user input: table names come from the models.
    """
    flags, reviews = Flag._meta.db_table, FlagReview._meta.db_table
    approved = FlagStatus.APPROVED.value
    return (
        f"(SELECT updated_at FROM {flags} WHERE application_id = {application_id_sql} "  # noqa: S608
        f"AND status = '{approved}' ORDER BY updated_at DESC LIMIT 1), "
        f"(SELECT created_at FROM {reviews} WHERE application_id = {application_id_sql} "  # noqa: S608
        "ORDER BY created_at DESC LIMIT 1)"
    )


def approved_set_marker(*, application: Application) -> tuple[object, object]:
    """A cheap marker of the approved set: (latest update of an approved flag,
    latest review decision), two index lookups in one round trip whatever the
    table size. The values are opaque (compare them, don't compute with them).

    A flag enters the approved set, or changes while in it, only through a
    review that stamps `updated_at`; it leaves it only through a review (a new
    FlagReview) or a deletion (erasure / retention, which call the erasure
    hooks). So when neither value moved, the approved set did not change.
    Served by the indexes fb_flag_status_updated and fb_review_app_created.

    Hand-built SQL, the one place feedback keeps it: the score endpoint runs it
    on every call (folded into exemplars' score_context), and compiling the ORM
    statement and building its rows costs 4-28x the hand-built read
    (`python -m bench selectors`: 23 us against 638 us on SQLite, 287 us
    against 1,217 us on PostgreSQL). `approved_set_marker_orm` is the same read
    through the ORM; a test holds the two equal on both databases.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + approved_set_marker_sql("%s"), [application.pk, application.pk])
        latest_approved, latest_review = cursor.fetchone()
    return latest_approved, latest_review


def approved_set_marker_subqueries(application_id) -> tuple[Subquery, Subquery]:
    """The marker's two reads as ORM subqueries; `application_id` is a value or an OuterRef."""
    latest_approved = (
        Flag.objects.filter(application_id=application_id, status=FlagStatus.APPROVED)
        .order_by("-updated_at").values("updated_at")[:1]
    )
    latest_review = FlagReview.objects.filter(application_id=application_id).order_by("-created_at").values("created_at")[:1]
    return Subquery(latest_approved), Subquery(latest_review)


def approved_set_marker_orm(*, application: Application) -> tuple[object, object]:
    """approved_set_marker through the ORM (the reference its test and bench compare against).

    Values come back as datetimes where the hand-built read gives SQLite's own
    text: the same instants, compared as such.
    """
    latest_approved, latest_review = approved_set_marker_subqueries(OuterRef("pk"))
    row = Application.objects.filter(pk=application.pk).values_list(latest_approved, latest_review).get()
    return row[0], row[1]


BANK_COLUMNS = ("pk", "public_id", "region", "axis", "verdict", "prompt", "answer", "twin_prompt",
                "twin_answer", "weight")


def approved_bank_rows(
    *, application: Application, axes: Iterable[str], chunk_size: int = 2000,
    public_ids: list[str] | None = None, after: str | None = None, limit: int | None = None,
) -> Iterator[tuple]:
    """Approved flags whose axis is one of `axes`, as tuples of BANK_COLUMNS, by public id.

    `public_ids` keeps only those flags; `after` and `limit` read one page
    (public ids after `after`) for a detector fetching what it must embed.
    """
    rows = Flag.objects.filter(application=application, status=FlagStatus.APPROVED, axis__in=list(axes))
    if public_ids is not None:
        rows = rows.filter(public_id__in=public_ids)
    if after is not None:
        rows = rows.filter(public_id__gt=after)
    rows = rows.exclude(verdict="").order_by("public_id").values_list(*BANK_COLUMNS)
    if limit is not None:
        return iter(rows[:limit])
    return rows.iterator(chunk_size=chunk_size)


def approved_count_outside(*, application: Application, axes: Iterable[str]) -> int:
    """Approved flags whose axis is not one of `axes` (skipped by a detector that lacks it)."""
    return (
        Flag.objects.filter(application=application, status=FlagStatus.APPROVED)
        .exclude(axis__in=list(axes)).count()
    )
