"""Input validation for the feedback screens (the services check the domain rules)."""

from django import forms

from consoles.errors import InvalidInput
from consoles.models import Application
from consoles.text import humanise
from consoles.widgets import IsoDateInput

from .models import AuthorKind, FlagStatus, Region, Verdict
from .search import MAX_QUERY_LENGTH
from .selectors import FlagFilters
from .services import MAX_TEXT, NOTE_LIMIT

FILTER_KEYS = ("q", "status", "axis", "region", "problem", "author_kind", "created_from", "created_to", "sort")


def _choices(pairs, blank: str = "Any") -> list[tuple[str, str]]:
    return [("", blank), *pairs]


class FlagFilterForm(forms.Form):
    # Length and wording are checked by the selector (FlagFilters.validate), as for the API.
    q = forms.CharField(
        required=False, label="Search", strip=True,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "words in prompt, answer or note",
                                      "maxlength": MAX_QUERY_LENGTH, "data-testid": "search"}),
    )
    status = forms.ChoiceField(required=False, choices=_choices(FlagStatus.choices))
    axis = forms.ChoiceField(required=False)
    region = forms.ChoiceField(required=False, choices=_choices(Region.choices))
    problem = forms.ChoiceField(required=False)
    author_kind = forms.ChoiceField(required=False, label="Flagged by", choices=_choices(AuthorKind.choices))
    # ISO days only, as the overview's range and the API: one meaning for "2026-03-04" everywhere.
    created_from = forms.DateField(required=False, label="From", widget=IsoDateInput(), input_formats=["%Y-%m-%d"])
    created_to = forms.DateField(required=False, label="To", widget=IsoDateInput(), input_formats=["%Y-%m-%d"])
    sort = forms.ChoiceField(
        required=False, choices=[("-created", "Newest first"), ("created", "Oldest first")]
    )

    def __init__(self, *args, application: Application, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.application = application
        self.fields["axis"].choices = _choices((a, humanise(a)) for a in application.axes)
        self.fields["problem"].choices = _choices((p["key"], p["label"]) for p in application.problems)

    def clean(self) -> dict:
        data = super().clean()
        # The same rules as the API's (the days' range and order): the selector's own check.
        try:
            self.filters().validate(self.application)
        except InvalidInput as exc:
            exc.add_to_form(self)
        return data

    def filters(self) -> FlagFilters:
        data = self.cleaned_data
        return FlagFilters(
            status=data.get("status") or "", axis=data.get("axis") or "", region=data.get("region") or "",
            problem=data.get("problem") or "", author_kind=data.get("author_kind") or "",
            created_from=data.get("created_from"), created_to=data.get("created_to"), q=data.get("q") or "",
        )

    def order(self) -> str:
        return self.cleaned_data.get("sort") or "-created"


class ReviewForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[("approved", "Approve"), ("rejected", "Reject"), ("pending", "Re-open"), ("labelled", "Label")]
    )
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    axis = forms.ChoiceField(required=False)
    # Radio groups with nothing chosen: the screen's keys (1, 2, ...) choose, `a` records.
    verdict = forms.ChoiceField(required=False, choices=Verdict.choices, widget=forms.RadioSelect)
    label = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    note = forms.CharField(required=False, max_length=NOTE_LIMIT, widget=forms.Textarea(attrs={"rows": 2}))
    twin_prompt = forms.CharField(required=False, label="Benign twin prompt",
                                  widget=forms.Textarea(attrs={"rows": 2}))
    twin_answer = forms.CharField(required=False, label="Benign twin answer",
                                  widget=forms.Textarea(attrs={"rows": 2}))
    weight = forms.FloatField(required=False, min_value=0, max_value=1,
                              widget=forms.NumberInput(attrs={"step": "any"}))
    attack_family = forms.CharField(required=False, max_length=100)
    correction = forms.CharField(required=False, max_length=MAX_TEXT,
                                 label="Correction (the answer it should have given)",
                                 widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, application: Application, **kwargs) -> None:
        # The queue's filters are on the same page with fields of the same names
        # (axis, ...): distinct ids keep each label tied to its own control.
        kwargs.setdefault("auto_id", "review_%s")
        super().__init__(*args, **kwargs)
        self.fields["axis"].choices = [(a, humanise(a)) for a in application.axes]
        self.fields["label"].choices = [(label, humanise(label)) for label in application.capture_labels]

    def clean(self) -> dict:
        data = super().clean()
        # The service would take the suggested axis and a "miss" for a missing verdict
        # (the API documents that); from the screen, a decision without its truth is
        # a mistake to point out, never one to fill in.
        if data.get("decision") == "approved" and not data.get("verdict") and "verdict" not in self.errors:
            self.add_error("verdict", "Choose a verdict: 1 for a miss (false negative), "
                                      "2 for an over-flag (false positive).")
        if data.get("decision") == "labelled" and not data.get("label") and "label" not in self.errors:
            self.add_error("label", "Choose a label (its number key chooses it).")
        return data

    def service_kwargs(self) -> dict:
        data = self.cleaned_data
        return {
            "status": data["decision"], "version": data["version"], "axis": data.get("axis") or None,
            "verdict": data.get("verdict") or None, "label": data.get("label") or None,
            "note": data.get("note") or "", "twin_prompt": data.get("twin_prompt") or None,
            "twin_answer": data.get("twin_answer") or None, "weight": data.get("weight"),
            "attack_family": data.get("attack_family") or None,
            "correction": data.get("correction") or None,
        }


class BulkRejectForm(forms.Form):
    ids = forms.MultipleChoiceField(required=True, error_messages={"required": "Select at least one flag."})
    note = forms.CharField(required=False, max_length=NOTE_LIMIT)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Any id is acceptable here; the service keeps to the application's flags.
        self.fields["ids"].choices = [(v, v) for v in self.data.getlist("ids")] if self.data else []
