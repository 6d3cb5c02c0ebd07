"""The per-day aggregates the overview reads: grouped in the database, scoped to one application."""

import importlib
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection

from consoles.tests.factories import ApiTokenFactory, ApplicationFactory
from feedback.models import FlagReview
from feedback.selectors import (
    capture_volume_by_day,
    flag_approvals_by_axis_verdict,
    flag_count_in_status,
    flag_decision_delays,
    flag_decisions_by_day,
    flag_transitions_by_day,
)
from feedback.services import Actor, flag_review, flag_submit

pytestmark = pytest.mark.django_db

D1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
DAY1, DAY2 = D1.date(), D1.date() + timedelta(days=1)
RANGE = (date(2026, 11, 1), date(2026, 11, 30))


def _flag(application, n: int, at: datetime, problem: str = "fabricated", capture: str = ""):
    actor = Actor(token=ApiTokenFactory(application=application))
    kwargs = {"capture_reason": capture} if capture else {"problem": problem}
    return flag_submit(application=application, actor=actor, region="answer", message_id=f"m{n}", at=at,
                       prompt="p", answer="a", **kwargs).flag


def _decide(flag, user, at: datetime, status: str, **kwargs):
    return flag_review(flag=flag, reviewer=user, status=status, version=flag.version, at=at, **kwargs)


@pytest.fixture
def history(application, curator, curator2):
    """Three flags on day 1; two decided on day 2 (one re-opened and decided again);
    and a flag of another application that must never be counted."""
    a = _flag(application, 1, D1)
    b = _flag(application, 2, D1 + timedelta(hours=1), problem="offensive")
    _flag(application, 3, D1 + timedelta(hours=2))
    a = _decide(a, curator, D1 + timedelta(days=1), "approved", verdict="false_positive")
    a = _decide(a, curator2, D1 + timedelta(days=1, hours=1), "pending")
    _decide(a, curator2, D1 + timedelta(days=1, hours=2), "approved")
    _decide(b, curator, D1 + timedelta(days=1, hours=3), "rejected")
    other = ApplicationFactory(slug="other")
    _decide(_flag(other, 9, D1), curator, D1 + timedelta(days=1), "rejected")
    return application


def test_transitions_are_counted_per_day_from_and_to(history):
    rows = sorted(flag_transitions_by_day(application=history, since=RANGE[0]))
    assert rows == [
        (DAY1, "", "pending", 3),
        (DAY2, "approved", "pending", 1),
        (DAY2, "pending", "approved", 2),
        (DAY2, "pending", "rejected", 1),
    ]
    assert flag_transitions_by_day(application=history, since=DAY2 + timedelta(days=1)) == []
    assert flag_count_in_status(application=history, status="pending") == 1


def test_decisions_per_day_per_curator_leave_out_reopenings(history):
    rows = sorted(flag_decisions_by_day(application=history, first=RANGE[0], last=RANGE[1]))
    assert rows == [(DAY2, "carl", 1), (DAY2, "cora", 2)]


def test_approvals_per_axis_and_verdict(history):
    assert flag_approvals_by_axis_verdict(application=history, first=RANGE[0], last=RANGE[1]) == [
        ("hallucination", "false_negative", 1),
        ("hallucination", "false_positive", 1),
    ]


def test_captures_per_day_by_status_and_label(capturing_application, curator):
    first = _flag(capturing_application, 1, D1, capture="low_confidence")
    _flag(capturing_application, 2, D1, capture="refused")
    _flag(capturing_application, 3, D1, problem="offensive")  # a user flag, not a capture
    _decide(first, curator, D1 + timedelta(hours=2), "labelled", label="wrong")
    rows = sorted(capture_volume_by_day(application=capturing_application, first=RANGE[0], last=RANGE[1]))
    assert rows == [(DAY1, "labelled", "wrong", 1), (DAY1, "pending", "", 1)]


def _reference(values: list[float], q: float) -> float:
    """percentile_cont: linear interpolation between the closest ranks."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def test_flag_to_decision_quantiles_match_percentile_cont_per_day_and_overall(application, curator):
    delays = {DAY1: [3600, 7200, 600, 18000, 900], DAY2: [120, 86400, 4000]}
    n = 0
    for day, hours in delays.items():
        for seconds in hours:
            n += 1
            decided = datetime(day.year, day.month, day.day, 20, 0, tzinfo=UTC)
            flag = _flag(application, n, decided - timedelta(seconds=seconds))
            _decide(flag, curator, decided, "rejected")
    flag = _flag(application, 99, D1)
    _decide(_decide(flag, curator, D1 + timedelta(hours=1), "approved"), curator, D1 + timedelta(hours=2),
            "pending")  # a re-opening is not a decision: only its approval counts
    delays[DAY1].append(3600)
    result = flag_decision_delays(application=application, first=RANGE[0], last=RANGE[1], quantiles=(0.5, 0.9))
    everything = [s for values in delays.values() for s in values]
    assert result.overall.count == len(everything)
    for q in (0.5, 0.9):
        assert result.overall.quantiles[q] == pytest.approx(_reference(everything, q), abs=0.01)
        for day, values in delays.items():
            assert result.by_day[day].count == len(values)
            assert result.by_day[day].quantiles[q] == pytest.approx(_reference(values, q), abs=0.01)


def test_no_decision_gives_an_empty_result(application):
    result = flag_decision_delays(application=application, first=RANGE[0], last=RANGE[1])
    assert result.overall.count == 0 and result.by_day == {}


def test_a_decision_keeps_its_wait_and_the_migration_fills_in_earlier_ones(history):
    waits = dict(FlagReview.objects.values_list("pk", "wait_seconds"))
    assert sorted(FlagReview.objects.filter(to_status="pending").values_list("wait_seconds", flat=True)) == [None]
    approved = FlagReview.objects.get(to_status="approved", reviewer__username="cora")
    assert approved.wait_seconds == 24 * 3600  # decided a day after the flag arrived
    migration = importlib.import_module("feedback.migrations.0005_overview_indexes_and_decision_wait")
    with connection.cursor() as cursor:
        # The backfill ran before reviews became append-only (0009); the test's transaction
        # drops that trigger for a moment to replay it, and rolls the drop back with the rest.
        on = " ON feedback_flagreview" if connection.vendor == "postgresql" else ""
        cursor.execute(f"DROP TRIGGER feedback_flagreview_history_no_update{on}")
        FlagReview.objects.update(wait_seconds=None)
        cursor.execute(migration.BACKFILL[connection.vendor])
    assert dict(FlagReview.objects.values_list("pk", "wait_seconds")) == waits
