"""The queue's reads: filters, keyset pages, one flag, its history, neighbours, counts."""

from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.utils import timezone

from consoles.dbfunctions import day_out_of_reach
from consoles.errors import InvalidInput, NotFound
from consoles.models import Application
from consoles.pagination import Keyset, Page, keyset_page

from ..models import (
    AuthorKind,
    Flag,
    FlagEvent,
    FlagReview,
    FlagStatus,
    Region,
)
from ..search import MAX_QUERY_LENGTH, FlagTextMatch, search_terms

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
    fields: tuple[str, ...] | None = None,
) -> FlagPage:
    """One page of the queue, newest first by default, by keyset. With `fields`,
    only those columns are read (the queue's rows show a few; a flag's prompt and
    answer may be thousands of characters each)."""
    filters = filters or FlagFilters()
    filters.validate(application)
    if order not in ORDERS:
        raise InvalidInput(f"Sort by one of {', '.join(ORDERS)}.", fields={"sort": "invalid"})
    qs = flag_list(application=application, filters=filters)
    if fields is not None:
        qs = qs.only(*fields)
    page = keyset_page(qs, FLAG_KEYSETS[order], cursor=cursor, limit=limit)
    return FlagPage(items=page.items, order=order, next_cursor=page.next_cursor,
                    previous_cursor=page.previous_cursor, filters=filters)


def flag_get(*, application: Application, public_id: str) -> Flag:
    # get(), not first(), here and below: the id is unique, and first() would order by
    # the model's ordering, a sort compiled and run on every request for one row.
    try:
        return Flag.objects.select_related("application", "author_user", "author_token", "claimed_by").get(
            application=application, public_id=public_id)
    except Flag.DoesNotExist as exc:
        raise NotFound("No such flag.") from exc


def flag_get_by_public_id(*, public_id: str, applications: QuerySet[Application]) -> Flag:
    """For the API: a flag of one of `applications` (those the caller may see). Another
    tenant's flag is not found by the same query as a missing one, so both are the same 404.
    The API's answers name the flag's application and nothing else it refers to."""
    try:
        return Flag.objects.select_related("application").get(public_id=public_id, application__in=applications)
    except Flag.DoesNotExist as exc:
        raise NotFound("No such flag.") from exc


def flags_by_public_ids(*, application: Application, public_ids: list[str]) -> QuerySet[Flag]:
    """The application's flags among `public_ids` (ids of other tenants match nothing)."""
    return Flag.objects.filter(application=application, public_id__in=public_ids[:500]).order_by("-created_at", "-id")


def flag_events(*, flag: Flag) -> QuerySet[FlagEvent]:
    return (
        FlagEvent.objects.filter(application_id=flag.application_id, flag=flag)
        .select_related("actor_user", "actor_token")
        .order_by("created_at", "id")
    )


def flag_last_correction(*, flag: Flag) -> str:
    """The correction of the flag's latest approval ("" if none): the approve form
    offers it again after a re-opening, so approving again does not lose it."""
    if flag.correction:
        return flag.correction
    return (
        FlagReview.objects.filter(application_id=flag.application_id, flag=flag, to_status=FlagStatus.APPROVED)
        .order_by("-created_at", "-id").values_list("correction", flat=True).first()
    ) or ""


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
