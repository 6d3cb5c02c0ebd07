"""Reads of the feedback app; each takes the application explicitly.

The queue pages by keyset on (created_at, id): a page costs an index range
scan of one page whatever the table size, and nothing counts the table.
"""

from collections.abc import Iterable, Iterator
from contextlib import closing, nullcontext
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from consoles.dbfunctions import UtcDay, as_date, day_bounds, day_out_of_reach
from consoles.errors import InvalidInput, NotFound
from consoles.models import Application
from consoles.pagination import Keyset, Page, keyset_page

from .drafts import ReviewedItem
from .exports import (
    EXPORT_COLUMNS,
    encoded_batches,
    id_set_intersection,
)
from .history import history_days
from .models import (
    AuthorKind,
    CaseFeedback,
    Disposition,
    ErasureRecord,
    ExportManifest,
    Flag,
    FlagEvent,
    FlagReview,
    FlagStatus,
    Region,
)
from .search import MAX_QUERY_LENGTH, FlagTextMatch, search_terms

PAGE_SIZE = 50
ORDERS = ("-created", "created")


@dataclass(frozen=True)
class FlagFilters:
    status: str = ""
    axis: str = ""
    region: str = ""
    problem: str = ""
    author_kind: str = ""
    created_from: date | None = None
    created_to: date | None = None  # inclusive
    # Free text over prompt, answer and note (feedback.search: every word begins a word).
    q: str = ""

    def validate(self, application: Application) -> None:
        errors: dict[str, str] = {}
        if self.status and self.status not in FlagStatus.values:
            errors["status"] = f"Use one of {', '.join(FlagStatus.values)}."
        if self.axis and self.axis not in application.axes:
            errors["axis"] = f"Unknown axis {self.axis!r}."
        if self.region and self.region not in Region.values:
            errors["region"] = f"Use one of {', '.join(Region.values)}."
        if self.problem and self.problem not in application.problem_keys:
            errors["problem"] = f"Unknown problem {self.problem!r}."
        if self.author_kind and self.author_kind not in AuthorKind.values:
            errors["author_kind"] = f"Use one of {', '.join(AuthorKind.values)}."
        for name in ("created_from", "created_to"):
            day = getattr(self, name)
            if day is not None and (why := day_out_of_reach(day)):
                errors[name] = why
        if self.created_from and self.created_to and self.created_from > self.created_to and "created_to" not in errors:
            errors["created_to"] = "The end is before the start."
        if len(self.q) > MAX_QUERY_LENGTH:
            errors["q"] = f"Search for at most {MAX_QUERY_LENGTH} characters."
        elif self.q.strip() and not search_terms(self.q):
            errors["q"] = "Search for a word: letters or digits."
        if errors:
            raise InvalidInput("Invalid filter.", fields=errors)


@dataclass
class FlagPage(Page):
    order: str = "-created"
    filters: FlagFilters = field(default_factory=FlagFilters)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def flag_list(*, application: Application, filters: FlagFilters | None = None) -> QuerySet[Flag]:
    """The application's flags under `filters` (every acknowledged flag is a row:
    it was written whole before its answer)."""
    filters = filters or FlagFilters()
    qs = Flag.objects.filter(application=application)
    for name in ("status", "axis", "region", "problem", "author_kind"):
        value = getattr(filters, name)
        if value:
            qs = qs.filter(**{name: value})
    if filters.created_from:
        qs = qs.filter(created_at__gte=_day_start(filters.created_from))
    if filters.created_to:
        qs = qs.filter(created_at__lt=_day_start(filters.created_to + timedelta(days=1)))
    if terms := search_terms(filters.q):
        qs = qs.filter(FlagTextMatch(terms))
    return qs


# Each sort order is its own scope: a cursor taken under the other one starts over.
FLAG_KEYSETS = {order: Keyset(("created_at", "id"), descending=order == "-created", scope=order) for order in ORDERS}


def flag_page(
    *,
    application: Application,
    filters: FlagFilters | None = None,
    order: str = "-created",
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
) -> FlagPage:
    """One page of the queue, newest first by default, by keyset."""
    filters = filters or FlagFilters()
    filters.validate(application)
    if order not in ORDERS:
        raise InvalidInput(f"Sort by one of {', '.join(ORDERS)}.", fields={"sort": "invalid"})
    qs = flag_list(application=application, filters=filters).select_related("author_user")
    page = keyset_page(qs, FLAG_KEYSETS[order], cursor=cursor, limit=limit)
    return FlagPage(items=page.items, order=order, next_cursor=page.next_cursor,
                    previous_cursor=page.previous_cursor, filters=filters)


def flag_get(*, application: Application, public_id: str) -> Flag:
    qs = Flag.objects.select_related("application", "author_user", "author_token", "claimed_by").filter(
        application=application, public_id=public_id)
    flag = qs.first()
    if flag is None:
        raise NotFound("No such flag.")
    return flag


def flag_get_by_public_id(*, public_id: str, applications: QuerySet[Application]) -> Flag:
    """For the API: a flag of one of `applications` (those the caller may see). Another
    tenant's flag is not found by the same query as a missing one, so both are the same 404."""
    qs = Flag.objects.select_related("application", "author_user", "author_token").filter(
        public_id=public_id, application__in=applications)
    flag = qs.first()
    if flag is None:
        raise NotFound("No such flag.")
    return flag


def flags_by_public_ids(*, application: Application, public_ids: list[str]) -> QuerySet[Flag]:
    """The application's flags among `public_ids` (ids of other tenants match nothing)."""
    return Flag.objects.filter(application=application, public_id__in=public_ids[:500]).order_by("-created_at", "-id")


def flag_events(*, flag: Flag) -> QuerySet[FlagEvent]:
    return (
        FlagEvent.objects.filter(application_id=flag.application_id, flag=flag)
        .select_related("actor_user", "actor_token")
        .order_by("created_at", "id")
    )


def flag_reviews(*, flag: Flag) -> QuerySet[FlagReview]:
    return FlagReview.objects.filter(application_id=flag.application_id, flag=flag).select_related("reviewer")


def flag_next_pending(
    *,
    application: Application,
    user: AbstractBaseUser,
    filters: FlagFilters | None = None,
    order: str = "-created",
    after: Flag | None = None,
    exclude_pk: int | None = None,
) -> Flag | None:
    """The next pending flag in the queue's own order (within `filters`, whatever
    their status) nobody else holds a live claim on: the first one below `after`
    (the flag just decided), else the first from the top, so "next" walks down the
    list the curator sees, not from its bottom."""
    now = timezone.now()
    scope = replace(filters, status="") if filters else FlagFilters()
    newest_first = order != "created"
    qs = (
        flag_list(application=application, filters=scope)
        .filter(status=FlagStatus.PENDING)
        .filter(Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lt=now))
        .order_by(*(("-created_at", "-id") if newest_first else ("created_at", "id")))
    )
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    if after is not None:
        if newest_first:
            below = Q(created_at__lt=after.created_at) | Q(created_at=after.created_at, id__lt=after.pk)
        else:
            below = Q(created_at__gt=after.created_at) | Q(created_at=after.created_at, id__gt=after.pk)
        following = qs.filter(below).first()
        if following is not None:
            return following
    return qs.first()


def flag_neighbours(*, application: Application, flag: Flag, filters: FlagFilters, order: str) -> tuple[
    Flag | None, Flag | None
]:
    """The rows before and after `flag` in the queue as filtered and sorted (for j/k)."""
    qs = flag_list(application=application, filters=filters)
    newer = qs.filter(Q(created_at__gt=flag.created_at) | Q(created_at=flag.created_at, id__gt=flag.pk),
                      created_at__gte=flag.created_at).order_by("created_at", "id").first()
    older = qs.filter(Q(created_at__lt=flag.created_at) | Q(created_at=flag.created_at, id__lt=flag.pk),
                      created_at__lte=flag.created_at).order_by("-created_at", "-id").first()
    return (newer, older) if order == "-created" else (older, newer)


def pending_flag_count(*, application: Application, cap: int | None = None) -> int:
    """Pending user/operator flags, counted up to `cap` (a bounded index range)."""
    qs = Flag.objects.filter(application=application, status=FlagStatus.PENDING).exclude(
        author_kind=AuthorKind.AGENT
    )
    return (qs[:cap] if cap else qs).count()


def unlabelled_capture_count(*, application: Application, cap: int | None = None) -> int:
    qs = Flag.objects.filter(application=application, status=FlagStatus.PENDING, author_kind=AuthorKind.AGENT)
    return (qs[:cap] if cap else qs).count()


# --- The exemplar bank (read by the exemplars app) ---------------------------------


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
    Served by the indexes fb_flag_status_updated and fb_review_app_created;
    raw SQL because the score endpoint runs it on every call and compiling ORM
    queries would cost more than running them.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + approved_set_marker_sql("%s"), [application.pk, application.pk])
        latest_approved, latest_review = cursor.fetchone()
    return latest_approved, latest_review


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


# --- Case feedback ---------------------------------------------------------------


def case_refs_with_disagreement(*, application: Application) -> set[str]:
    """Case ids someone (operator or agent) disagreed on: a sampling signal only."""
    return set(
        CaseFeedback.objects.filter(application=application, disposition=Disposition.DISAGREES)
        .values_list("case_ref", flat=True)
        .distinct()
    )


def case_feedback_list(*, application: Application, case_ref: str) -> QuerySet[CaseFeedback]:
    return (
        CaseFeedback.objects.filter(application=application, case_ref=case_ref)
        .select_related("author_user", "author_token")
        .order_by("-created_at", "-id")
    )
# --- Exports and data governance ---------------------------------------------

EXPORT_CHUNK_SIZE = 5000


def flag_export_queryset(
    *, application: Application, filters: FlagFilters, changed_since: datetime | None = None
) -> QuerySet[Flag]:
    """The flags an export holds, oldest first (the (application, status,
    created_at, id) index serves filter and order: rows stream without a sort).

    Approved flags are exported only with their resolved axis; `changed_since`
    keeps rows written after that moment (an incremental export).
    """
    filters.validate(application)
    qs = flag_list(application=application, filters=filters)
    if filters.status == FlagStatus.APPROVED:
        qs = qs.exclude(axis="")
    if changed_since is not None:
        qs = qs.filter(updated_at__gt=changed_since)
    return qs.order_by("created_at", "id")


def flag_export_batches(
    *,
    application: Application,
    filters: FlagFilters,
    changed_since: datetime | None = None,
    chunk_size: int = EXPORT_CHUNK_SIZE,
) -> Iterator[list[tuple[int, str, int, bytes]]]:
    """Batches of `(pk, public_id, version, json_line)` per exported flag, oldest first.

    Plain ORM rows (`values_list(...).iterator()`: a chunked cursor on SQLite,
    a server-side cursor on PostgreSQL), encoded by `feedback.exports` with
    orjson. Rows arrive `chunk_size` at a time, so memory stays flat in the
    number of rows. (Issue 29's 2x rule: the database building the JSON itself,
    `bench/export_sql.py`, was measured beside this and was not twice as fast.)
    """
    qs = flag_export_queryset(application=application, filters=filters, changed_since=changed_since)
    # PostgreSQL: in autocommit Django declares the server-side cursor WITH HOLD,
    # and the server then materialises the whole result before the first row; in
    # a transaction it streams (one snapshot, too). SQLite reads its WAL snapshot
    # without one: an (IMMEDIATE) transaction would block every writer meanwhile.
    reading = transaction.atomic() if connection.vendor == "postgresql" else nullcontext()
    # The cursor closes before the transaction ends, also when the consumer stops
    # early (a download cut short): closed after, it would fail the connection.
    with reading, closing(qs.values_list(*EXPORT_COLUMNS).iterator(chunk_size=chunk_size)) as rows:
        yield from encoded_batches(rows, application_id=application.slug, batch_size=chunk_size)


def reviewed_items(*, application: Application) -> Iterator[ReviewedItem]:
    """Approved flags and labelled captures with their deciding review (for the YAML drafts).

    The reviewer and the decision time come from the newest review that moved
    the flag to its current status, fetched in the same query (no N+1).
    """
    deciding = FlagReview.objects.filter(flag=OuterRef("pk"), to_status=OuterRef("status")).order_by(
        "-created_at", "-id"
    )
    rows = (
        Flag.objects.filter(application=application, status__in=[FlagStatus.APPROVED, FlagStatus.LABELLED])
        .annotate(
            reviewer_name=Subquery(deciding.values("reviewer__username")[:1]),
            decided_at=Subquery(deciding.values("created_at")[:1]),
        )
        .filter(decided_at__isnull=False)
        .order_by("created_at", "id")
        .values_list(
            "pk", "public_id", "capture_reason", "region", "problem", "prompt", "context", "answer",
            "note", "reviewer_name", "decided_at", "axis", "verdict", "capture_label", "detector_scores",
        )
    )
    for (pk, public_id, capture_reason, region, problem, prompt, context, answer, note, reviewer,
         decided_at, axis, verdict, capture_label, scores) in rows.iterator(chunk_size=EXPORT_CHUNK_SIZE):
        if isinstance(decided_at, str):  # a Subquery over SQLite may hand back the raw text
            decided_at = datetime.fromisoformat(decided_at)
        yield ReviewedItem(
            flag_id=public_id,
            pk=pk,
            is_capture=bool(capture_reason),
            region=region,
            problem=problem,
            prompt=prompt,
            context=context,
            answer=answer,
            note=note,
            reviewer=reviewer,
            decided_at=decided_at,
            axis=axis or None,
            verdict=verdict or None,
            capture_reason=capture_reason or None,
            capture_label=capture_label or None,
            detector_scores=scores or {},
        )


def export_manifest_previous(
    *, application: Application, kind: str, filters_key: str
) -> ExportManifest | None:
    """The newest export of the same series (same application, kind and filters)."""
    return (
        ExportManifest.objects.filter(application=application, kind=kind, filters_key=filters_key)
        .defer("flag_set")
        .order_by("-generated_at", "-id")
        .first()
    )


def export_manifest_list(*, application: Application) -> QuerySet[ExportManifest]:
    return ExportManifest.objects.filter(application=application).defer("flag_set").order_by(
        "-generated_at", "-id"
    )


def export_manifests_containing(
    *, application: Application, flag_pks: Iterable[int], earliest_created_at: datetime | None = None
) -> list[tuple[ExportManifest, int]]:
    """Every export of the application that held any of `flag_pks`, with how many.

    An export generated before the oldest of these flags existed cannot hold
    it, so `earliest_created_at` narrows the scan.
    """
    pks = set(flag_pks)
    if not pks:
        return []
    qs = ExportManifest.objects.filter(application=application).order_by("generated_at", "id")
    if earliest_created_at is not None:
        qs = qs.filter(generated_at__gte=earliest_created_at)
    found = []
    for manifest in qs.iterator(chunk_size=50):
        hits = id_set_intersection(manifest.flag_set, pks)
        if hits:
            found.append((manifest, len(hits)))
    return found


def erasure_record_list(*, application: Application) -> QuerySet[ErasureRecord]:
    return ErasureRecord.objects.filter(application=application).order_by("-performed_at", "-id")


# --- Overview aggregates -------------------------------------------------------
# Per-day sums of the history: ended days are summed once and kept, today is
# summed live (feedback.history); only per-day rows come back to Python.


@dataclass(frozen=True)
class DelayQuantiles:
    """Seconds from a flag's creation to a decision on it, over some decisions."""

    count: int
    quantiles: dict[float, float]  # q -> seconds (as percentile_cont: linear interpolation)


@dataclass(frozen=True)
class DecisionDelays:
    overall: DelayQuantiles
    by_day: dict[date, DelayQuantiles]


def flag_count_in_status(*, application: Application, status: str) -> int:
    """Flags of the application in `status` now (a range of the (application, status, …) index)."""
    return Flag.objects.filter(application=application, status=status).count()


def flag_transitions_by_day(*, application: Application, since: date) -> list[tuple[date, str, str, int]]:
    """(day, from_status, to_status, count) of every flag transition from the UTC day `since` on.

    Replayed backwards from a current count, these give the flags in a status
    at the end of any day (the events are the append-only history).
    """
    last = timezone.now().date()
    days = history_days(application=application, first=since, last=last, columns=["transitions"])
    return [(day, a, b, n) for day, sums in days.items() for a, b, n in sums.transitions]


def flag_decisions_by_day(*, application: Application, first: date, last: date) -> list[tuple[date, str, int]]:
    """(day, reviewer username, decisions) for approvals, rejections and labels on UTC days first..last."""
    days = history_days(application=application, first=first, last=last, columns=["decisions"])
    reviewer_ids = {reviewer for sums in days.values() for reviewer, _ in sums.decisions}
    names = dict(get_user_model().objects.filter(pk__in=reviewer_ids).values_list("pk", "username"))
    return [(day, names.get(reviewer, "?"), n) for day, sums in days.items() for reviewer, n in sums.decisions]


def flag_approvals_by_axis_verdict(*, application: Application, first: date, last: date) -> list[tuple[str, str, int]]:
    """(axis, verdict, approvals) for the approvals decided on UTC days first..last."""
    totals: dict[tuple[str, str], int] = {}
    for sums in history_days(application=application, first=first, last=last, columns=["approvals"]).values():
        for axis, verdict, n in sums.approvals:
            totals[axis, verdict] = totals.get((axis, verdict), 0) + n
    return [(axis, verdict, n) for (axis, verdict), n in sorted(totals.items())]


def capture_volume_by_day(*, application: Application, first: date, last: date) -> list[tuple[date, str, str, int]]:
    """(day, status, capture label, count) of the automated captures created on UTC days first..last.

    Grouped by each capture's current status, which changes after its day has
    ended, so this one is aggregated live (captures are a small share of flags).
    """
    start, end = day_bounds(first, last)
    rows = (
        Flag.objects.filter(
            application=application, author_kind=AuthorKind.AGENT, created_at__gte=start, created_at__lt=end
        )
        .annotate(day=UtcDay("created_at"))
        .values("day", "status", "capture_label")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(as_date(r["day"]), r["status"], r["capture_label"], r["n"]) for r in rows]


def flag_decision_delays(
    *, application: Application, first: date, last: date, quantiles: tuple[float, ...] = (0.5, 0.9)
) -> DecisionDelays:
    """Quantiles of the time from a flag's creation to each decision on it on UTC
    days first..last, per day of decision and over the whole range.

    Each decision keeps its wait (`FlagReview.wait_seconds`); each day's waits
    come sorted from the day's sums, so a day's quantiles are read at their
    ranks and the range's come from one merge of the days. Linear interpolation
    between the closest ranks, exactly as PostgreSQL's percentile_cont (a test
    holds both to a reference).
    """
    for q in quantiles:
        if not 0 <= q <= 1:
            raise ValueError(f"quantile {q} is outside [0, 1]")
    days = history_days(application=application, first=first, last=last, columns=["waits"])
    by_day = {day: _quantiles(sums.waits, quantiles) for day, sums in days.items() if len(sums.waits)}
    waits = [sums.waits for sums in days.values() if len(sums.waits)]
    if not waits:
        return DecisionDelays(overall=DelayQuantiles(count=0, quantiles={}), by_day={})
    overall = np.sort(np.concatenate(waits), kind="stable")
    return DecisionDelays(overall=_quantiles(overall, quantiles), by_day=by_day)


def _quantiles(ordered: np.ndarray, quantiles: tuple[float, ...]) -> DelayQuantiles:
    n = len(ordered)
    values = {}
    for q in quantiles:
        position = q * (n - 1)
        low = int(position)
        high = min(low + 1, n - 1)
        values[q] = float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))
    return DelayQuantiles(count=n, quantiles=values)
