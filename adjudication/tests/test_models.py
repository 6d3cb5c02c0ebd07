"""Database-level invariants, on SQLite and PostgreSQL."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from adjudication.evidence import RELATIONS, TRUST_CLASSES
from adjudication.models import (
    AdjudicationEvent,
    EventKind,
    GoldLabelRevision,
    QueueEntry,
    Relation,
    TrustClass,
)
from consoles.tests.factories import ApiTokenFactory, UserFactory

from .factories import CaseFactory, CaseLabelFactory, GoldLabelRevisionFactory, QueueEntryFactory


def test_model_choices_match_the_pure_vocabulary():
    assert tuple(Relation.values) == RELATIONS
    assert tuple(TrustClass.values) == TRUST_CLASSES


def _insert_label(case, reviewer_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO adjudication_caselabel (application_id, case_id, reviewer_id, label, rationale, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [case.application_id, case.pk, reviewer_id, "reliable", "raw insert", timezone.now()],
        )


def _token_id_that_is_no_user() -> int:
    from django.contrib.auth import get_user_model

    token = ApiTokenFactory(pk=987_654)
    assert not get_user_model().objects.filter(pk=token.pk).exists()
    return token.pk


@pytest.mark.django_db
def test_raw_insert_of_a_label_without_a_human_reviewer_fails():
    case = CaseFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_label(case, None)


@pytest.mark.django_db
def test_raw_insert_of_a_label_with_an_application_token_as_reviewer_fails():
    case = CaseFactory()
    token_id = _token_id_that_is_no_user()
    # Foreign keys are checked at commit on both databases (deferred); force the check now.
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_label(case, token_id)
        connection.check_constraints()


def _insert_gold(label, promoted_by_id) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO adjudication_goldlabelrevision (application_id, case_id, revision, label, rationale,"
            " promoted_by_id, based_on_id, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            [label.application_id, label.case_id, 1, label.label, "", promoted_by_id, label.pk, timezone.now()],
        )


@pytest.mark.django_db
def test_raw_insert_of_a_gold_revision_without_a_human_fails():
    label = CaseLabelFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_gold(label, None)


@pytest.mark.django_db
def test_raw_insert_of_a_gold_revision_promoted_by_a_token_fails():
    label = CaseLabelFactory()
    token_id = _token_id_that_is_no_user()
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_gold(label, token_id)
        connection.check_constraints()


@pytest.mark.django_db
def test_a_human_reviewer_passes_the_same_raw_insert():
    label = CaseLabelFactory()
    case = CaseFactory(application=label.application)
    with transaction.atomic():
        _insert_label(case, label.reviewer_id)
        connection.check_constraints()


@pytest.mark.django_db
def test_gold_revisions_cannot_be_updated_even_by_raw_sql():
    revision = GoldLabelRevisionFactory()
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE adjudication_goldlabelrevision SET label = %s WHERE id = %s", ["unreliable", revision.pk])
    with pytest.raises(IntegrityError), transaction.atomic():
        GoldLabelRevision.objects.filter(pk=revision.pk).update(label="unreliable")
    revision.refresh_from_db()
    assert revision.label == "reliable"


@pytest.mark.django_db
def test_gold_revision_numbers_are_unique_per_case():
    first = GoldLabelRevisionFactory()
    duplicate = GoldLabelRevision(
        application=first.application, case=first.case, revision=1, label="unreliable",
        promoted_by=first.promoted_by, based_on=first.based_on,
    )
    with pytest.raises(ValidationError) as info:
        duplicate.full_clean()
    assert "revision_taken" in str(info.value.error_dict) or info.value.error_dict
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()


@pytest.mark.django_db
def test_one_open_queue_entry_per_case():
    entry = QueueEntryFactory()
    second = QueueEntry(application=entry.application, case=entry.case, selection_reason="again")
    with pytest.raises(ValidationError):
        second.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        second.save()
    # A finished entry does not block a new one.
    QueueEntry.objects.filter(pk=entry.pk).update(state="done")
    second.save()


@pytest.mark.django_db
def test_a_claim_is_all_or_nothing():
    entry = QueueEntryFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        QueueEntry.objects.filter(pk=entry.pk).update(claimed_at=timezone.now())


@pytest.mark.django_db
def test_one_label_per_reviewer_per_case():
    label = CaseLabelFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        CaseLabelFactory(case=label.case, reviewer=label.reviewer)


@pytest.mark.django_db
def test_deleting_a_user_never_blanks_who_acted_in_the_audit_log():
    # The log is append-only: deleting its actor would rewrite every row they wrote.
    case = CaseFactory()
    user = UserFactory()
    event = AdjudicationEvent.objects.create(application=case.application, case=case, kind=EventKind.ENQUEUED,
                                             actor_kind="user", actor_user=user)
    with pytest.raises(ProtectedError):
        user.delete()
    event.refresh_from_db()
    assert event.actor_user_id == user.pk
