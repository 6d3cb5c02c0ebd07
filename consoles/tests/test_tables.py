"""Paging a screen's table from the request (no database: the rows are a list)."""

import django_tables2 as tables
import pytest

from consoles.tables import MAX_PER_PAGE, table_configure

ROWS = [{"n": i} for i in range(MAX_PER_PAGE * 3)]


class NumberTable(tables.Table):
    n = tables.Column()


@pytest.mark.parametrize(
    ("asked", "shown"),
    [("7", 7), ("-1", 1), ("0", 1), (str(10**9), MAX_PER_PAGE), ("lots", 25), ("", 25)],
)
def test_the_page_size_the_url_asks_for_stays_within_bounds(rf, asked: str, shown: int):
    table = table_configure(rf.get("/", {"per_page": asked}), NumberTable(ROWS), per_page=25)
    assert len(table.page.object_list) == shown


def test_without_a_page_size_the_screens_own_applies(rf):
    table = table_configure(rf.get("/"), NumberTable(ROWS), per_page=25)
    assert len(table.page.object_list) == 25 and table.page.number == 1


@pytest.mark.parametrize(("page", "number"), [("2", 2), ("abc", 1), ("-3", 24), ("999", 24)])
def test_a_page_out_of_range_is_the_first_or_the_last(rf, page: str, number: int):
    table = table_configure(rf.get("/", {"page": page}), NumberTable(ROWS), per_page=25)
    assert table.page.number == number


def test_sorting_still_comes_from_the_url(rf):
    table = table_configure(rf.get("/", {"sort": "-n"}), NumberTable(ROWS), per_page=5)
    assert [row["n"] for row in table.page.object_list.data] == [599, 598, 597, 596, 595]
