"""The decision screens' server side: no verdict or label by default, decisions in
place for htmx, every refused field named beside it, one note limit, long texts folded."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from consoles.testing import bearer
from consoles.tests.factories import application_token, personal_token
from feedback.models import Flag, FlagReview
from feedback.services import NOTE_LIMIT

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "detail"}


def _detail(flag):
    return reverse("feedback:detail", args=[flag.application.slug, flag.public_id])


def _review(flag):
    return reverse("feedback:review", args=[flag.application.slug, flag.public_id])


def _verdict_fieldset(html: str) -> str:
    return html.split('data-choice="verdict"', 1)[1].split("</fieldset>", 1)[0]


def test_the_approve_form_has_no_verdict_chosen_and_shows_the_keys(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    fieldset = _verdict_fieldset(client.get(_detail(flag)).content.decode())
    assert "checked" not in fieldset
    assert 'value="false_negative" data-key="1"' in fieldset and "<kbd>1</kbd>" in fieldset
    assert 'value="false_positive" data-key="2"' in fieldset and "<kbd>2</kbd>" in fieldset


def test_an_approve_without_a_verdict_is_a_form_error_and_writes_nothing(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "approved", "version": 1, "axis": "hallucination"})
    html = response.content.decode()
    assert response.status_code == 422
    assert "Choose a verdict: 1 for a miss" in _verdict_fieldset(html)  # beside the choice
    assert Flag.objects.get(pk=flag.pk).status == "pending" and not FlagReview.objects.exists()


def test_a_label_without_a_label_is_a_form_error(client, application, curator):
    capture = CaptureFactory(application=application)
    client.force_login(curator)
    html = client.get(_detail(capture)).content.decode()
    labels = html.split('data-choice="label"', 1)[1].split("</fieldset>", 1)[0]
    assert "checked" not in labels and 'data-key="1"' in labels
    response = client.post(_review(capture), {"decision": "labelled", "version": 1})
    assert response.status_code == 422 and "Choose a label" in response.content.decode()
    assert Flag.objects.get(pk=capture.pk).status == "pending"


def test_an_htmx_decision_answers_with_the_next_flag_and_the_decided_row(client, application, curator):
    now = timezone.now()
    top = FlagFactory(application=application, created_at=now - timedelta(hours=1))
    below = FlagFactory(application=application, created_at=now - timedelta(hours=2))
    client.force_login(curator)
    response = client.post(_review(top) + "?status=pending",
                           {"decision": "approved", "version": 1, "verdict": "false_positive"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert response["HX-Push-Url"] == _detail(below) + "?status=pending"
    assert f'data-flag-id="{below.public_id}"' in html and "data-autofocus" in html
    row = html.split("<template>", 1)[1].split("</template>", 1)[0]
    assert f'id="row-{top.public_id}"' in row and 'hx-swap-oob="true"' in row and "Approved" in row
    assert f"Approved {top.public_id}." in html
    assert Flag.objects.get(pk=below.pk).claimed_by == curator  # claimed by this POST
    # the last one: the pane says nothing is left
    response = client.post(_review(below), {"decision": "rejected", "version": 1}, **HTMX)
    assert "No pending flags left here." in response.content.decode()


@pytest.mark.parametrize(("field", "value", "message", "where"), [
    ("weight", "5", "less than or equal to 1", 'id="review_weight-error"'),
    ("attack_family", "x" * 101, "at most 100 characters", 'id="review_attack_family-error"'),
    ("note", "n" * (NOTE_LIMIT + 1), f"at most {NOTE_LIMIT} characters", 'id="review_note-error"'),
    ("version", "abc", "Version: Enter a whole number.", 'data-testid="decide-error"'),
])
def test_every_refused_field_is_named_beside_it(client, application, curator, field, value, message, where):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    data = {"decision": "approved", "version": "1", "verdict": "false_negative", field: value}
    for headers in ({}, HTMX):
        response = client.post(_review(flag), data, **headers)
        html = response.content.decode()
        assert response.status_code == 422
        assert message in html.split(where, 1)[1].split("</", 1)[0]
        if field in ("weight", "attack_family"):  # the closed section opens on its own error
            assert '<details class="twin" open>' in html
            assert 'aria-invalid="true"' in html.split('<details class="twin"', 1)[1]
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_a_reject_notes_error_is_shown_in_the_reject_form(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "rejected", "version": 1, "note": "n" * (NOTE_LIMIT + 1)})
    html = response.content.decode()
    assert response.status_code == 422
    assert f"at most {NOTE_LIMIT} characters" in html.split('id="reject-note-error"', 1)[1].split("</", 1)[0]
    assert "review_note-error" not in html  # not in the approve form beside it


def test_the_api_keeps_the_same_note_limit(client, application, curator):
    long_note = "n" * (NOTE_LIMIT + 1)
    body = {"region": "answer", "problem": "fabricated", "note": long_note, "message_id": "m-long"}
    response = client.post("/api/v1/flags", data=body, content_type="application/json",
                           **bearer(application_token(application)))
    assert response.status_code == 422 and "note" in response.json()["error"]["fields"]
    flag = FlagFactory(application=application)
    response = client.post(f"/api/v1/flags/{flag.public_id}/review", content_type="application/json",
                           data={"status": "rejected", "version": 1, "note": long_note},
                           **bearer(personal_token(curator)))
    assert response.status_code == 422 and "note" in response.json()["error"]["fields"]
    assert not Flag.objects.filter(message_id="m-long").exists()


def test_a_bad_cursor_shows_the_newest_page_and_says_so(client, application, curator):
    FlagFactory(application=application, note="still listed")
    client.force_login(curator)
    response = client.get(reverse("feedback:queue", args=["acme"]) + "?status=pending&cursor=garbage")
    html = response.content.decode()
    assert response.status_code == 200 and "Invalid cursor. Showing the newest flags." in html
    assert "still listed" in html


def test_a_bad_date_is_a_form_error_with_status_200(client, application, curator):
    client.force_login(curator)
    response = client.get(reverse("feedback:queue", args=["acme"]) + "?created_from=2026-02-31")
    assert response.status_code == 200 and "Enter a valid date." in response.content.decode()
    response = client.get(reverse("overview:index", args=["acme"]) + "?from=2026-02-31")
    assert response.status_code == 200 and "Enter a valid date." in response.content.decode()


def test_long_texts_are_folded_behind_show_all(client, application, curator):
    flag = FlagFactory(application=application, prompt="p" * 5_000, answer="short answer")
    client.force_login(curator)
    html = client.get(_detail(flag)).content.decode()
    assert 'class="text folded" data-testid="flag-prompt"' in html and "Show all prompt (5000 characters)" in html
    assert 'data-testid="fold-answer"' not in html and "p" * 5_000 in html  # the text is all there


def test_an_empty_password_says_so(client, curator):
    response = client.post(reverse("login"), {"username": curator.username, "password": ""})
    html = response.content.decode()
    assert response.status_code == 200 and 'id="password-error"' in html and "This field is required." in html
