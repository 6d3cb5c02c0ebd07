"""A decision's write transaction holds its writes only (issue 29's decision tail):
on SQLite it holds the database's one write lock, so a read inside it makes every
other curator wait longer. What it writes is unchanged."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles.errors import Conflict
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory

pytestmark = pytest.mark.django_db


def _inside_transaction(queries: list[dict]) -> list[str]:
    """The statements between the decision's savepoint (the test runs in a
    transaction) and its release."""
    sql = [q["sql"] for q in queries]
    start = next(i for i, s in enumerate(sql) if s.startswith("SAVEPOINT"))
    end = next(i for i, s in enumerate(sql) if s.startswith("RELEASE SAVEPOINT"))
    return sql[start + 1:end]


def test_a_decision_reads_nothing_inside_its_write_transaction(application, curator):
    flag = Flag.objects.select_related("application").get(pk=FlagFactory(application=application, claimed_by=curator).pk)
    seen = flag.version
    with CaptureQueriesContext(connection) as queries:
        decided = flag_review(flag=flag, reviewer=curator, status="approved", version=seen,
                              verdict="false_positive", note="checked")
    inside = _inside_transaction(queries.captured_queries)
    # The webhook outbox is part of the decision's transaction by design (an event is
    # recorded with its decision or not at all): one lookup of the application's
    # endpoints, on their own table, and nothing else of it with none subscribed.
    outbox = [s for s in inside if '"consoles_webhook' in s]
    assert [s.split()[0] for s in outbox] == ["SELECT"] and "JOIN" not in outbox[0], outbox
    assert [s.split()[0] for s in inside if s not in outbox] == ["UPDATE", "INSERT", "INSERT"], inside
    # The returned flag is the stored row, though it was not read back.
    stored = Flag.objects.get(pk=flag.pk)
    for name in ("status", "version", "axis", "verdict", "capture_label", "review_note", "updated_at",
                 "claimed_by_id", "claimed_until", "weight", "twin_prompt", "attack_family"):
        assert getattr(decided, name) == getattr(stored, name), name
    assert stored.claimed_by_id is None and stored.status == "approved" and stored.version == seen + 1
    review = FlagReview.objects.get(flag=flag)
    assert (review.flag_version, review.verdict, review.axis) == (stored.version, "false_positive", stored.axis)
    assert FlagEvent.objects.filter(flag=flag, action="approved").count() == 1


def test_a_stale_version_reads_the_current_state_after_its_transaction_and_writes_nothing(application, curator):
    flag = FlagFactory(application=application)
    flag_review(flag=Flag.objects.get(pk=flag.pk), reviewer=curator, status="rejected", version=flag.version)
    with CaptureQueriesContext(connection) as queries, pytest.raises(Conflict) as caught:
        flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version)
    assert [s.split()[0] for s in _inside_transaction(queries.captured_queries)] == ["UPDATE"]
    assert caught.value.current["status"] == "rejected"
    assert FlagReview.objects.filter(flag=flag).count() == 1
