"""The read-only Django admin of flags, their reviews and their events."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles.tests.factories import ApplicationFactory
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-2026!"))
    return client


@pytest.mark.parametrize("model", ["flag", "flagreview", "flagevent"])
def test_flag_history_is_filtered_by_application(admin_client, curator, application, model):
    mine = FlagFactory(application=application)
    theirs = FlagFactory(application=ApplicationFactory())
    for flag in (mine, theirs):
        flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    listing = admin_client.get(f"/admin/feedback/{model}/")
    assert f"?application__id__exact={application.pk}" in listing.text  # the sidebar offers each tenant
    page = admin_client.get(f"/admin/feedback/{model}/", {"application__id__exact": application.pk})
    assert page.status_code == 200
    assert mine.public_id in page.text and theirs.public_id not in page.text


@pytest.mark.parametrize("model", ["flagreview", "flagevent"])
def test_a_flags_reviews_and_events_are_found_by_its_public_id(admin_client, curator, application, model):
    mine, other = FlagFactory(application=application), FlagFactory(application=application)
    for flag in (mine, other):
        flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    page = admin_client.get(f"/admin/feedback/{model}/", {"q": mine.public_id})
    assert page.status_code == 200
    assert mine.public_id in page.text and other.public_id not in page.text


@pytest.mark.parametrize("model", ["flag", "flagreview", "flagevent"])
def test_the_unfiltered_history_lists_are_newest_first_by_key_not_by_a_sort_of_every_row(
    admin_client, curator, application, model
):
    older, newer = FlagFactory(application=application), FlagFactory(application=ApplicationFactory())
    for flag in (older, newer):
        flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    with CaptureQueriesContext(connection) as captured:
        page = admin_client.get(f"/admin/feedback/{model}/")
    assert page.text.index(newer.public_id) < page.text.index(older.public_id)
    listing = [q["sql"] for q in captured if q["sql"].startswith(f'SELECT "feedback_{model}"."id"')]
    order_by = listing[-1].rsplit("ORDER BY", 1)[1]
    assert "created_at" not in order_by and f'"feedback_{model}"."id" DESC' in order_by
