"""Case feedback: a disposition with a frozen manifest, never a review decision."""

import pytest
from django.db import IntegrityError, transaction

from consoles.errors import InvalidInput
from consoles.tests.factories import ApiTokenFactory, ApplicationFactory
from feedback.models import CaseFeedback
from feedback.selectors import case_feedback_list, case_refs_with_disagreement
from feedback.services import Actor, case_feedback_submit

pytestmark = pytest.mark.django_db

MANIFEST = {"schema_version": 1, "fusion_policy_name": "baseline", "fusion_policy_version": 2, "disabled_sensors": []}


def test_operator_and_agent_feedback_freeze_the_manifest(application, curator):
    manifest = dict(MANIFEST)
    token = ApiTokenFactory(application=application)
    human = case_feedback_submit(
        application=application, case_ref="c1", manifest=manifest, disposition="disagrees", note=" no ", actor=Actor(user=curator)
    )
    agent = case_feedback_submit(
        application=application, case_ref="c1", manifest=manifest, disposition="agrees", actor=Actor(token=token)
    )
    manifest["fusion_policy_version"] = 3  # the case is re-mined later
    human.refresh_from_db()
    assert human.bound_manifest["fusion_policy_version"] == 2 and human.note == "no"
    assert (human.author_kind, agent.author_kind) == ("operator", "agent")
    assert agent.author_user is None and agent.author_token == token


def test_bad_disposition_writes_nothing(application, curator):
    with pytest.raises(InvalidInput) as info:
        case_feedback_submit(application=application, case_ref="c1", manifest={}, disposition="maybe", actor=Actor(user=curator))
    assert "disposition" in info.value.fields
    assert not CaseFeedback.objects.exists()


def test_an_operator_row_needs_a_user(application):
    with pytest.raises(IntegrityError), transaction.atomic():
        CaseFeedback.objects.create(application=application, case_ref="c1", disposition="agrees", bound_manifest={}, author_kind="operator")


def test_disagreement_selector_is_per_application(application, curator):
    other = ApplicationFactory(slug="other")
    for app, ref, disposition in [(application, "c1", "disagrees"), (application, "c2", "agrees"), (application, "c1", "disagrees"), (other, "c3", "disagrees")]:
        case_feedback_submit(application=app, case_ref=ref, manifest={}, disposition=disposition, actor=Actor(user=curator))
    assert case_refs_with_disagreement(application=application) == {"c1"}
    assert [f.disposition for f in case_feedback_list(application=application, case_ref="c1")] == ["disagrees", "disagrees"]
