"""Forms of the teaching app: input validation for the screens."""

from django import forms

from .models import Decision, ProposalState

STATE_FILTERS = [(s, label) for s, label in ProposalState.choices] + [("all", "All")]


class StateFilterForm(forms.Form):
    state = forms.ChoiceField(choices=STATE_FILTERS, required=False)

    def selected(self) -> str:
        if self.is_valid() and self.cleaned_data["state"]:
            return self.cleaned_data["state"]
        return ProposalState.PENDING


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices)
    note = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Why: kept with the decision in the append-only log.",
    )


class ProposeForm(forms.Form):
    allow_evaluative = forms.BooleanField(
        required=False, label="Allow evaluative", help_text="Needs a strong-tier hedge on the candidate."
    )


class SupersedeForm(forms.Form):
    entry = forms.IntegerField(min_value=1, label="Retire entry #")
    superseded_by = forms.IntegerField(min_value=1, label="Superseded by entry #")
    note = forms.CharField(required=False, max_length=2000)
