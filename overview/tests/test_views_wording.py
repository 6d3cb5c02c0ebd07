"""The overview names an application's capture labels and axes in words, like the flag screens."""

import pytest
from django.urls import reverse

from consoles.tests.factories import ApiTokenFactory
from feedback.services import Actor, flag_review, flag_submit

pytestmark = pytest.mark.django_db


def test_capture_outcomes_name_their_labels_in_words(client, application, viewer, curator):
    application.capture_enabled = application.capture_on_low_confidence = True
    application.capture_labels = ["correct", "should_have_refused"]
    application.save()
    capture = flag_submit(application=application, actor=Actor(token=ApiTokenFactory(application=application)),
                          region="answer", message_id="m1", prompt="p", answer="a",
                          capture_reason="low_confidence").flag
    flag_review(flag=capture, reviewer=curator, status="labelled", label="should_have_refused",
                version=capture.version)
    client.force_login(viewer)
    html = client.get(reverse("overview:index", args=["acme"])).content.decode()
    captures = html.split('data-testid="chart-captures"', 1)[1].split("</section>", 1)[0]
    assert "labelled should have refused" in captures and "should_have_refused" not in captures


def test_approvals_name_their_axes_in_words(client, application, viewer, curator):
    actor = Actor(token=ApiTokenFactory(application=application))
    for n, problem in enumerate(["personal_data", "personal_data", "dangerous_advice"]):
        flag = flag_submit(application=application, actor=actor, region="answer", problem=problem,
                           message_id=f"m{n}", prompt="p", answer="a").flag
        flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version)
    client.force_login(viewer)
    html = client.get(reverse("overview:index", args=["acme"])).content.decode()
    approvals = html.split('data-testid="chart-approvals"', 1)[1].split("</section>", 1)[0]
    assert "<title>privacy leak · False negative (a miss): 2" in approvals  # the chart's bar
    assert "<th scope=\"row\">privacy leak</th>" in approvals  # its table
    assert "self harm" in approvals
    assert "privacy_leak" not in approvals and "self_harm" not in approvals
