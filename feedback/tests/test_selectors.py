from datetime import date, datetime, time, timedelta

import pytest
from django.utils import timezone

from consoles.errors import InvalidInput
from feedback.selectors import FlagFilters, flag_neighbours, flag_page

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def seven_flags(application):
    # Noon yesterday: a day's filters must not depend on the time of day the suite runs
    # (now minus one day, plus minutes, crossed midnight when run just before it).
    base = timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=1), time(12)))
    # two share a timestamp so the id tie-breaker matters
    stamps = [base, base + timedelta(minutes=1), base + timedelta(minutes=1)] + [
        base + timedelta(minutes=m) for m in (2, 3, 4, 5)
    ]
    return [FlagFactory(application=application, created_at=s, updated_at=s) for s in stamps]


def _walk(application, order, limit=3, **filters):
    seen, cursor, pages = [], None, 0
    while True:
        page = flag_page(application=application, order=order, cursor=cursor, limit=limit,
                         filters=FlagFilters(**filters))
        seen += [f.pk for f in page.items]
        pages += 1
        if not page.next_cursor:
            return seen, pages, page
        cursor = page.next_cursor


def test_keyset_pages_cover_every_row_once_in_order(application, seven_flags):
    newest_first, pages, _ = _walk(application, "-created")
    expected = [f.pk for f in sorted(seven_flags, key=lambda f: (f.created_at, f.pk), reverse=True)]
    assert newest_first == expected and pages == 3
    oldest_first, _, _ = _walk(application, "created")
    assert oldest_first == list(reversed(expected))


def test_previous_goes_back_to_the_page_before(application, seven_flags):
    first = flag_page(application=application, limit=3)
    assert first.previous_cursor is None
    second = flag_page(application=application, limit=3, cursor=first.next_cursor)
    back = flag_page(application=application, limit=3, cursor=second.previous_cursor)
    assert [f.pk for f in back.items] == [f.pk for f in first.items]
    assert back.previous_cursor is None and back.next_cursor


def test_filters_combine_and_stay_within_the_tenant(application, tenant_pair, seven_flags):
    CaptureFactory(application=application)
    FlagFactory(application=tenant_pair.b)
    FlagFactory(application=application, problem="offensive", suggested_axis="toxicity", region="prompt")
    assert len(flag_page(application=application).items) == 9
    assert [f.problem for f in flag_page(application=application, filters=FlagFilters(axis="toxicity")).items] == ["offensive"]
    assert len(flag_page(application=application, filters=FlagFilters(author_kind="agent")).items) == 1
    assert len(flag_page(application=application, filters=FlagFilters(region="prompt", status="pending")).items) == 1
    today = timezone.localdate()
    assert len(flag_page(application=application, filters=FlagFilters(created_from=today)).items) == 2
    assert len(flag_page(application=application, filters=FlagFilters(created_to=today - timedelta(days=1))).items) == 7


def test_invalid_filters_and_cursors_are_refused(application):
    with pytest.raises(InvalidInput) as exc:
        flag_page(application=application, filters=FlagFilters(status="done", axis="nope"))
    assert set(exc.value.fields) == {"status", "axis"}
    with pytest.raises(InvalidInput):
        flag_page(application=application, cursor="not-a-cursor")
    with pytest.raises(InvalidInput):
        flag_page(application=application, filters=FlagFilters(created_from=date(2026, 2, 2), created_to=date(2026, 1, 1)))


def test_a_cursor_from_another_sort_order_starts_over(application, seven_flags):
    first = flag_page(application=application, limit=3)
    restarted = flag_page(application=application, limit=3, order="created", cursor=first.next_cursor)
    assert restarted.items[0].pk == seven_flags[0].pk


def test_neighbours_follow_the_queue_order(application, seven_flags):
    middle = seven_flags[3]
    previous, following = flag_neighbours(application=application, flag=middle, filters=FlagFilters(),
                                          order="-created")
    assert previous == seven_flags[4] and following == seven_flags[2]


@pytest.mark.parametrize("filters", [
    {}, {"status": "pending"}, {"status": "pending", "axis": "hallucination"}, {"axis": "hallucination"},
    {"status": "pending", "problem": "fabricated"}, {"problem": "fabricated"}, {"author_kind": "agent"},
    {"status": "pending", "author_kind": "agent"}, {"region": "prompt"}, {"status": "pending", "region": "answer"},
], ids=lambda f: "+".join(f) or "none")
def test_every_queue_filter_pages_along_an_index_without_sorting(application, filters):
    """A page reads an index in (created_at, id) order under the filter: no scan of
    the table, no sort of what it found (what keeps a page fast at a million flags)."""
    from django.db import connection

    from feedback.selectors import flag_list

    FlagFactory(application=application)
    page_qs = flag_list(application=application, filters=FlagFilters(**filters)).order_by("-created_at", "-id")[:51]
    sql, params = page_qs.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # a handful of rows: make the planner show its index
            cursor.execute("EXPLAIN " + sql, params)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    assert "fb_flag_" in plan, plan
    assert "Sort" not in plan and "TEMP B-TREE" not in plan and "Seq Scan" not in plan, plan
