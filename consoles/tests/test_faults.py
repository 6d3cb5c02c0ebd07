"""The database going away mid-request: 503, and nothing half-written.

The failure is injected into the request's write of a flag's history row (after
the flag's own INSERT, in the same transaction), or after the first write of
the request's transaction (the review's update), which is where a dropped
connection hurts most.
The reliability harness does the same for real, against PostgreSQL refusing
connections (`python -m reliability --only faults`).
"""

from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.urls import reverse

from consoles.testing import bearer
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


@contextmanager
def _write_fails(error: Exception):
    """The request's statement that writes a history row raises `error`: a new
    flag's event is written after the flag, a review's after its update, each in
    the write's one transaction."""

    def fail(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("INSERT") and "feedback_flagevent" in sql:
            raise error
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        yield


@pytest.fixture
def lost_database():
    with _write_fails(OperationalError("server closed the connection unexpectedly")):
        yield


@pytest.fixture
def browser():
    return Client(raise_request_exception=False)


def test_api_write_answers_503_and_stores_nothing(browser, application, app_token, lost_database):
    response = browser.post(
        "/api/v1/flags", {"region": "answer", "problem": "fabricated", "message_id": "m-1"},
        content_type="application/json", **bearer(app_token),
    )
    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "unavailable"
    assert "nothing was saved" in response.json()["error"]["message"]
    assert not Flag.objects.exists() and not FlagEvent.objects.exists()


def test_screen_write_answers_503_and_leaves_the_flag_as_it_was(browser, application, curator, lost_database):
    flag = FlagFactory(application=application)
    browser.force_login(curator)
    url = reverse("feedback:review", args=[application.slug, flag.public_id])
    response = browser.post(url, {"decision": "rejected", "version": flag.version})
    assert response.status_code == 503 and "Temporarily unavailable" in response.text
    flag.refresh_from_db()
    assert (flag.status, flag.version) == ("pending", 1)
    assert not FlagReview.objects.exists()


def test_other_failures_stay_500_with_the_api_error_shape(browser, application, app_token):
    with _write_fails(RuntimeError("a bug")):
        response = browser.post(
            "/api/v1/flags", {"region": "answer", "problem": "fabricated", "message_id": "m-1"},
            content_type="application/json", **bearer(app_token),
        )
    assert response.status_code == 500 and response.json()["error"]["code"] == "server_error"
    assert not Flag.objects.exists()
