"""DESIGN.md invariant 4 for the corpus: the seed entries, the accepted events and
the supersessions, replayed in order, give exactly the active corpus; the
proposal states are covered by test_services' fold of the event log
(SQLite and PostgreSQL)."""

import pytest

from consoles.errors import Conflict
from consoles.tests.factories import ApplicationFactory
from teaching import selectors
from teaching.models import CorpusEntry, CorpusSource, CorpusSupersession, ProposalEvent
from teaching.services import Actor, corpus_supersede, proposal_create, proposal_decide
from teaching.tests.factories import CandidateFactory, CorpusEntryFactory

pytestmark = pytest.mark.django_db


def replay_corpus(application) -> list[tuple]:
    """The active corpus rebuilt from the history: seeds, then one entry per accept
    (in log order), minus every entry a supersession retired."""
    chain = ("subject", "intent", "connective", "object", "polarity", "claim_domain")
    active = {
        entry.pk: tuple(getattr(entry, name) for name in chain)
        for entry in CorpusEntry.objects.filter(application=application, source=CorpusSource.SEED).order_by("id")
    }
    accepts = ProposalEvent.objects.filter(application=application, kind="accepted").select_related("proposal")
    for event in accepts.order_by("id"):
        entry = event.proposal.corpus_entry
        assert event.proposal.decision.decision == "accept" and entry.decision_id == event.proposal.decision.pk
        active[entry.pk] = tuple(getattr(event.proposal, name) for name in chain)
    for retired in CorpusSupersession.objects.filter(application=application).order_by("id"):
        assert retired.superseded_by_id in active
        del active[retired.entry_id]
    return sorted(active.items())


def test_replaying_accepts_and_supersessions_gives_the_active_corpus(world, operator):
    CorpusEntryFactory(application=ApplicationFactory(slug="other"), subject="oslo", object="norway")
    for n, (subject, obj) in enumerate([("tokyo", "japan"), ("paris", "lyon"), ("oslo", "norway"),
                                        ("lima", "peru"), ("bern", "swiss")]):
        CandidateFactory(application=world, candidate_id=f"c-{n}", subject=subject, object=obj)
        proposal_create(application=world, candidate_id=f"c-{n}", actor=Actor.system())
    pending = list(selectors.proposal_list(application=world, state="pending").order_by("id"))
    for proposal, decision in zip(pending, ["accept", "reject", "accept", "withdraw"], strict=True):
        proposal_decide(application=world, proposal_id=proposal.proposal_id, decision=decision, operator=operator)
    with pytest.raises(Conflict):  # decisions are final: nothing is appended
        proposal_decide(application=world, proposal_id=pending[0].proposal_id, decision="reject", operator=operator)
    seeds = list(CorpusEntry.objects.filter(application=world, source="seed").order_by("id"))
    promoted = list(CorpusEntry.objects.filter(application=world, source="discovery_promoted").order_by("id"))
    corpus_supersede(application=world, entry_number=seeds[0].number, superseded_by_number=promoted[0].number, operator=operator)
    corpus_supersede(application=world, entry_number=promoted[1].number, superseded_by_number=seeds[1].number, operator=operator)

    stored = [
        (entry.pk, (entry.subject, entry.intent, entry.connective, entry.object, entry.polarity, entry.claim_domain))
        for entry in selectors.corpus_active(application=world)
    ]
    assert replay_corpus(world) == stored
    assert [pk for pk, _ in stored] == [seeds[1].pk, promoted[0].pk]
