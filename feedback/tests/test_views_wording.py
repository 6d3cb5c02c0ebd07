"""What curators read on the triage screens: statuses and verdicts by their labels
(the keys stay in classes, form values and URLs), times that say UTC, and a
refusal that says what to do."""

import pytest
from django.urls import reverse

from consoles.timestamps import on_screen
from feedback.models import Flag, FlagEvent

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db


def _detail(flag):
    return reverse("feedback:detail", args=[flag.application.slug, flag.public_id])


def _review(flag):
    return reverse("feedback:review", args=[flag.application.slug, flag.public_id])


def test_the_queue_table_shows_status_labels_and_times_in_utc(client, application, viewer):
    flag = FlagFactory(application=application)
    client.force_login(viewer)
    html = client.get(reverse("feedback:queue", args=["acme"]) + "?status=pending").content.decode()
    assert '<span class="badge pending">Pending</span>' in html
    assert f'<td class="when">{on_screen(flag.created_at)}</td>' in html


def test_the_detail_shows_status_labels_and_times_in_utc(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    client.post(_review(flag), {"decision": "rejected", "version": 1, "note": "noise"})
    client.post(_review(flag), {"decision": "pending", "version": 2})
    html = client.get(_detail(flag)).content.decode()
    assert 'data-testid="flag-status">Pending</span>' in html
    assert f"<dt>Created</dt><dd>{on_screen(flag.created_at)}</dd>" in html
    history = html.split('data-testid="history"', 1)[1]
    assert "<td>Pending</td>\n      <td>Rejected</td>" in history  # from, to
    assert "<td>Rejected</td>\n      <td>Pending</td>" in history
    rejected = FlagEvent.objects.get(flag=flag, action="rejected").created_at
    assert f"<td>{rejected:%Y-%m-%d %H:%M:%S} UTC</td>" in history


def test_a_conflict_names_the_other_decision_in_words(client, application, curator, curator2):
    flag = FlagFactory(application=application)
    client.force_login(curator2)
    client.post(_review(flag), {"decision": "approved", "version": 1, "axis": "hallucination",
                                "verdict": "false_positive"})
    client.force_login(curator)
    html = client.post(_review(flag), {"decision": "rejected", "version": 1}).content.decode()
    assert ('It is now <span class="badge approved">approved</span> on axis hallucination, '
            "false positive (an over-flag), version 2.") in html
    assert "(false_positive)" not in html


def test_reopening_a_flag_that_is_already_pending_says_what_to_do(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "pending", "version": 1})  # a page from before a re-open
    html = response.content.decode()
    assert response.status_code == 422
    assert "already pending: nothing to re-open; approve or reject it instead" in html
    assert Flag.objects.get(pk=flag.pk).version == 1


def test_capture_labels_read_as_words_and_post_their_keys(client, application, curator):
    application.capture_labels = ["correct", "should_have_refused"]
    application.save()
    capture = CaptureFactory(application=application)
    client.force_login(curator)
    html = client.get(_detail(capture)).content.decode()
    assert '<input type="radio" name="label" value="should_have_refused" data-key="2"> should have refused' in html
    client.post(_review(capture), {"decision": "labelled", "version": 1, "label": "should_have_refused"})
    capture.refresh_from_db()
    assert capture.capture_label == "should_have_refused"
    html = client.get(_detail(capture)).content.decode()
    assert "<dt>Label</dt><dd>should have refused</dd>" in html


def _history(html: str) -> str:
    return html.split('data-testid="history"', 1)[1].split("</table>", 1)[0]


def test_the_queue_names_axes_in_words_and_filters_by_their_keys(client, application, viewer):
    FlagFactory(application=application, problem="personal_data", suggested_axis="privacy_leak")
    FlagFactory(application=application, problem="dangerous_advice", suggested_axis="self_harm")
    client.force_login(viewer)
    html = client.get(reverse("feedback:queue", args=["acme"]) + "?status=pending").content.decode()
    table = html.split('data-testid="queue-table"', 1)[1]
    assert "<td>privacy leak</td>" in table and "<td>self harm</td>" in table
    assert "privacy_leak" not in table and "self_harm" not in table
    assert '<option value="privacy_leak">privacy leak</option>' in html  # the filter: words shown, key sent
    html = client.get(reverse("feedback:queue", args=["acme"]) + "?status=pending&axis=privacy_leak").content.decode()
    assert '<option value="privacy_leak" selected>privacy leak</option>' in html
    table = html.split('data-testid="queue-table"', 1)[1]
    assert "<td>privacy leak</td>" in table and "<td>self harm</td>" not in table


def test_the_detail_names_axes_in_words_and_approves_by_key(client, application, curator):
    flag = FlagFactory(application=application, problem="personal_data", suggested_axis="privacy_leak",
                       detector_scores={"privacy_leak": 0.8, "self_harm": 0.1})
    client.force_login(curator)
    html = client.get(_detail(flag)).content.decode()
    assert "<dt>Suggested axis</dt><dd>privacy leak</dd>" in html
    assert '<th scope="row">privacy leak</th>' in html and 'aria-label="privacy leak score"' in html
    assert '<th scope="row">self harm</th>' in html and 'aria-label="self harm score"' in html
    assert '<option value="privacy_leak" selected>privacy leak</option>' in html  # the approve form
    assert '<option value="self_harm">self harm</option>' in html
    client.post(_review(flag), {"decision": "approved", "version": 1, "axis": "self_harm",
                                "verdict": "false_negative"})
    flag.refresh_from_db()
    assert flag.axis == "self_harm"
    html = client.get(_detail(flag)).content.decode()
    assert "<dt>Final axis</dt><dd>self harm · " in html
    assert " · axis privacy leak → self harm" in _history(html)
    assert "self_harm" not in _history(html)


def test_a_conflict_names_the_axis_in_words(client, application, curator, curator2):
    flag = FlagFactory(application=application, problem="personal_data", suggested_axis="privacy_leak")
    client.force_login(curator2)
    client.post(_review(flag), {"decision": "approved", "version": 1, "axis": "privacy_leak",
                                "verdict": "false_negative"})
    client.force_login(curator)
    html = client.post(_review(flag), {"decision": "rejected", "version": 1}).content.decode()
    assert "on axis privacy leak, false negative" in html and "on axis privacy_leak" not in html


def test_the_history_names_a_changed_capture_label_in_words(client, application, curator):
    application.capture_labels = ["correct", "should_have_refused", "made_things_up"]
    application.save()
    capture = CaptureFactory(application=application)
    client.force_login(curator)
    client.post(_review(capture), {"decision": "labelled", "version": 1, "label": "should_have_refused"})
    client.post(_review(capture), {"decision": "pending", "version": 2})
    client.post(_review(capture), {"decision": "labelled", "version": 3, "label": "made_things_up"})
    capture.refresh_from_db()
    assert capture.capture_label == "made_things_up"
    history = _history(client.get(_detail(capture)).content.decode())
    assert " · label — → should have refused" in history
    assert " · label should have refused → —" in history
    assert " · label — → made things up" in history
    assert "should_have_refused" not in history and "made_things_up" not in history
