import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from adjudication.models import (
    AdjudicationEvent,
    Case,
    CaseLabel,
    Evidence,
    GoldLabelRevision,
    QueueEntry,
    QueueSkip,
)
from adjudication.schemas import CaseIn
from adjudication.services import (
    case_import,
    case_import_batch,
    gold_promote,
    label_submit,
    queue_claim_next,
    queue_enqueue,
    queue_release,
    queue_skip,
)
from consoles.errors import Conflict, InvalidInput, NotFound, PermissionDeniedError
from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

from .factories import CaseFactory, QueueEntryFactory, case_payload

pytestmark = pytest.mark.django_db


def _case(application, case_id="case-1", **kw) -> Case:
    return case_import(application=application, data=CaseIn.model_validate(case_payload(case_id, **kw)), actor=None).case


# --- import ------------------------------------------------------------------


def test_import_writes_case_evidence_and_an_event(application):
    result = case_import(application=application, data=CaseIn.model_validate(case_payload()), actor=None)
    assert result.created
    case = result.case
    assert case.claim_subject == "git commit" and case.replay_manifest["adapter_provider"] == "claude"
    assert list(Evidence.objects.filter(case=case).values_list("evidence_id", flat=True)) == ["e1", "e2", "e3"]
    assert AdjudicationEvent.objects.filter(case=case, kind="case_imported", actor_kind="system").count() == 1


def test_import_is_idempotent_on_case_id(application):
    data = CaseIn.model_validate(case_payload())
    first = case_import(application=application, data=data, actor=None)
    again = case_import(application=application, data=data, actor=None)
    assert not again.created and again.case.pk == first.case.pk
    assert Case.objects.count() == 1 and Evidence.objects.count() == 3


def test_import_refuses_different_content_under_an_existing_case_id(application):
    _case(application)
    changed = CaseIn.model_validate(case_payload(local_verdict="refuted"))
    with pytest.raises(Conflict) as info:
        case_import(application=application, data=changed, actor=None)
    assert info.value.code == "case_exists"
    assert Case.objects.get().local_verdict == "corroborated"


def test_same_case_id_in_two_applications_is_two_cases(application):
    other = ApplicationFactory(slug="other")
    _case(application)
    _case(other)
    assert Case.objects.count() == 2


def test_batch_is_all_or_nothing(application):
    _case(application, "taken")
    batch = [CaseIn.model_validate(case_payload("new-1")), CaseIn.model_validate(case_payload("taken", local_verdict="x"))]
    with pytest.raises(Conflict) as info:
        case_import_batch(application=application, cases=batch, actor=None)
    assert info.value.fields == {"cases.1.case_id": "already exists with different content"}
    assert not Case.objects.filter(case_id="new-1").exists()


# --- queue -------------------------------------------------------------------


def test_enqueue_returns_none_and_writes_nothing_when_already_open(application, curator):
    case = _case(application)
    entry = queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    assert entry.selection_reason == "manual" and entry.created_by == curator
    events = AdjudicationEvent.objects.count()
    assert queue_enqueue(application=application, case=case, selection_reason="plan 7: high_uncertainty", actor=None) is None
    assert QueueEntry.objects.count() == 1 and AdjudicationEvent.objects.count() == events


def test_enqueue_refuses_a_case_that_already_has_the_labels_wanted(application, curator, curator2):
    case = _case(application)
    label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    entry = queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    assert entry is not None  # one label of the two wanted: a second curator is still needed
    entry.delete()
    label_submit(application=application, case=case, reviewer=curator2, label="unreliable", rationale="r")
    events = AdjudicationEvent.objects.count()
    with pytest.raises(InvalidInput) as refused:
        queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    assert refused.value.code == "labels_complete" and "already has 2 labels" in refused.value.message
    assert not QueueEntry.objects.exists() and AdjudicationEvent.objects.count() == events


def test_enqueue_refuses_another_applications_case_and_blank_reason(application, curator):
    foreign = CaseFactory()
    with pytest.raises(NotFound):
        queue_enqueue(application=application, case=foreign, selection_reason="manual", actor=curator)
    with pytest.raises(InvalidInput):
        queue_enqueue(application=application, case=_case(application), selection_reason="  ", actor=curator)
    assert not QueueEntry.objects.exists()


def test_claim_next_gives_each_curator_a_different_entry(application, curator, curator2):
    first = QueueEntryFactory(case__application=application)
    second = QueueEntryFactory(case__application=application)
    a = queue_claim_next(application=application, user=curator)
    b = queue_claim_next(application=application, user=curator2)
    assert {a.pk, b.pk} == {first.pk, second.pk}
    # Asking again returns the claim already held, never a second one.
    assert queue_claim_next(application=application, user=curator).pk == a.pk
    assert queue_claim_next(application=application, user=UserFactory(username="third")) is None


def test_an_expired_claim_can_be_taken(application, curator, curator2):
    entry = QueueEntryFactory(case__application=application)
    queue_claim_next(application=application, user=curator)
    assert queue_claim_next(application=application, user=curator2) is None
    QueueEntry.objects.filter(pk=entry.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    taken = queue_claim_next(application=application, user=curator2)
    assert taken.pk == entry.pk and taken.claimed_by == curator2


def test_claim_next_skips_cases_the_curator_already_labelled(application, curator):
    entry = QueueEntryFactory(case__application=application)
    label_submit(application=application, case=entry.case, reviewer=curator, label="reliable", rationale="seen")
    assert queue_claim_next(application=application, user=curator) is None


def test_claims_stay_inside_the_application(application, curator):
    QueueEntryFactory()  # another application's entry
    assert queue_claim_next(application=application, user=curator) is None


def test_release_and_skip(application, curator, curator2):
    entry = QueueEntryFactory(case__application=application)
    claimed = queue_claim_next(application=application, user=curator)
    with pytest.raises(Conflict):
        queue_release(application=application, entry=claimed, user=curator2)
    released = queue_release(application=application, entry=claimed, user=curator)
    assert released.claimed_by is None
    claimed = queue_claim_next(application=application, user=curator)
    queue_skip(application=application, entry=claimed, user=curator)
    assert QueueSkip.objects.filter(entry=entry, user=curator).exists()
    assert queue_claim_next(application=application, user=curator) is None
    assert queue_claim_next(application=application, user=curator2).pk == entry.pk
    kinds = list(AdjudicationEvent.objects.filter(case=entry.case).values_list("kind", flat=True))
    assert kinds == ["claimed", "released", "claimed", "skipped", "claimed"]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claim_next_never_hands_out_an_entry_twice():
    if connection.vendor != "postgresql":
        pytest.skip("row locks that skip locked rows are a PostgreSQL feature")
    application = ApplicationFactory(slug="race")
    entries = [QueueEntryFactory(case__application=application) for _ in range(12)]
    users = [
        MembershipFactory(user=UserFactory(username=f"racer{i}"), application=application, role=Role.CURATOR).user
        for i in range(8)
    ]
    barrier = threading.Barrier(len(users))
    got: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def work(user) -> None:
        try:
            barrier.wait()
            mine = []
            for _ in range(3):
                entry = queue_claim_next(application=application, user=user)
                if entry is None:
                    break
                mine.append(entry.pk)
                # Finish it so the next call claims a new one.
                QueueEntry.objects.filter(pk=entry.pk).update(
                    state="done", claimed_by=None, claimed_at=None, claim_expires_at=None
                )
            got[user.username] = mine
        except BaseException as exc:  # noqa: BLE001 - surfaced in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    claimed = [pk for mine in got.values() for pk in mine]
    assert len(claimed) == len(set(claimed)), "an entry was claimed twice"
    assert set(claimed) == {e.pk for e in entries}
    assert AdjudicationEvent.objects.filter(kind="claimed").count() == len(entries)


# --- labels ------------------------------------------------------------------


def test_label_validation(application, curator):
    case = _case(application)
    with pytest.raises(InvalidInput) as info:
        label_submit(application=application, case=case, reviewer=curator, label="great", rationale="x")
    assert "label" in info.value.fields
    with pytest.raises(InvalidInput) as info:
        label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="  ")
    assert "rationale" in info.value.fields
    assert not CaseLabel.objects.exists()


def test_labels_are_configurable_per_application(curator):
    app = ApplicationFactory(slug="custom", case_labels=["safe", "unsafe"])
    MembershipFactory(user=curator, application=app, role=Role.CURATOR)
    case = _case(app)
    assert label_submit(application=app, case=case, reviewer=curator, label="unsafe", rationale="r").label == "unsafe"


def test_second_label_is_a_conflict_not_an_overwrite(application, curator):
    case = _case(application)
    label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    with pytest.raises(Conflict):
        label_submit(application=application, case=case, reviewer=curator, label="unreliable", rationale="r2")
    assert CaseLabel.objects.get().label == "reliable"


def test_entry_is_done_after_two_independent_labels(application, curator, curator2):
    case = _case(application)
    entry = queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    queue_claim_next(application=application, user=curator)
    label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    entry.refresh_from_db()
    assert entry.state == "open" and entry.claimed_by is None
    assert queue_claim_next(application=application, user=curator2).pk == entry.pk
    label_submit(application=application, case=case, reviewer=curator2, label="reliable", rationale="r")
    entry.refresh_from_db()
    assert entry.state == "done" and entry.closed_at is not None
    assert set(CaseLabel.objects.values_list("queue_entry", flat=True)) == {entry.pk}


# --- gold ----------------------------------------------------------------------


def test_promotion_appends_revisions_that_supersede(application, curator, curator2):
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    theirs = label_submit(application=application, case=case, reviewer=curator2, label="unreliable", rationale="r")
    first = gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    second = gold_promote(application=application, case=case, label=theirs, adjudicator=curator, rationale="host log")
    assert (first.revision, second.revision) == (1, 2)
    history = list(GoldLabelRevision.objects.filter(case=case).order_by("revision").values_list("revision", "label"))
    assert history == [(1, "reliable"), (2, "unreliable")]
    with pytest.raises(Conflict):
        gold_promote(application=application, case=case, label=theirs, adjudicator=curator2)
    assert AdjudicationEvent.objects.filter(kind="gold_promoted").count() == 2


def test_promotion_needs_the_adjudicator_to_have_labelled(application, curator, curator2):
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    with pytest.raises(PermissionDeniedError):
        gold_promote(application=application, case=case, label=mine, adjudicator=curator2)
    assert not GoldLabelRevision.objects.exists()


def test_promotion_can_require_two_agreeing_curators(curator, curator2, curator3, application):
    application.gold_requires_two_agreeing = True
    application.save()
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    label_submit(application=application, case=case, reviewer=curator2, label="unreliable", rationale="r")
    with pytest.raises(InvalidInput) as info:
        gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    assert info.value.code == "needs_two_agreeing"
    agreeing = label_submit(application=application, case=case, reviewer=curator3, label="reliable", rationale="r")
    revision = gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    assert revision.agreeing_label == agreeing


def test_a_label_equal_to_the_gold_label_is_not_promoted_again(application, curator, curator2):
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    theirs = label_submit(application=application, case=case, reviewer=curator2, label="reliable", rationale="same")
    gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    with pytest.raises(Conflict) as info:
        gold_promote(application=application, case=case, label=theirs, adjudicator=curator2)
    assert info.value.code == "already_gold" and "revision 1" in info.value.message
    assert list(GoldLabelRevision.objects.values_list("revision", "based_on")) == [(1, mine.pk)]
    assert AdjudicationEvent.objects.filter(kind="gold_promoted").count() == 1
