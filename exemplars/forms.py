"""Input validation for the bank screen."""

from django import forms

from consoles.text import humanise
from feedback.models import Region

from .models import DEFAULT_TAU, Embedder
from .services import MAX_SCORE_TEXT


class SettingsForm(forms.Form):
    enabled = forms.BooleanField(
        label="Consult the bank when scoring", required=False,
        help_text="Off: the score endpoint returns the detector's own scores, unchanged.",
    )
    tau = forms.FloatField(
        label="τ (match floor)", min_value=0.01, max_value=1.0, initial=DEFAULT_TAU,
        widget=forms.NumberInput(attrs={"step": "0.01"}),
        help_text="Cosine similarity at or above which an exemplar matches. Keep it high: exact-pattern recall.",
    )


class ProfileForm(forms.Form):
    name = forms.CharField(max_length=64, help_text="What the runtime sends as detector.")
    axes = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, help_text="The detector's axes.")
    embedder = forms.ChoiceField(
        choices=Embedder.choices, initial=Embedder.CONSOLE, required=False,
        help_text="External: the detector uploads its own vectors and sends the query's with each score.",
    )

    def __init__(self, *args, application, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["axes"].choices = [(axis, humanise(axis)) for axis in application.axes]


class TryForm(forms.Form):
    detector = forms.ChoiceField()
    region = forms.ChoiceField(choices=Region.choices, initial=Region.PROMPT)
    text = forms.CharField(max_length=MAX_SCORE_TEXT, widget=forms.Textarea(attrs={"rows": 4}), strip=False)
    p_detector = forms.FloatField(
        # Below the threshold by default, so a danger match shows as the flag it turns on.
        label="Detector p (every axis)", min_value=0, max_value=1, initial=0.3,
        widget=forms.NumberInput(attrs={"step": "0.01"}),
    )
    threshold = forms.FloatField(
        label="Threshold (every axis)", min_value=0, max_value=1, initial=0.5,
        widget=forms.NumberInput(attrs={"step": "0.01"}),
    )

    def __init__(self, *args, profiles, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["detector"].choices = [(p.name, p.name) for p in profiles]
