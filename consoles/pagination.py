"""Keyset pagination: the one way the console pages a list that can grow without bound.

A page is read by position, never by OFFSET, and nothing counts the list, so a page
costs the same at a million rows as at ten, given an index that ends in the list's
order. The cursor is opaque to clients: the list's scope, a direction, and the key
of the row at the page's edge.
"""

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from .errors import InvalidInput

DIRECTIONS = ("after", "before")


@dataclass(frozen=True)
class Keyset:
    """A list's total order: model fields, all descending or all ascending, the
    last of them unique (so no two rows share a key).

    `scope` names the list and its sort order: a cursor taken under another scope
    (the sort was just changed) starts over at the first page.
    """

    fields: tuple[str, ...]
    descending: bool
    scope: str

    def ordering(self, descending: bool) -> list[str]:
        return [("-" if descending else "") + name for name in self.fields]


@dataclass
class Page:
    items: list
    next_cursor: str | None = None
    previous_cursor: str | None = None


def _invalid() -> InvalidInput:
    return InvalidInput("Invalid cursor.", fields={"cursor": "invalid"})


def encode_cursor(keyset: Keyset, direction: str, row: Any) -> str:
    key = []
    for name in keyset.fields:
        value = getattr(row, name)
        key.append(value.isoformat() if hasattr(value, "isoformat") else value)
    raw = json.dumps([keyset.scope, direction, *key], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, keyset: Keyset, model: type) -> tuple[str, list[Any]] | None:
    """(direction, key values), or None for a cursor of another scope; a cursor
    that is not one of ours is InvalidInput naming `cursor`."""
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _invalid() from exc
    if not (isinstance(raw, list) and len(raw) == 2 + len(keyset.fields) and raw[1] in DIRECTIONS
            and all(isinstance(v, str | int) and not isinstance(v, bool) for v in raw)):
        raise _invalid()
    scope, direction, *key = raw
    try:
        values = [model._meta.get_field(name).to_python(v) for name, v in zip(keyset.fields, key, strict=True)]
    except ValidationError as exc:
        raise _invalid() from exc
    if any(isinstance(v, datetime) and v.tzinfo is None for v in values):
        raise _invalid()  # every cursor we hand out carries its offset
    return (direction, values) if scope == keyset.scope else None


def _beyond(fields: tuple[str, ...], values: list[Any], op: str) -> Q:
    """Rows past `values` in the order of `fields` (`op` is "lt" or "gt"): the
    first field past, or equal and the next past, and so on. The redundant bound
    on the first field (`<=` or `>=`) gives the index a range to start from."""
    past = Q()
    for i, name in enumerate(fields):
        past |= Q(**{name: v for name, v in zip(fields[:i], values[:i], strict=True)}, **{f"{name}__{op}": values[i]})
    return past & Q(**{f"{fields[0]}__{op}e": values[0]})


def keyset_page(qs: QuerySet, keyset: Keyset, *, cursor: str | None, limit: int) -> Page:
    """One page of `qs` in the keyset's order: the first page, or the one after
    (or before) the cursor's row. Reads `limit + 1` rows to know if there is more."""
    decoded = decode_cursor(cursor, keyset, qs.model) if cursor else None
    backwards = decoded is not None and decoded[0] == "before"
    walk_descending = keyset.descending != backwards
    if decoded is not None:
        qs = qs.filter(_beyond(keyset.fields, decoded[1], "lt" if walk_descending else "gt"))
    rows = list(qs.order_by(*keyset.ordering(walk_descending))[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    page = Page(items=rows)
    if rows:
        # Going forward, there is a page before unless this is the first; going back,
        # there is a page after (the one the cursor came from).
        if more or backwards:
            page.next_cursor = encode_cursor(keyset, "after", rows[-1])
        if (decoded is not None) if not backwards else more:
            page.previous_cursor = encode_cursor(keyset, "before", rows[0])
    return page


def screen_page(qs: QuerySet, keyset: Keyset, *, cursor: str | None, limit: int) -> tuple[Page, str]:
    """A screen's page and the message to show with it: a stale or hand-edited
    cursor gets the newest page and says so, where the API answers 422."""
    try:
        return keyset_page(qs, keyset, cursor=cursor or None, limit=limit), ""
    except InvalidInput as exc:
        return keyset_page(qs, keyset, cursor=None, limit=limit), exc.message


def cursor_link(cursor: str | None, querystring: str = "") -> str | None:
    """A screen's link to the page at `cursor`, keeping the screen's other parameters."""
    if not cursor:
        return None
    return "?" + (f"{querystring}&" if querystring else "") + urlencode({"cursor": cursor})
