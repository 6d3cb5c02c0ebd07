"""What the screens' django-tables2 tables share: paging a table from the request."""

from django.core.paginator import EmptyPage, PageNotAnInteger
from django.http import HttpRequest
from django_tables2 import RequestConfig, Table

# The most rows one page of a screen's table shows, whatever the URL asks for.
MAX_PER_PAGE = 200


def table_configure(request: HttpRequest, table: Table, *, per_page: int, max_per_page: int = MAX_PER_PAGE) -> Table:
    """`RequestConfig(request, paginate=...)`, with the page size kept within 1..max_per_page.

    django-tables2 takes any integer from `?per_page=`: a huge one renders the
    whole table in one response, a negative one is a 500 (Paginator divides by it).
    Ordering (`?sort=`) is left to django-tables2, which ignores unknown columns.
    """
    RequestConfig(request, paginate=False).configure(table)
    try:
        asked = int(request.GET.get(table.prefixed_per_page_field, per_page))
    except ValueError:
        asked = per_page
    size = min(max(asked, 1), max_per_page)
    # As RequestConfig's "silent" paging: a page that is not a number is the first, one past the end the last.
    try:
        table.paginate(page=request.GET.get(table.prefixed_page_field, 1), per_page=size)
    except PageNotAnInteger:
        table.page = table.paginator.page(1)
    except EmptyPage:
        table.page = table.paginator.page(table.paginator.num_pages)
    return table
