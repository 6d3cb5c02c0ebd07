"""Gold labels per day and kappa over time, as the overview reads them."""

from datetime import UTC, date, datetime, timedelta

import pytest

from adjudication.agreement import MIN_KAPPA_CASES
from adjudication.selectors import agreement_by_day, application_agreement, gold_promotions_by_day
from adjudication.services import gold_promote, label_submit
from consoles.tests.factories import ApplicationFactory

from .factories import CaseFactory

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def _label(application, case, user, label, at):
    return label_submit(application=application, case=case, reviewer=user, label=label, rationale="checked", at=at)


def test_kappa_over_time_is_gated_and_ends_where_the_agreement_page_is(application, curator, curator2):
    # One case completes its double label each day; the second curator disagrees on every fourth.
    for n in range(MIN_KAPPA_CASES + 2):
        case = CaseFactory(application=application)
        at = START + timedelta(days=n)
        first = "reliable" if n % 2 else "unreliable"
        _label(application, case, curator, first, at)
        _label(application, case, curator2, "contradicted" if n % 4 == 0 else first, at + timedelta(hours=2))
    lonely = CaseFactory(application=application)
    _label(application, lonely, curator, "reliable", START)  # one label: no pair
    days = [START.date() + timedelta(days=i) for i in range(MIN_KAPPA_CASES + 2)]
    points = agreement_by_day(application=application, days=days)
    assert [p.n for p in points] == list(range(1, MIN_KAPPA_CASES + 3))
    gated = [p for p in points if p.kappa is None]
    assert len(gated) == MIN_KAPPA_CASES - 1 and not any(p.enough for p in gated)
    assert points[-1].kappa == pytest.approx(application_agreement(application=application).overall.kappa)
    # Another application's labels never count.
    other = ApplicationFactory(slug="other")
    assert agreement_by_day(application=other, days=days)[-1].n == 0


def test_gold_promotions_per_day_tell_first_labels_from_revisions(application, curator, curator2):
    case = CaseFactory(application=application)
    mine = _label(application, case, curator, "reliable", START)
    theirs = _label(application, case, curator2, "unreliable", START)
    gold_promote(application=application, case=case, label=mine, adjudicator=curator, at=START + timedelta(hours=1))
    gold_promote(application=application, case=case, label=theirs, adjudicator=curator, at=START + timedelta(days=2))
    assert gold_promotions_by_day(application=application, first=date(2026, 11, 1), last=date(2026, 11, 30)) == [
        (date(2026, 11, 1), 1, 0),
        (date(2026, 11, 3), 0, 1),
    ]
    assert gold_promotions_by_day(application=application, first=date(2026, 11, 4), last=date(2026, 11, 30)) == []
