"""Keyset pagination (consoles.pagination), the one pager of every growing list."""

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles.errors import InvalidInput
from consoles.models import Application
from consoles.pagination import Keyset, encode_cursor, keyset_page
from consoles.tests.factories import ApplicationFactory

pytestmark = pytest.mark.django_db

NEWEST = Keyset(("created_at", "id"), descending=True, scope="apps")
BY_NAME = Keyset(("name", "id"), descending=False, scope="apps-by-name")
T0 = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.fixture
def apps():
    """Nine applications; three pairs share their creation moment, two share a name."""
    made = [ApplicationFactory(slug=f"app-{i}", name=["beta", "alpha", "alpha"][i % 3] + str(i // 6)) for i in range(9)]
    for i, app in enumerate(made):
        Application.objects.filter(pk=app.pk).update(created_at=T0 + timedelta(seconds=i // 2))
    return made


def walk(keyset, limit):
    """Every page forward from the first, then every page back from the last."""
    forward, page = [], keyset_page(Application.objects.all(), keyset, cursor=None, limit=limit)
    assert page.previous_cursor is None
    while True:
        forward.append([a.pk for a in page.items])
        if not page.next_cursor:
            break
        page = keyset_page(Application.objects.all(), keyset, cursor=page.next_cursor, limit=limit)
    backward = [[a.pk for a in page.items]]
    while page.previous_cursor:
        page = keyset_page(Application.objects.all(), keyset, cursor=page.previous_cursor, limit=limit)
        backward.append([a.pk for a in page.items])
    return forward, backward[::-1]


@pytest.mark.parametrize("keyset", [NEWEST, BY_NAME], ids=["datetime-desc", "text-asc"])
@pytest.mark.parametrize("limit", [1, 2, 4, 9, 20])
def test_pages_cover_the_list_once_in_order_forward_and_back_through_ties(apps, keyset, limit):
    expected = list(Application.objects.order_by(*keyset.ordering(keyset.descending)).values_list("pk", flat=True))
    forward, backward = walk(keyset, limit)
    assert [pk for page in forward for pk in page] == expected
    assert all(0 < len(page) <= limit for page in forward)
    assert backward == forward  # back by previous_cursor returns the same pages


def test_a_page_reads_limit_plus_one_rows_by_position_with_no_offset_or_count(apps):
    first = keyset_page(Application.objects.all(), NEWEST, cursor=None, limit=3)
    with CaptureQueriesContext(connection) as queries:
        keyset_page(Application.objects.all(), NEWEST, cursor=first.next_cursor, limit=3)
    (sql,) = [q["sql"].upper() for q in queries.captured_queries]
    assert "OFFSET" not in sql and "COUNT(" not in sql and "LIMIT 4" in sql


def test_a_cursor_of_another_scope_starts_over_at_the_first_page(apps):
    second = keyset_page(Application.objects.all(), NEWEST, cursor=None, limit=2).next_cursor
    restarted = keyset_page(Application.objects.all(), BY_NAME, cursor=second, limit=2)
    assert restarted.items == keyset_page(Application.objects.all(), BY_NAME, cursor=None, limit=2).items
    assert restarted.previous_cursor is None


def test_a_page_past_the_end_is_empty_with_no_way_on(apps):
    newest = Application.objects.order_by("created_at", "id").first()  # the oldest: nothing is after it
    page = keyset_page(Application.objects.all(), NEWEST, cursor=encode_cursor(NEWEST, "after", newest), limit=5)
    assert page.items == [] and page.next_cursor is None and page.previous_cursor is None


def _raw(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    "!!!",  # not base64
    base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not UTF-8
    _raw("apps"),  # not a list
    _raw(["apps", "after", "2026-06-01T12:00:00+00:00"]),  # a key too short
    _raw(["apps", "sideways", "2026-06-01T12:00:00+00:00", 1]),  # no such direction
    _raw(["apps", "after", "yesterday", 1]),  # not a time
    _raw(["apps", "after", "2026-06-01T12:00:00", 1]),  # a time without its offset
    _raw(["apps", "after", "2026-06-01T12:00:00+00:00", "one"]),  # not an id
    _raw(["apps", "after", "2026-06-01T12:00:00+00:00", True]),  # a bool is not an id
    _raw(["apps", "after", "2026-06-01T12:00:00+00:00", [1]]),  # nor a list
], ids=["base64", "utf8", "shape", "short", "direction", "time", "naive", "id", "bool", "nested"])
def test_a_cursor_that_is_not_ours_is_invalid_input_naming_cursor(apps, cursor):
    with pytest.raises(InvalidInput) as raised:
        keyset_page(Application.objects.all(), NEWEST, cursor=cursor, limit=2)
    assert raised.value.fields == {"cursor": "invalid"}
