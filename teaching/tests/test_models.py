"""Invariants held by the database itself, on SQLite and PostgreSQL."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from consoles.models import ApiToken
from consoles.tests.factories import application_token
from teaching.models import (
    CorpusEntry,
    CorpusSupersession,
    Proposal,
    ProposalDecision,
    ProposalEvent,
)
from teaching.services import Actor, corpus_supersede, proposal_create, proposal_decide
from teaching.tests.factories import CandidateFactory, CorpusEntryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def proposal(world) -> Proposal:
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    return proposal_create(application=world, candidate_id="c-1", actor=Actor.system())[0]


def test_decision_operator_column_is_a_not_null_fk_to_the_user_table(proposal):
    decision_table = ProposalDecision._meta.db_table
    with connection.cursor() as cursor:
        relations = connection.introspection.get_relations(cursor, decision_table)
        columns = {c.name: c for c in connection.introspection.get_table_description(cursor, decision_table)}
    assert relations["operator_id"][1] == get_user_model()._meta.db_table
    assert columns["operator_id"].null_ok is False


def test_raw_insert_of_a_decision_without_a_human_operator_is_refused(proposal):
    table = ProposalDecision._meta.db_table
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (application_id, proposal_id, decision, operator_id, note, decided_at) "
            "VALUES (%s, %s, 'accept', NULL, '', CURRENT_TIMESTAMP)",
            [proposal.application_id, proposal.pk],
        )
    assert not ProposalDecision.objects.exists()


def test_raw_insert_pointing_the_operator_at_a_non_user_is_refused(proposal):
    table = ProposalDecision._meta.db_table
    missing_user = (get_user_model().objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (application_id, proposal_id, decision, operator_id, note, decided_at) "
                "VALUES (%s, %s, 'accept', %s, '', CURRENT_TIMESTAMP)",
                [proposal.application_id, proposal.pk, missing_user],
            )
        # SQLite checks deferred foreign keys at commit; check them now on both databases.
        connection.check_constraints(table_names=[table])


def test_an_accepted_proposal_must_be_replay_equivalent(proposal):
    proposal.replay_equivalent = False
    proposal.state = "accepted"
    with pytest.raises(ValidationError) as exc:
        proposal.full_clean()
    assert [e.code for e in exc.value.error_dict["__all__"]] == ["not_replay_equivalent"]
    with pytest.raises(IntegrityError), transaction.atomic():
        Proposal.objects.filter(pk=proposal.pk).update(state="accepted", replay_equivalent=False)


def test_proposal_ids_are_unique_per_application_and_sha256_shaped(proposal):
    with pytest.raises(IntegrityError), transaction.atomic():
        Proposal.objects.filter(pk=proposal.pk).update(proposal_id="not-a-hash")
    clone = Proposal.objects.filter(pk=proposal.pk).values().get()
    clone.pop("id")
    with pytest.raises(IntegrityError), transaction.atomic():
        Proposal.objects.create(**clone)


def test_a_promoted_corpus_entry_must_carry_its_provenance(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        CorpusEntryFactory(application=world, source="discovery_promoted")


def test_an_entry_cannot_supersede_itself(world, operator):
    entry = CorpusEntry.objects.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        CorpusSupersession.objects.create(application=world, entry=entry, superseded_by=entry, operator=operator)


def test_a_proposal_cannot_be_deleted_while_its_history_exists(proposal):
    with pytest.raises(ProtectedError):
        proposal.delete()


def _accepted(world, operator) -> Proposal:
    CandidateFactory(application=world, candidate_id="c-acc", subject="oslo", object="norway")
    proposal = proposal_create(application=world, candidate_id="c-acc", actor=Actor.system())[0]
    return proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="accept", operator=operator)


@pytest.mark.parametrize(
    "model,lookup,change",
    [
        (CorpusEntry, "proposal", {"object": "sweden"}),
        (ProposalDecision, "proposal", {"note": "rewritten"}),
        (ProposalEvent, "proposal", {"to_state": "withdrawn"}),
    ],
)
def test_the_database_refuses_to_rewrite_history(world, operator, model, lookup, change):
    proposal = _accepted(world, operator)
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(**{lookup: proposal}).update(**change)
    assert not model.objects.filter(**{lookup: proposal}, **change).exists()


def test_a_supersession_cannot_be_rewritten(world, operator):
    first, second = CorpusEntry.objects.order_by("id")[:2]
    corpus_supersede(application=world, entry_number=first.number, superseded_by_number=second.number, operator=operator)
    with pytest.raises(IntegrityError), transaction.atomic():
        CorpusSupersession.objects.update(note="rewritten")


def test_deleting_a_token_still_clears_its_reference_on_events(world):
    application_token(world)
    token = ApiToken.objects.get(application=world)
    CandidateFactory(application=world, candidate_id="c-tok", subject="oslo", object="norway")
    proposal_create(application=world, candidate_id="c-tok", actor=Actor(kind="token", token=token))
    token.delete()
    event = ProposalEvent.objects.get(kind="proposed")
    assert event.actor_kind == "token" and event.actor_token is None
