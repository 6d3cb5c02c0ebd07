"""Corrections: the answer the assistant should have given, kept with the approval
of an answer-region flag (screen and API), revised by a later review, in the
history, refused anywhere else, and gone with the flag on erasure."""

import pytest
from django.urls import reverse

from consoles.testing import bearer
from consoles.tests.factories import personal_token
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.services import MAX_TEXT, flag_review, subject_erase

from .factories import FlagFactory

pytestmark = pytest.mark.django_db

FIXED = "The 1923 prize does not exist; I have no record of it."


def _api_review(client, curator, flag, body):
    return client.post(f"/api/v1/flags/{flag.public_id}/review", data=body, content_type="application/json",
                       **bearer(personal_token(curator)))


def test_an_approval_keeps_its_correction_and_a_later_review_revises_it(application, curator):
    flag = FlagFactory(application=application)
    flag = flag_review(flag=flag, reviewer=curator, status="approved", version=1, verdict="false_negative",
                       correction=FIXED)
    assert Flag.objects.get(pk=flag.pk).correction == FIXED
    flag = flag_review(flag=flag, reviewer=curator, status="pending", version=flag.version)
    flag = flag_review(flag=flag, reviewer=curator, status="approved", version=flag.version,
                       verdict="false_negative", correction="I do not know of that prize.")
    assert Flag.objects.get(pk=flag.pk).correction == "I do not know of that prize."
    # Each review keeps the correction it left; a re-opened flag carries none.
    assert [r.correction for r in FlagReview.objects.filter(flag=flag).order_by("id")] == [
        FIXED, "", "I do not know of that prize."]
    # The history shows both: the first, its removal on re-opening, the revision.
    corrections = [e.changes["correction"] for e in FlagEvent.objects.filter(flag=flag).order_by("id")
                   if "correction" in e.changes]
    assert corrections == [["", FIXED], [FIXED, ""], ["", "I do not know of that prize."]]


def test_a_rejected_flag_carries_no_correction_and_the_approve_form_offers_it_again(
        client, application, curator):
    flag = FlagFactory(application=application)
    flag = flag_review(flag=flag, reviewer=curator, status="approved", version=1, correction=FIXED)
    flag = flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    assert Flag.objects.get(pk=flag.pk).correction == ""
    flag = flag_review(flag=flag, reviewer=curator, status="pending", version=flag.version)
    client.force_login(curator)
    detail = client.get(reverse("feedback:detail", args=[application.slug, flag.public_id])).content.decode()
    field = detail.split('data-testid="correction-field"', 1)[1].split("</textarea>", 1)[0]
    assert FIXED in field


@pytest.mark.parametrize("status", ["rejected", "pending"])
def test_a_correction_only_goes_with_an_approval(client, application, curator, status):
    flag = FlagFactory(application=application)
    if status == "pending":
        flag = flag_review(flag=flag, reviewer=curator, status="rejected", version=1)
    response = _api_review(client, curator, flag, {"status": status, "version": flag.version, "correction": FIXED})
    assert response.status_code == 422 and "correction" in response.json()["error"]["fields"]
    assert Flag.objects.get(pk=flag.pk).correction == ""


def test_a_prompt_flag_takes_no_correction(client, application, curator):
    flag = FlagFactory(application=application, region="prompt")
    response = _api_review(client, curator, flag, {"status": "approved", "version": 1, "correction": FIXED})
    assert response.status_code == 422 and "correction" in response.json()["error"]["fields"]
    assert Flag.objects.get(pk=flag.pk).status == "pending"


@pytest.mark.parametrize("value", [7, "x" * (MAX_TEXT + 1)])
def test_a_bad_correction_is_422_naming_it(client, application, curator, value):
    flag = FlagFactory(application=application)
    response = _api_review(client, curator, flag, {"status": "approved", "version": 1, "correction": value})
    assert response.status_code == 422 and "correction" in response.json()["error"]["fields"]
    assert not FlagReview.objects.exists()


def test_the_api_review_takes_and_returns_the_correction(client, application, curator):
    flag = FlagFactory(application=application)
    response = _api_review(client, curator, flag, {"status": "approved", "version": 1, "correction": FIXED})
    assert response.status_code == 200 and response.json()["correction"] == FIXED
    assert FlagReview.objects.get().correction == FIXED


def test_the_screen_approves_with_a_correction_and_refuses_it_beside_the_field(client, application, curator):
    flag = FlagFactory(application=application)
    prompt_flag = FlagFactory(application=application, region="prompt")
    client.force_login(curator)
    detail = client.get(reverse("feedback:detail", args=[application.slug, flag.public_id])).content.decode()
    assert 'data-testid="correction-field"' in detail and 'name="correction"' in detail
    prompt_detail = client.get(reverse("feedback:detail", args=[application.slug, prompt_flag.public_id]))
    assert 'name="correction"' not in prompt_detail.content.decode()
    url = reverse("feedback:review", args=[application.slug, prompt_flag.public_id])
    refused = client.post(url, {"decision": "approved", "version": 1, "axis": "hallucination",
                                "verdict": "false_negative", "correction": FIXED})
    assert refused.status_code == 422 and Flag.objects.get(pk=prompt_flag.pk).status == "pending"
    url = reverse("feedback:review", args=[application.slug, flag.public_id])
    client.post(url, {"decision": "approved", "version": 1, "axis": "hallucination",
                      "verdict": "false_negative", "correction": FIXED})
    assert Flag.objects.get(pk=flag.pk).correction == FIXED
    shown = client.get(reverse("feedback:detail", args=[application.slug, flag.public_id])).content.decode()
    assert 'data-testid="flag-correction"' in shown and FIXED in shown


def test_erasure_takes_the_correction_with_the_flag(application, curator):
    flag = FlagFactory(application=application, session_id="sess_erase")
    flag_review(flag=flag, reviewer=curator, status="approved", version=1, correction=FIXED)
    subject_erase(application=application, session_id="sess_erase", requested_by="dpo")
    assert not Flag.objects.filter(correction=FIXED).exists()
    assert not FlagReview.objects.filter(correction=FIXED).exists()
    assert not FlagEvent.objects.filter(flag_id=flag.pk).exists()
