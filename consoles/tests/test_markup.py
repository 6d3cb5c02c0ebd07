"""Every page's markup holds together for assistive technology: ids are unique, and
what a label, `aria-describedby` or `aria-labelledby` points at exists. (A label
tied to a duplicated id names the wrong control; a description that points at
nothing is silently dropped by screen readers.)"""

from collections import Counter
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from consoles.models import Application
from consoles.testing import url_routes
from consoles.tests.test_tenant_sweep import _target
from feedback.models import Flag

pytestmark = pytest.mark.django_db


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: Counter[str] = Counter()
        self.pointers: list[tuple[str, str]] = []  # (what points, the id it names)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids[values["id"]] += 1
        if tag == "label" and values.get("for"):
            self.pointers.append((f"<label for={values['for']}>", values["for"]))
        for name in ("aria-describedby", "aria-labelledby", "aria-controls"):
            for target in (values.get(name) or "").split():
                self.pointers.append((f"<{tag} {name}={target}>", target))


def _problems(html: str) -> list[str]:
    parsed = _References()
    parsed.feed(html)
    found = [f"id {name!r} used {n} times" for name, n in parsed.ids.items() if n > 1]
    found += [f"{pointer} names no element" for pointer, target in parsed.pointers if target not in parsed.ids]
    return found


def _pages(victims: list[Application]) -> list[str]:
    pages = []
    for route in url_routes():
        if route.application_scoped:
            _, values = _target(route.namespace, route.kwargs, victims)
            pages.append(route.url(values))
    # The queue with a pending user flag open: the filters and the approve form
    # have fields of the same names on one page.
    pending = Flag.objects.filter(status="pending", capture_reason="").select_related("application").first()
    pages.append(reverse("feedback:detail", args=[pending.application.slug, pending.public_id]))
    return pages


def test_ids_are_unique_and_every_reference_names_an_element(demo_loaded, client):
    client.force_login(get_user_model().objects.get(username="admin"))
    checked, problems = 0, {}
    for url in ["/login/", *_pages(list(Application.objects.order_by("slug")))]:
        response = client.get(url)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        checked += 1
        if found := _problems(response.content.decode()):
            problems[url] = found
    assert checked >= 15
    assert problems == {}


def test_the_check_sees_a_duplicate_id_and_a_dangling_description():
    html = '<label for="a">A</label><input id="a"><select id="a" aria-describedby="a_help"></select>'
    assert _problems(html) == ["id 'a' used 2 times", "<select aria-describedby=a_help> names no element"]
