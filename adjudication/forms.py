"""Forms of the adjudication app: input validation for the screens."""

from django import forms

from consoles.models import Application
from consoles.text import humanise
from feedback.models import Disposition

STATUS_CHOICES = [
    ("", "Any"),
    ("unlabelled", "No label yet"),
    ("one_label", "Needs a second label"),
    ("double", "Double-labelled"),
    ("gold", "Has a gold label"),
    ("queued", "In the queue"),
]


class CaseFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=200)
    status = forms.ChoiceField(required=False, choices=STATUS_CHOICES)
    # A strategy's exact name, as on its badge in the list (a badge links to this filter).
    strategy = forms.CharField(required=False, label="Mined by", max_length=100,
                               widget=forms.TextInput(attrs={"placeholder": "strategy name"}))


class LabelForm(forms.Form):
    label = forms.ChoiceField(choices=[], widget=forms.RadioSelect)
    rationale = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=10_000)

    def __init__(self, *args, application: Application, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["label"].choices = [(lab, humanise(lab)) for lab in application.case_labels]


class PromoteForm(forms.Form):
    label_id = forms.IntegerField(widget=forms.HiddenInput)
    rationale = forms.CharField(required=False, max_length=10_000, label="Why (optional)")


class EnqueueForm(forms.Form):
    selection_reason = forms.CharField(max_length=500, initial="manual", label="Reason")


class CaseFeedbackForm(forms.Form):
    disposition = forms.ChoiceField(
        choices=Disposition.choices,
        widget=forms.RadioSelect,
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
