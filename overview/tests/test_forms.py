from datetime import date, timedelta

from django.utils import timezone

from overview.forms import MAX_DAYS, DateRangeForm


def test_no_dates_is_the_last_30_days_up_to_today():
    form = DateRangeForm({})
    assert form.is_valid()
    today = timezone.now().date()
    assert form.range == (today - timedelta(days=29), today)


def test_only_a_start_gives_30_days_from_it():
    form = DateRangeForm({"from": "2026-01-10"})
    assert form.is_valid() and form.range == (date(2026, 1, 10), date(2026, 2, 8))


def test_bad_dates_are_form_errors():
    assert DateRangeForm({"from": "2026-02-30"}).errors["from"] == ["Enter a valid date."]
    assert "before the start" in DateRangeForm({"from": "2026-03-02", "to": "2026-03-01"}).errors["to"][0]
    too_long = DateRangeForm({"from": "2024-01-01", "to": "2026-01-01"})
    assert f"at most {MAX_DAYS} days" in too_long.errors["to"][0]


def test_a_start_after_today_without_an_end_is_refused_on_the_start():
    soon = timezone.now().date() + timedelta(days=3)
    form = DateRangeForm({"from": soon.isoformat()})
    assert form.errors == {"from": ["The start is after today: choose an end as well."]}
    assert DateRangeForm({"from": soon.isoformat(), "to": (soon + timedelta(days=2)).isoformat()}).is_valid()
