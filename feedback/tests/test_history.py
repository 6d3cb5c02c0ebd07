"""Ended days of the history are summed once and kept; whatever changes an ended
day (erasure, purge, a write dated in the past) makes them be summed again."""

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from consoles.appendonly import history_delete_allowed
from consoles.tests.factories import ApiTokenFactory
from feedback import history as history_module
from feedback.history import STORE_AFTER, history_days, history_days_forget
from feedback.models import FlagEvent, HistoryDay, HistoryEpoch
from feedback.selectors import flag_decision_delays, flag_decisions_by_day, flag_transitions_by_day
from feedback.services import Actor, flag_review, flag_submit, flags_purge_expired, subject_erase

pytestmark = pytest.mark.django_db

D1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
DAY1, DAY2 = D1.date(), D1.date() + timedelta(days=1)
FIRST, LAST = date(2026, 11, 1), date(2026, 11, 20)


def _flag(application, n: int, at: datetime, session: str = "s"):
    actor = Actor(token=ApiTokenFactory(application=application))
    return flag_submit(application=application, actor=actor, region="answer", message_id=f"m{n}", at=at,
                       problem="fabricated", session_id=session).flag


def _decide(flag, user, at: datetime, status: str = "approved"):
    return flag_review(flag=flag, reviewer=user, status=status, version=flag.version, at=at)


@pytest.fixture
def history(application, curator):
    """Two flags on day 1 (different subjects), both approved on day 2."""
    for n, session in ((1, "keep"), (2, "erase-me")):
        _decide(_flag(application, n, D1 + timedelta(hours=n), session=session), curator, D1 + timedelta(days=1))
    return application


def _transitions(application) -> list:
    return sorted(flag_transitions_by_day(application=application, since=FIRST))


def test_an_ended_day_is_summed_once_then_read_back(history, django_assert_num_queries):
    first_read = _transitions(history)
    assert first_read == [(DAY1, "", "pending", 2), (DAY2, "pending", "approved", 2)]
    # Every day of the range has ended: one row each, empty days included.
    first_live_day = (timezone.now() - STORE_AFTER).date()
    assert HistoryDay.objects.filter(application=history).count() == (first_live_day - FIRST).days
    # Behind the services' back (no service deletes a single event): the stored
    # sums are what is read, with no aggregate over the events.
    one = FlagEvent.objects.filter(application=history, to_status="approved").first()
    with transaction.atomic(), history_delete_allowed():  # the database refuses it otherwise
        FlagEvent.objects.filter(pk=one.pk).erase()
    with django_assert_num_queries(2):  # the stored days, and today live
        assert _transitions(history) == first_read
    history_days_forget(application_id=history.pk)
    assert _transitions(history) == [(DAY1, "", "pending", 2), (DAY2, "pending", "approved", 1)]


def test_erasing_a_subject_changes_the_days_it_was_in(history, curator):
    assert sorted(flag_decisions_by_day(application=history, first=FIRST, last=LAST)) == [(DAY2, "cora", 2)]
    subject_erase(application=history, session_id="erase-me", requested_by="dpo")
    assert sorted(flag_decisions_by_day(application=history, first=FIRST, last=LAST)) == [(DAY2, "cora", 1)]
    assert _transitions(history) == [(DAY1, "", "pending", 1), (DAY2, "pending", "approved", 1)]


def test_the_retention_purge_changes_the_days_it_emptied(history):
    assert flag_decision_delays(application=history, first=FIRST, last=LAST).overall.count == 2
    history.retention_days = 1
    history.save(update_fields=["retention_days"])
    flags_purge_expired()
    assert flag_decision_delays(application=history, first=FIRST, last=LAST).overall.count == 0
    assert _transitions(history) == []


def test_a_write_dated_on_an_ended_day_is_counted(history):
    _transitions(history)
    _flag(history, 3, D1 + timedelta(hours=5))  # an import keeping its original time
    assert _transitions(history) == [(DAY1, "", "pending", 3), (DAY2, "pending", "approved", 2)]


def test_today_is_summed_live_and_never_stored(application, curator):
    today = timezone.now().date()
    flag_transitions_by_day(application=application, since=FIRST)
    _flag(application, 1, timezone.now())
    assert sorted(flag_transitions_by_day(application=application, since=FIRST)) == [(today, "", "pending", 1)]
    assert not HistoryDay.objects.filter(application=application, day=today).exists()


def test_a_row_summed_under_an_older_epoch_is_never_read(history):
    expected = _transitions(history)
    stale_epoch = HistoryEpoch.objects.get(application=history).epoch
    history_days_forget(application_id=history.pk)
    # A viewer that was summing while an erasure committed writes its row late.
    HistoryDay.objects.create(application=history, day=DAY1, epoch=stale_epoch, computed_at=timezone.now(),
                              transitions=[["", "pending", 999]])
    assert _transitions(history) == expected
    assert history_days(application=history, first=DAY1, last=DAY1)[DAY1].transitions == [("", "pending", 2)]


def test_another_applications_days_are_kept_apart(history, curator):
    from consoles.tests.factories import ApplicationFactory

    other = ApplicationFactory(slug="other")
    _decide(_flag(other, 9, D1), curator, D1 + timedelta(hours=1), status="rejected")
    _transitions(history)
    subject_erase(application=other, session_id="s", requested_by="dpo")
    # The other application's erasure leaves this one's stored days in place.
    assert HistoryDay.objects.filter(application=history).exists()
    assert not HistoryDay.objects.filter(application=other).exists()
    assert _transitions(history) == [(DAY1, "", "pending", 2), (DAY2, "pending", "approved", 2)]


@pytest.mark.parametrize("waits", [[], [0, 5, 3600], [0, 2**32 - 1], [7, 2**32, 2**40]])
def test_stored_waits_read_back_exactly(waits):
    import numpy as np

    from feedback.history import _pack_waits, _unpack_waits

    packed = _pack_waits(np.asarray(waits, dtype=np.int64))
    assert _unpack_waits(packed).tolist() == waits
    assert len(packed) == (0 if not waits else 1 + len(waits) * (4 if max(waits) < 2**32 else 8))


def test_the_cron_command_sums_the_ended_days_once(history):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("sum_history", "--application", history.slug, "--days", "5", stdout=out)
    assert out.getvalue().strip() == f"{history.slug}: 5 days summed, 0 already stored"
    assert HistoryDay.objects.filter(application=history).count() == 5
    out = StringIO()
    call_command("sum_history", "--days", "5", "--json", stdout=out)
    assert '"summed": 0, "stored": 5' in out.getvalue()
    out = StringIO()
    call_command("sum_history", "--application", history.slug, "--days", "6", stdout=out)
    assert out.getvalue().strip() == f"{history.slug}: 1 day summed, 5 already stored"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--application", "nope"], "Unknown application 'nope'."),
        (["--application", ""], "Unknown application ''."),  # an unset $APP, not "every application"
        (["--days", "0"], "--days must be between 1 and 366, not 0."),
        (["--days", "400"], "--days must be between 1 and 366, not 400."),
    ],
)
def test_the_cron_command_refuses_bad_input_with_one_line_and_exit_2(history, args, message):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as raised:
        call_command("sum_history", *args)
    assert raised.value.returncode == 2 and str(raised.value) == message
    assert not HistoryDay.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_write_dated_on_an_ended_day_forgets_the_days_in_its_own_transaction(application, monkeypatch):
    """Outside any transaction too (where a present-time flag on PostgreSQL is a
    single statement): forgetting first and writing after in two transactions
    would let a reader store the day without the new flag, for good."""
    seen = []
    forget = history_module.history_days_forget

    def watched(**kwargs):
        seen.append(connection.in_atomic_block)
        forget(**kwargs)

    monkeypatch.setattr(history_module, "history_days_forget", watched)
    _flag(application, 1, timezone.now())
    assert seen == []  # a present-time write forgets nothing
    _flag(application, 2, D1)
    assert seen == [True]
    assert FlagEvent.objects.filter(application=application).count() == 2

