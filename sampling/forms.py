"""Input validation for the sampling screens."""

from django import forms

from .comparison import DEFAULT_DRAWS, MAX_SEED
from .policy import DEFAULT_MAX_PER_PATTERN
from .services import MAX_BUDGET, MAX_PER_PATTERN_LIMIT

# The screen computes in the request; the command allows more draws.
SCREEN_MAX_DRAWS = 20_000


class PlanForm(forms.Form):
    budget = forms.IntegerField(
        min_value=1, max_value=MAX_BUDGET, initial=20,
        help_text="How many cases humans can review in this round.",
    )
    max_per_pattern = forms.IntegerField(
        label="Max per pattern", min_value=1, max_value=MAX_PER_PATTERN_LIMIT,
        initial=DEFAULT_MAX_PER_PATTERN,
        help_text="At most this many cases of one shape (subject, mining strategies, verdict).",
    )


class CompareForm(forms.Form):
    budget = forms.IntegerField(label="Top K", min_value=1, max_value=MAX_BUDGET, initial=10)
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0)
    draws = forms.IntegerField(min_value=1, max_value=SCREEN_MAX_DRAWS, initial=DEFAULT_DRAWS)
