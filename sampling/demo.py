"""The sampling app's home card and demo data."""

from django.urls import reverse

from consoles.errors import DomainError
from consoles.extensions import HomeCard
from consoles.models import Application

from .models import SamplingPlan
from .selectors import plans_waiting_count
from .services import plan_create

DEMO_BUDGET = 8


def sampling_home_cards(application: Application) -> list[HomeCard]:
    return [
        HomeCard(
            title="Sampling plans to enqueue",
            count=plans_waiting_count(application=application),
            caption="plans made but not yet put into the adjudication queue",
            url=reverse("sampling:index", args=[application.slug]),
        )
    ]


def load_demo(*, application: Application, users: dict) -> None:
    """One plan in each demo application that has cases; idempotent (one plan at most)."""
    if SamplingPlan.objects.filter(application=application).exists():
        return
    try:
        plan_create(application=application, budget=DEMO_BUDGET, actor=users["curator"])
    except DomainError:
        # No case to sample in this application's demo data: nothing to show.
        return
