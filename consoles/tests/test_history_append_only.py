"""History is append-only in the database itself: raw SQL cannot UPDATE a history row
or DELETE one, on SQLite and PostgreSQL; only retention and erasure delete, under the
transaction-scoped grant (consoles.appendonly)."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from adjudication.models import AdjudicationEvent, CaseLabel, GoldLabelRevision
from adjudication.schemas import CaseIn
from adjudication.services import case_import, gold_promote, label_submit
from adjudication.tests.factories import case_payload
from consoles.appendonly import history_delete_allowed
from feedback.models import Flag, FlagEvent, FlagReview
from feedback.services import flag_review, flags_purge_expired, subject_erase
from feedback.tests.factories import FlagFactory
from sampling.models import PlanEvent
from sampling.services import plan_create
from teaching.models import CorpusEntry, ProposalDecision, ProposalEvent
from teaching.services import Actor, proposal_create, proposal_decide
from teaching.tests.factories import CandidateFactory

pytestmark = pytest.mark.django_db

HISTORY = [FlagEvent, FlagReview, AdjudicationEvent, CaseLabel, GoldLabelRevision, PlanEvent,
           ProposalEvent, ProposalDecision, CorpusEntry]


@pytest.fixture
def history(application, curator):
    flag = FlagFactory(application=application, session_id="s-1")
    flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    case_import(application=application, data=CaseIn.model_validate(case_payload("c0")), actor=None)  # to sample
    case = case_import(application=application, data=CaseIn.model_validate(case_payload("c1")), actor=None).case
    label = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="ok")
    gold_promote(application=application, case=case, label=label, adjudicator=curator)
    CandidateFactory(application=application, candidate_id="c-1")
    proposal, _ = proposal_create(application=application, candidate_id="c-1", actor=Actor.system())
    proposal_decide(application=application, proposal_id=proposal.proposal_id, decision="accept", operator=curator)
    plan_create(application=application, budget=1, actor=curator)
    return flag


def _raw(sql: str, params: list) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.parametrize("model", HISTORY, ids=lambda m: m._meta.db_table)
def test_raw_sql_cannot_update_or_delete_a_history_row(history, model):
    row = model.objects.order_by("pk").first()
    assert row is not None, model
    table = model._meta.db_table
    column = next(f.column for f in model._meta.concrete_fields if not f.primary_key and not f.is_relation)
    with pytest.raises(DatabaseError):
        _raw(f"UPDATE {table} SET {column} = {column} WHERE id = %s", [row.pk])  # noqa: S608 - a model's table
    with pytest.raises(DatabaseError):
        _raw(f"DELETE FROM {table} WHERE id = %s", [row.pk])  # noqa: S608 - a model's table
    assert model.objects.filter(pk=row.pk).exists()


def test_the_grant_lasts_only_for_its_block(history):
    with transaction.atomic():
        with history_delete_allowed():
            pass
        with pytest.raises(DatabaseError), transaction.atomic():
            FlagEvent.objects.filter(flag=history).erase()
    assert FlagEvent.objects.filter(flag=history).exists()


def test_retention_and_erasure_still_delete_history(application, curator):
    old = FlagFactory(application=application, created_at=timezone.now() - timedelta(days=40))
    flag_review(flag=old, reviewer=curator, status="rejected", version=old.version)
    subject = FlagFactory(application=application, session_id="s-9")
    flag_review(flag=subject, reviewer=curator, status="rejected", version=subject.version)
    application.retention_days = 30
    application.save()
    flags_purge_expired()
    assert not Flag.objects.filter(pk=old.pk).exists() and not FlagEvent.objects.filter(flag_id=old.pk).exists()
    subject_erase(application=application, session_id="s-9", requested_by="dpo")
    assert not FlagReview.objects.filter(flag_id=subject.pk).exists()
