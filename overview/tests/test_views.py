from datetime import UTC, datetime, time, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from consoles.testing import assert_sealed
from consoles.tests.factories import ApiTokenFactory, ApplicationFactory
from feedback.models import Flag
from feedback.services import Actor, flag_review, flag_submit

pytestmark = pytest.mark.django_db

SECTIONS = ["backlog", "decisions", "approvals", "delays", "captures", "gold", "agreement", "sampling", "proposals"]


def _url(slug="acme", **query):
    url = reverse("overview:index", args=[slug])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _flags(application, count, *, reviewer=None, prefix="m"):
    actor = Actor(token=ApiTokenFactory(application=application))
    now = timezone.now()
    for n in range(count):
        at = now - timedelta(days=n % 5, hours=3)
        flag = flag_submit(application=application, actor=actor, region="answer", problem="fabricated",
                           message_id=f"{prefix}{n}", at=at, prompt="p", answer="a").flag
        if reviewer is not None and n % 2:
            flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version,
                        at=at + timedelta(hours=2))


def test_a_viewer_sees_every_section_in_a_bounded_number_of_queries(client, application, viewer, curator,
                                                                     django_assert_max_num_queries):
    _flags(application, 12, reviewer=curator)
    client.force_login(viewer)
    # The first view sums the range's ended days once and stores them
    # (feedback.history); later views read them back.
    with django_assert_max_num_queries(30):
        client.get(_url())
    with django_assert_max_num_queries(22):
        response = client.get(_url())
    html = response.content.decode()
    assert response.status_code == 200
    for key in SECTIONS:
        assert f'data-testid="chart-{key}"' in html
    assert html.count("<svg") >= 4 and "style=" not in html
    assert "Pending at the end of" in html and "cora 6" in html  # six approvals by cora
    # The range in effect is shown in the form (the defaults included).
    today = timezone.now().date()
    assert f'value="{today.isoformat()}"' in html and f'value="{(today - timedelta(days=29)).isoformat()}"' in html


def test_the_query_count_does_not_grow_with_the_data(client, application, viewer, curator,
                                                      django_assert_max_num_queries):
    _flags(application, 40, reviewer=curator)
    client.force_login(viewer)
    with django_assert_max_num_queries(30):
        assert client.get(_url()).status_code == 200
    with django_assert_max_num_queries(22):
        assert client.get(_url()).status_code == 200


def test_another_applications_flags_are_never_counted(client, application, viewer, curator):
    other = ApplicationFactory(slug="other")
    _flags(other, 7, reviewer=curator, prefix="o")
    _flags(application, 3)
    client.force_login(viewer)
    html = client.get(_url()).content.decode()
    assert "Pending at the end of" in html and ": 3 (at the end of" in html
    assert 'data-testid="empty-decisions"' in html


def test_an_outsider_gets_404_and_a_stranger_logs_in_first(client, tenant_pair):
    assert_sealed(client, tenant_pair.member_of_a, _url(tenant_pair.b.slug))
    client.logout()
    response = client.get(_url(tenant_pair.a.slug))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"from": "2026-02-30"}, "Enter a valid date."),
        ({"from": "yesterday"}, "Enter a valid date."),
        ({"from": "2026-03-02", "to": "2026-03-01"}, "The end is before the start."),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "Choose at most 366 days."),
        # days so far out that the date arithmetic overflowed (a 500)
        ({"to": "0001-01-01"}, "Choose a day from 1970-01-01"),
        ({"from": "9999-12-31"}, "Choose a day from 1970-01-01"),
        ({"from": "9999-12-20", "to": "9999-12-31"}, "Choose a day from 1970-01-01"),
        ({"from": "3000-01-01"}, "Choose a day from 1970-01-01"),
    ],
)
def test_a_bad_range_is_a_form_error_never_a_500(client, application, viewer, query, message):
    client.force_login(viewer)
    response = client.get(_url(**query))
    html = response.content.decode()
    assert response.status_code == 200 and message in html and "<svg" not in html


def test_a_past_range_shows_only_that_range(client, application, viewer, curator):
    _flags(application, 4, reviewer=curator)
    client.force_login(viewer)
    html = client.get(_url(**{"from": "2020-01-01", "to": "2020-01-31"})).content.decode()
    assert 'data-testid="empty-decisions"' in html and 'value="2020-01-01"' in html
    assert "Jan 1, 2020 – Jan 31, 2020 (31 days)" in html


def test_a_range_in_the_future_stops_the_backlog_at_today(client, application, viewer):
    _flags(application, 2)
    client.force_login(viewer)
    today = datetime.now(UTC).date()
    html = client.get(_url(**{"from": today.isoformat(), "to": (today + timedelta(days=5)).isoformat()})).content
    assert b"Pending at the end of " + today.strftime("%b %d").encode() + b": 2" in html


def test_the_application_home_and_navigation_link_to_the_overview(client, application, viewer):
    client.force_login(viewer)
    html = client.get(reverse("application_home", args=["acme"])).content.decode()
    assert html.count(f'href="{_url()}"') == 2


def test_the_backlog_note_names_the_day_of_each_figure(client, application, viewer):
    _flags(application, 2)  # pending: one about 3 hours ago, one a day earlier
    client.force_login(viewer)
    today = datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    by_yesterday = Flag.objects.filter(created_at__lt=datetime.combine(today, time.min, tzinfo=UTC)).count()
    html = client.get(_url(**{"from": yesterday.isoformat(), "to": today.isoformat()})).content.decode()
    # the first figure is the end of the range's first day (it said "the start of the range")
    assert f"Pending at the end of {today:%b %d}: 2 (at the end of {yesterday:%b %d}: {by_yesterday})." in html


def test_the_proposal_states_are_named_in_full_on_the_chart(demo_loaded, client):
    client.force_login(Flag.objects.first().application.memberships.first().user)
    html = client.get(_url("acme-chat")).content.decode()
    chart = html.split('data-testid="chart-proposals"', 1)[1].split("</svg>", 1)[0]
    assert ">Rejected</tspan>" in chart and ">Auto-rejected</tspan>" in chart and "…" not in chart
