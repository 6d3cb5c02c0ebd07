from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from consoles.appendonly import history_delete_allowed
from consoles.errors import Conflict, InvalidInput, PermissionDeniedError
from consoles.models import ApiToken
from consoles.tests.factories import application_token
from feedback.models import AuthorKind, EventAction, Flag, FlagEvent, FlagReview, FlagStatus
from feedback.selectors import flag_next_pending
from feedback.services import (
    Actor,
    flag_bulk_reject,
    flag_claim,
    flag_prepare,
    flag_review,
    flag_submit,
)

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def integration(application):
    application_token(application)
    return Actor(token=ApiToken.objects.get(application=application))


def _submit(application, actor, **overrides):
    data = dict(region="answer", problem="fabricated", note="invented a citation",
                prompt="Who won?", answer="Someone.", detector_scores={"hallucination": 0.2},
                message_id="msg_42", session_id="sess_7")
    data.update(overrides)
    return flag_submit(application=application, actor=actor, **data)


def test_a_flag_is_pending_with_the_suggested_axis_and_a_created_event(application, integration):
    result = _submit(application, integration)
    flag = result.flag
    assert result.created
    assert flag.status == "pending" and flag.suggested_axis == "hallucination" == flag.axis
    assert flag.author_kind == AuthorKind.END_USER and flag.author_token == integration.token
    assert flag.public_id.startswith("fb_") and len(flag.public_id) == 19
    event = FlagEvent.objects.get(flag=flag)
    assert (event.action, event.from_status, event.to_status, event.actor_kind) == ("created", "", "pending", "token")


def test_posting_the_same_message_and_region_again_creates_nothing(application, integration):
    first = _submit(application, integration).flag
    again = _submit(application, integration, note="a different note")
    assert not again.created and again.flag.pk == first.pk and again.flag.note == "invented a citation"
    assert Flag.objects.count() == 1 and FlagEvent.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_a_flag_and_its_created_event_are_written_together(application, integration):
    with CaptureQueriesContext(connection) as queries:
        flag = _submit(application, integration).flag
    # One transaction: the flag and its event are committed together, or neither.
    statements = [q["sql"].split()[0].upper() for q in queries]
    assert statements[0] in ("BEGIN", "SAVEPOINT") or connection.vendor == "postgresql"
    writes = [q["sql"] for q in queries if q["sql"].upper().startswith("INSERT")]
    assert len(writes) == 2 and "feedback_flag\"" in writes[0] and "feedback_flagevent" in writes[1]
    assert statements[-1] == "COMMIT" or connection.vendor == "postgresql"
    assert FlagEvent.objects.get(flag=flag).action == "created"
    again = _submit(application, integration, note="again")  # the duplicate is refused, nothing spoiled
    assert not again.created and again.flag.pk == flag.pk
    assert Flag.objects.count() == 1 and FlagEvent.objects.count() == 1


@pytest.mark.parametrize("field", ["prompt", "answer", "context", "note", "message_id", "session_id", "end_user_ref"])
def test_a_nul_character_is_refused_by_the_service_not_the_database(application, integration, field):
    # The API's schema refuses NUL first; a caller of the service (the demo, a
    # script) gets the same refusal on both databases instead of PostgreSQL's error.
    with pytest.raises(InvalidInput) as exc:
        _submit(application, integration, **{field: "before\x00after"})
    assert "NUL" in exc.value.fields[field]
    assert not Flag.objects.exists() and not FlagEvent.objects.exists()


def test_the_public_id_is_derived_from_content_and_stable(application, integration):
    first = _submit(application, integration).flag
    with transaction.atomic(), history_delete_allowed():  # as retention would
        Flag.objects.all().delete()
    assert _submit(application, integration).flag.public_id == first.public_id
    assert _submit(application, integration, message_id="other").flag.public_id != first.public_id


def test_a_flag_from_a_human_is_an_operator_flag(application, curator):
    flag = _submit(application, Actor(user=curator)).flag
    assert flag.author_kind == AuthorKind.OPERATOR and flag.author_user == curator


@pytest.mark.parametrize(
    "overrides,field",
    [
        ({"region": "middle"}, "region"),
        ({"problem": "nonsense"}, "problem"),
        ({"problem": ""}, "problem"),
        ({"message_id": " "}, "message_id"),
        ({"detector_scores": {"made_up_axis": 0.1}}, "detector_scores"),
        ({"detector_scores": {"hallucination": "high"}}, "detector_scores"),
        ({"capture_reason": "bored"}, "capture_reason"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(application, integration, overrides, field):
    with pytest.raises(InvalidInput) as exc:
        _submit(application, integration, **overrides)
    assert field in exc.value.fields
    assert not Flag.objects.exists() and not FlagEvent.objects.exists()


def test_prepare_checks_and_builds_the_row_that_submit_stores(application, integration, django_assert_num_queries):
    fields = dict(region="answer", problem="fabricated", prompt="Who won?", message_id=" msg_42 ")
    with django_assert_num_queries(0):
        row = flag_prepare(application=application, actor=integration, **fields)
    assert row.pk is None and not Flag.objects.exists()
    stored = flag_submit(application=application, actor=integration, **fields).flag
    assert (row.public_id, row.message_id, row.axis, row.author_kind) == (
        stored.public_id, "msg_42", stored.axis, stored.author_kind)
    with pytest.raises(InvalidInput) as exc:
        flag_prepare(application=application, actor=integration, region="middle", message_id="m")
    assert set(exc.value.fields) == {"region", "problem"}


def test_captures_are_refused_while_capture_is_off(application, integration):
    with pytest.raises(PermissionDeniedError) as exc:
        _submit(application, integration, capture_reason="low_confidence", problem="")
    assert "capture is disabled" in exc.value.message.lower()
    application.capture_enabled = True
    application.capture_on_refusal = True
    application.save()
    with pytest.raises(PermissionDeniedError):  # that reason's toggle is still off
        _submit(application, integration, capture_reason="low_confidence", problem="")
    assert not Flag.objects.exists()
    assert _submit(application, integration, capture_reason="refused", problem="").flag.author_kind == "agent"


def test_at_capacity_the_oldest_pending_capture_is_dropped_and_recorded(capturing_application, integration):
    app = capturing_application  # capture_max_items = 3
    user_flag = _submit(app, integration, message_id="user-flag").flag
    captures = [_submit(app, integration, message_id=f"cap{i}", capture_reason="low_confidence",
                        problem="").flag for i in range(3)]
    result = _submit(app, integration, message_id="cap3", capture_reason="refused", problem="")
    assert result.created and result.dropped == [captures[0].public_id]
    dropped = Flag.objects.get(pk=captures[0].pk)
    assert dropped.status == FlagStatus.DROPPED and dropped.prompt == "" and dropped.answer == ""
    event = FlagEvent.objects.get(flag=dropped, action=EventAction.DROPPED)
    assert event.actor_kind == "system" and event.changes["reason"] == "capture_max_items"
    assert Flag.objects.filter(application=app, author_kind="agent", status="pending").count() == 3
    assert Flag.objects.get(pk=user_flag.pk).status == FlagStatus.PENDING  # user flags never dropped


def test_approve_defaults_to_false_negative_on_the_suggested_axis(application, curator):
    flag = FlagFactory(application=application)
    flag_review(flag=flag, reviewer=curator, status="approved", version=1, note="confirmed")
    flag.refresh_from_db()
    assert (flag.status, flag.axis, flag.verdict, flag.version) == ("approved", "hallucination", "false_negative", 2)
    review = FlagReview.objects.get(flag=flag)
    assert review.reviewer == curator and review.from_status == "pending" and review.to_status == "approved"
    event = FlagEvent.objects.get(flag=flag)
    assert event.actor_user == curator and event.changes["status"] == ["pending", "approved"]


def test_approve_with_an_override_and_a_twin(application, curator):
    flag = FlagFactory(application=application)
    flag_review(flag=flag, reviewer=curator, status="approved", version=1, axis="jailbreak",
                verdict="false_positive", twin_prompt="benign twin", weight=0.5, attack_family="roleplay")
    flag.refresh_from_db()
    assert (flag.axis, flag.verdict, flag.twin_prompt, flag.weight, flag.attack_family) == (
        "jailbreak", "false_positive", "benign twin", 0.5, "roleplay")


@pytest.mark.parametrize(
    "kwargs,field",
    [({"axis": "nope"}, "axis"), ({"verdict": "maybe"}, "verdict"), ({"status": "done"}, "status"),
     ({"weight": 3.0}, "weight")],
)
def test_invalid_decisions_name_the_field_and_change_nothing(application, curator, kwargs, field):
    flag = FlagFactory(application=application)
    with pytest.raises(InvalidInput) as exc:
        flag_review(flag=flag, reviewer=curator, version=1, **{"status": "approved", **kwargs})
    assert field in exc.value.fields
    flag.refresh_from_db()
    assert flag.status == "pending" and flag.version == 1 and not FlagReview.objects.exists()


def test_a_stale_version_is_a_conflict_with_the_current_state(application, curator, curator2):
    flag = FlagFactory(application=application)
    seen_by_both = Flag.objects.get(pk=flag.pk)
    flag_review(flag=flag, reviewer=curator, status="rejected", version=1, note="spam")
    with pytest.raises(Conflict) as exc:
        flag_review(flag=seen_by_both, reviewer=curator2, status="approved", version=1)
    assert exc.value.current["status"] == "rejected" and exc.value.current["version"] == 2
    flag.refresh_from_db()
    assert flag.status == "rejected"
    assert FlagReview.objects.count() == 1 and FlagEvent.objects.count() == 1


def test_reopen_moves_back_to_pending_and_clears_the_verdict(application, curator):
    flag = FlagFactory(application=application)
    flag_review(flag=flag, reviewer=curator, status="approved", version=1)
    flag_review(flag=flag, reviewer=curator, status="pending", version=2)
    flag.refresh_from_db()
    assert flag.status == "pending" and flag.verdict == "" and flag.version == 3
    actions = list(FlagEvent.objects.filter(flag=flag).values_list("action", flat=True))
    assert actions == ["approved", "reopened"]
    with pytest.raises(InvalidInput):
        flag_review(flag=flag, reviewer=curator, status="pending", version=3)


def test_captures_are_labelled_with_the_label_set_not_approved(application, curator):
    capture = CaptureFactory(application=application)
    with pytest.raises(InvalidInput) as exc:
        flag_review(flag=capture, reviewer=curator, status="approved", version=1)
    assert "status" in exc.value.fields
    with pytest.raises(InvalidInput) as exc:
        flag_review(flag=capture, reviewer=curator, status="labelled", label="great", version=1)
    assert "label" in exc.value.fields
    flag_review(flag=capture, reviewer=curator, status="labelled", label="should-have-refused", version=1)
    capture.refresh_from_db()
    assert capture.status == "labelled" and capture.capture_label == "should-have-refused"
    assert capture.verdict == ""
    user_flag = FlagFactory(application=application)
    with pytest.raises(InvalidInput):
        flag_review(flag=user_flag, reviewer=curator, status="labelled", label="wrong", version=1)


def test_bulk_reject_skips_flags_decided_meanwhile(application, curator, curator2):
    flags = [FlagFactory(application=application) for _ in range(3)]
    flag_review(flag=flags[1], reviewer=curator2, status="approved", version=1)
    rejected, skipped = flag_bulk_reject(application=application, reviewer=curator,
                                         public_ids=[f.public_id for f in flags] + ["fb_0000000000000000"])
    assert rejected == [flags[0].public_id, flags[2].public_id]
    assert skipped == [flags[1].public_id, "fb_0000000000000000"]
    assert Flag.objects.get(pk=flags[1].pk).status == "approved"
    assert FlagReview.objects.filter(reviewer=curator, to_status="rejected").count() == 2


def test_bulk_reject_cannot_touch_another_tenant(tenant_pair):
    other = FlagFactory(application=tenant_pair.b)
    rejected, skipped = flag_bulk_reject(application=tenant_pair.a, reviewer=tenant_pair.member_of_a,
                                         public_ids=[other.public_id])
    assert rejected == [] and Flag.objects.get(pk=other.pk).status == "pending"


def test_a_claim_steers_next_away_from_other_curators(application, curator, curator2):
    older = FlagFactory(application=application, created_at=timezone.now() - timedelta(hours=1))
    newer = FlagFactory(application=application)
    assert flag_claim(flag=older, user=curator)
    assert not flag_claim(flag=older, user=curator2)
    assert flag_next_pending(application=application, user=curator2) == newer
    # one's own claim does not steer oneself away (oldest first, it is the first)
    assert flag_next_pending(application=application, user=curator, order="created") == older
    assert flag_next_pending(application=application, user=curator2, order="created") == newer
    # an expired claim no longer holds
    Flag.objects.filter(pk=older.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert flag_claim(flag=older, user=curator2)


def test_a_decision_releases_the_claim(application, curator):
    flag = FlagFactory(application=application)
    flag_claim(flag=flag, user=curator)
    flag_review(flag=flag, reviewer=curator, status="rejected", version=1)
    flag.refresh_from_db()
    assert flag.claimed_by is None and flag.claimed_until is None
