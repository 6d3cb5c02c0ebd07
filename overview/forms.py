from datetime import date, timedelta

from django import forms
from django.utils import timezone

from consoles.dbfunctions import day_out_of_reach
from consoles.widgets import IsoDateInput

DEFAULT_DAYS = 30
MAX_DAYS = 366


def default_range(today: date | None = None) -> tuple[date, date]:
    """The last 30 days, today included (UTC days)."""
    today = today or timezone.now().date()
    return today - timedelta(days=DEFAULT_DAYS - 1), today


class DateRangeForm(forms.Form):
    """`?from=YYYY-MM-DD&to=YYYY-MM-DD`; either may be left out (the last 30 days)."""

    def __init__(self, data=None, *args, **kwargs) -> None:
        super().__init__(data, *args, **kwargs)
        # "from" is a Python keyword, so the fields are added here rather than declared.
        self.fields["from"] = forms.DateField(
            required=False, label="From", widget=IsoDateInput(),
            input_formats=["%Y-%m-%d"],
        )
        self.fields["to"] = forms.DateField(
            required=False, label="To", widget=IsoDateInput(),
            input_formats=["%Y-%m-%d"],
        )

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        first, last = cleaned.get("from"), cleaned.get("to")
        default_first, default_last = default_range()
        for name, value in (("from", first), ("to", last)):
            if value is not None and (why := day_out_of_reach(value)):
                self.add_error(name, why)
        if self.errors:
            return cleaned
        if last is None and first is not None and first > default_last:
            self.add_error("from", "The start is after today: choose an end as well.")
            return cleaned
        if last is None:
            last = default_last if first is None else min(default_last, first + timedelta(days=DEFAULT_DAYS - 1))
        if first is None:
            first = last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            self.add_error("to", "The end is before the start.")
        elif (last - first).days + 1 > MAX_DAYS:
            self.add_error("to", f"Choose at most {MAX_DAYS} days.")
        cleaned["from"], cleaned["to"] = first, last
        return cleaned

    @property
    def range(self) -> tuple[date, date]:
        return self.cleaned_data["from"], self.cleaned_data["to"]
