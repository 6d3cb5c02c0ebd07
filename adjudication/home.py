"""Home-page cards: what is waiting for a human in adjudication."""

from django.urls import reverse

from consoles.extensions import HomeCard
from consoles.models import Application

from .selectors import cases_needing_second_label_count, queue_open_count


def home_cards(application: Application) -> list[HomeCard]:
    return [
        HomeCard(
            title="Open queue entries",
            count=queue_open_count(application=application),
            caption="Cases selected for human labels",
            url=reverse("adjudication:queue", args=[application.slug]),
        ),
        HomeCard(
            title="Cases needing a second label",
            count=cases_needing_second_label_count(application=application),
            caption="One curator has labelled; agreement needs two",
            url=reverse("adjudication:index", args=[application.slug]) + "?status=one_label",
        ),
    ]
