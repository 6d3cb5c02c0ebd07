"""DESIGN.md invariant 4 for flags: replaying the FlagEvent log reconstructs every
flag's current state, whichever path changed it (SQLite and PostgreSQL)."""

from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.utils import timezone

from consoles.errors import Conflict
from consoles.models import ApiToken
from consoles.tests.factories import application_token
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.services import (
    Actor,
    flag_bulk_reject,
    flag_claim,
    flag_release,
    flag_review,
    flag_submit,
    flags_purge_expired,
    subject_erase,
)
from feedback.services import captures as capture_services

pytestmark = pytest.mark.django_db

REPLAYED_FIELDS = ("axis", "verdict", "capture_label")


@dataclass
class Replayed:
    status: str = ""
    values: dict[str, str] = field(default_factory=dict)
    events: int = 0


def replay(application) -> tuple[dict[int, Replayed], list[str]]:
    """Fold the application's events in log order: each flag's status and the
    fields its events changed, and every event that does not start where the
    previous one left the flag."""
    flags: dict[int, Replayed] = {}
    errors: list[str] = []
    suggested = dict(Flag.objects.filter(application=application).values_list("pk", "suggested_axis"))
    for event in FlagEvent.objects.filter(application=application).order_by("created_at", "id"):
        state = flags.setdefault(event.flag_id, Replayed(values={"axis": suggested.get(event.flag_id, "")}))
        if event.from_status != state.status:
            errors.append(f"{event.flag_id}: {event.action} from {event.from_status!r}, was {state.status!r}")
        for name in REPLAYED_FIELDS:
            change = event.changes.get(name)
            if isinstance(change, list):
                if change[0] != state.values.get(name, ""):
                    errors.append(f"{event.flag_id}: {event.action} changes {name} from {change[0]!r}")
                state.values[name] = change[1]
        state.status = event.to_status
        state.events += 1
    return flags, errors


def assert_log_matches_rows(application) -> None:
    replayed, errors = replay(application)
    assert errors == []
    stored = {
        pk: Replayed(status=status, values={"axis": axis, "verdict": verdict, "capture_label": label}, events=version)
        for pk, status, axis, verdict, label, version in Flag.objects.filter(application=application).values_list(
            "pk", "status", "axis", "verdict", "capture_label", "version"
        )
    }
    for state in replayed.values():
        for name in REPLAYED_FIELDS:
            state.values.setdefault(name, "")
    # Every write bumps the version and appends one event: the counts agree too.
    assert replayed == stored
    # Each human decision is one review row and one event, naming the same transition.
    decisions = FlagEvent.objects.filter(application=application, actor_kind="user").order_by("created_at", "id")
    reviews = FlagReview.objects.filter(application=application).order_by("created_at", "id")
    assert [(e.flag_id, e.from_status, e.to_status, e.actor_user_id) for e in decisions] == [
        (r.flag_id, r.from_status, r.to_status, r.reviewer_id) for r in reviews
    ]


@pytest.fixture
def runtime(capturing_application):
    application_token(capturing_application)
    return Actor(token=ApiToken.objects.get(application=capturing_application))


def _flag(application, actor, n: int, **fields):
    data = dict(region="answer", problem="fabricated", prompt=f"Who won? {n}", answer="Someone.",
                message_id=f"m{n}", session_id=f"s{n}")
    data.update(fields)
    return flag_submit(application=application, actor=actor, **data).flag


def _capture(application, actor, n: int):
    return flag_submit(application=application, actor=actor, region="answer", message_id=f"c{n}",
                       answer=f"Maybe {n}.", capture_reason="low_confidence", session_id=f"s{n}").flag


def test_replaying_the_log_reconstructs_every_flag_after_every_transition(
    capturing_application, runtime, curator, curator2
):
    app = capturing_application
    flags = [_flag(app, runtime, n) for n in range(8)]
    _flag(app, runtime, 0)  # a repeated post writes nothing
    flag_review(flag=flags[0], reviewer=curator, status="approved", version=1, axis="toxicity",
                verdict="false_positive", note="over-flag")
    flag_review(flag=flags[1], reviewer=curator, status="rejected", version=1, note="fine")
    flag_review(flag=flags[1], reviewer=curator2, status="pending", version=2, axis="toxicity")
    flag_review(flag=flags[1], reviewer=curator2, status="approved", version=3)
    flag_review(flag=flags[2], reviewer=curator, status="approved", version=1)
    flag_review(flag=flags[2], reviewer=curator, status="pending", version=2)
    flag_bulk_reject(application=app, public_ids=[f.public_id for f in flags[2:5]] + [flags[0].public_id],
                     reviewer=curator, note="bulk")
    assert flag_claim(flag=flags[5], user=curator)
    flag_release(flag=flags[5], user=curator)
    flag_claim(flag=flags[6], user=curator2)
    with pytest.raises(Conflict):  # a stale version writes nothing
        flag_review(flag=Flag.objects.get(pk=flags[0].pk), reviewer=curator, status="rejected", version=1)
    captures = [_capture(app, runtime, n) for n in range(3)]
    flag_review(flag=captures[0], reviewer=curator, status="labelled", version=1, label="correct")
    flag_review(flag=captures[0], reviewer=curator, status="pending", version=2)
    [_capture(app, runtime, n) for n in range(3, 6)]  # capacity 3: the oldest pending ones are dropped
    assert Flag.objects.filter(application=app, status="dropped").count() == 3
    assert_log_matches_rows(app)

    subject_erase(application=app, session_id="s1", requested_by="dpo")
    Flag.objects.filter(pk=flags[7].pk).update(created_at=timezone.now() - timedelta(days=40))
    app.retention_days = 30
    app.save(update_fields=["retention_days"])
    flags_purge_expired()
    assert not Flag.objects.filter(pk__in=[flags[1].pk, flags[7].pk]).exists()
    assert_log_matches_rows(app)


def test_a_decision_made_from_a_stale_copy_never_logs_a_transition_the_row_did_not_make(
    application, curator, curator2
):
    application_token(application)
    flag = _flag(application, Actor(token=ApiToken.objects.get(application=application)), 1)
    stale = Flag.objects.get(pk=flag.pk)  # loaded while pending, at version 1
    flag_review(flag=flag, reviewer=curator2, status="approved", version=1)
    # Naming the version the other curator's decision made, with the copy from before it.
    with pytest.raises(Conflict):
        flag_review(flag=stale, reviewer=curator, status="rejected", version=2)
    assert Flag.objects.get(pk=flag.pk).status == "approved"
    assert_log_matches_rows(application)


def test_a_capture_decided_while_it_is_being_dropped_keeps_the_decision(
    capturing_application, runtime, curator, monkeypatch
):
    app = capturing_application
    oldest = _capture(app, runtime, 0)
    [_capture(app, runtime, n) for n in (1, 2)]
    real_list = list

    def decided_meanwhile(rows):
        # The capture room is made from pending captures read first; a curator
        # labels the oldest one before the drop is written.
        victims = real_list(rows)
        monkeypatch.setattr(capture_services, "list", real_list, raising=False)
        flag_review(flag=Flag.objects.get(pk=oldest.pk), reviewer=curator, status="labelled", version=1,
                    label="correct")
        return victims

    monkeypatch.setattr(capture_services, "list", decided_meanwhile, raising=False)
    _capture(app, runtime, 3)
    oldest.refresh_from_db()
    assert oldest.status == "labelled" and oldest.capture_label == "correct" and oldest.answer == "Maybe 0."
    assert_log_matches_rows(app)
