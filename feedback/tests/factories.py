"""Factories for flags; related rows stay on one application."""

import itertools

import factory
from django.utils import timezone

from consoles.tests.factories import ApiTokenFactory, ApplicationFactory
from feedback.models import AuthorKind, Flag, FlagStatus, Region
from feedback.services import flag_public_id

_messages = itertools.count(1)


class FlagFactory(factory.django.DjangoModelFactory):
    """A pending end-user flag posted by the application's integration."""

    class Meta:
        model = Flag

    application = factory.SubFactory(ApplicationFactory)
    region = Region.ANSWER
    problem = "fabricated"
    suggested_axis = "hallucination"
    axis = factory.SelfAttribute("suggested_axis")
    status = FlagStatus.PENDING
    prompt = "Who won the 1923 Paris Review prize?"
    answer = "The 1923 Paris Review prize went to ..."
    detector_scores = factory.LazyFunction(lambda: {"hallucination": 0.31})
    note = "invented a citation"
    message_id = factory.LazyFunction(lambda: f"msg_{next(_messages)}")
    session_id = "sess_7"
    author_kind = AuthorKind.END_USER
    author_token = factory.SubFactory(ApiTokenFactory, application=factory.SelfAttribute("..application"))
    capture_reason = ""
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.SelfAttribute("created_at")
    public_id = factory.LazyAttribute(
        lambda f: flag_public_id(
            application=f.application, message_id=f.message_id, region=f.region, capture=bool(f.capture_reason)
        )
    )


class CaptureFactory(FlagFactory):
    """An automated capture of a low-confidence answer."""

    problem = ""
    suggested_axis = ""
    axis = ""
    note = ""
    author_kind = AuthorKind.AGENT
    capture_reason = "low_confidence"
