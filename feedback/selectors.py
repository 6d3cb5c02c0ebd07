"""Reads of the feedback app; each takes the application explicitly.

The queue pages by keyset on (created_at, id): a page costs an index range
scan of one page whatever the table size, and nothing counts the table.
"""

import base64
import binascii
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.utils import timezone

from consoles.errors import InvalidInput, NotFound
from consoles.models import Application

from .models import (
    AuthorKind,
    CaseFeedback,
    Disposition,
    Flag,
    FlagEvent,
    FlagReview,
    FlagStatus,
    Region,
)

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
        if self.created_from and self.created_to and self.created_from > self.created_to:
            errors["created_to"] = "The end is before the start."
        if errors:
            raise InvalidInput("Invalid filter.", fields=errors)


@dataclass
class FlagPage:
    items: list[Flag]
    order: str
    next_cursor: str | None = None
    previous_cursor: str | None = None
    filters: FlagFilters = field(default_factory=FlagFilters)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def flag_list(*, application: Application, filters: FlagFilters | None = None) -> QuerySet[Flag]:
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
    return qs


def _encode_cursor(order: str, direction: str, flag: Flag) -> str:
    raw = f"{order}|{direction}|{flag.created_at.isoformat()}|{flag.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, order: str) -> tuple[str, datetime, int] | None:
    """(direction, created_at, id), or None for a cursor of another sort order."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        cursor_order, direction, created, pk = raw.split("|")
        value = (direction, datetime.fromisoformat(created), int(pk))
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("Invalid cursor.", fields={"cursor": "invalid"}) from exc
    if direction not in ("after", "before"):
        raise InvalidInput("Invalid cursor.", fields={"cursor": "invalid"})
    # A cursor taken under another sort order (the sort was just changed) starts over.
    return value if cursor_order == order else None


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
    descending = order == "-created"
    qs = flag_list(application=application, filters=filters).select_related("author_user")
    decoded = _decode_cursor(cursor, order) if cursor else None
    backwards = decoded is not None and decoded[0] == "before"
    if decoded is not None:
        _, created, pk = decoded
        # Walking towards older rows when (descending and after) or (ascending and before).
        older = descending != backwards
        if older:
            # The redundant `created_at <= c` gives the index a range bound.
            qs = qs.filter(Q(created_at__lt=created) | Q(created_at=created, id__lt=pk), created_at__lte=created)
        else:
            qs = qs.filter(Q(created_at__gt=created) | Q(created_at=created, id__gt=pk), created_at__gte=created)
    walk_descending = descending != backwards
    ordering = ["-created_at", "-id"] if walk_descending else ["created_at", "id"]
    rows = list(qs.order_by(*ordering)[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    page = FlagPage(items=rows, order=order, filters=filters)
    if rows:
        has_next = more if not backwards else True
        has_previous = (decoded is not None) if not backwards else more
        if has_next:
            page.next_cursor = _encode_cursor(order, "after", rows[-1])
        if has_previous:
            page.previous_cursor = _encode_cursor(order, "before", rows[0])
    elif decoded is not None:
        # Walked past the end (rows vanished meanwhile): offer the way back.
        page.previous_cursor = None
    return page


def flag_get(*, application: Application, public_id: str) -> Flag:
    flag = (
        Flag.objects.select_related("application", "author_user", "author_token", "claimed_by")
        .filter(application=application, public_id=public_id)
        .first()
    )
    if flag is None:
        raise NotFound("No such flag.")
    return flag


def flag_get_by_public_id(*, public_id: str) -> Flag:
    """For the API, which then checks the caller's access to the flag's application
    (another tenant's flag is a 404 there, exactly like a missing one)."""
    flag = (
        Flag.objects.select_related("application", "author_user", "author_token")
        .filter(public_id=public_id)
        .first()
    )
    if flag is None:
        raise NotFound("No such flag.")
    return flag


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
    exclude_pk: int | None = None,
) -> Flag | None:
    """The oldest pending flag (within `filters`, whatever their status) nobody else
    holds a live claim on."""
    now = timezone.now()
    scope = replace(filters, status="") if filters else FlagFilters()
    qs = (
        flag_list(application=application, filters=scope)
        .filter(status=FlagStatus.PENDING)
        .filter(Q(claimed_by__isnull=True) | Q(claimed_by=user) | Q(claimed_until__lt=now))
        .order_by("created_at", "id")
    )
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
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
