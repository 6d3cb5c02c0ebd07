"""Factories for the exemplar bank; related rows stay on one application."""

import factory

from consoles.tests.factories import ApplicationFactory
from exemplars.models import BankSettings, DetectorProfile
from feedback.services import flag_review
from feedback.tests.factories import FlagFactory


class DetectorProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = DetectorProfile

    application = factory.SubFactory(ApplicationFactory)
    name = factory.Sequence(lambda n: f"detector-{n}")
    axes = factory.LazyFunction(lambda: ["jailbreak", "prompt_injection", "hallucination", "toxicity"])


class BankSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BankSettings
        django_get_or_create = ("application",)

    application = factory.SubFactory(ApplicationFactory)
    enabled = True


def approved_flag(application, reviewer, *, text: str, region: str = "prompt", axis: str = "jailbreak",
                  verdict: str = "false_negative", twin: str = "", weight: float | None = None, **flag_fields):
    """A flag approved by a human curator through the review service (as in production)."""
    texts = {"prompt": text, "answer": "-"} if region == "prompt" else {"prompt": "-", "answer": text}
    flag = FlagFactory(application=application, region=region, suggested_axis=axis, **texts, **flag_fields)
    twin_field = "twin_prompt" if region == "prompt" else "twin_answer"
    return flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version, axis=axis,
                       verdict=verdict, weight=weight, **({twin_field: twin} if twin else {}))
