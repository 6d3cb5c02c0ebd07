"""Two operators deciding the same proposal at once: exactly one decision wins and
the other gets a conflict, never a silent overwrite or a second corpus entry."""

import threading

import pytest
from django.db import connection, connections

from consoles.errors import Conflict
from consoles.models import Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory
from teaching.models import CorpusEntry, ProposalDecision, ProposalEvent
from teaching.services import Actor, proposal_create, proposal_decide
from teaching.tests.factories import CandidateFactory, EvalCaseFactory

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="threads need a server database"),
]


@pytest.mark.django_db(transaction=True)
def test_concurrent_decisions_on_one_proposal_leave_exactly_one():
    app = ApplicationFactory(slug="race")
    operators = [UserFactory(username=f"op{i}") for i in range(4)]
    for user in operators:
        MembershipFactory(user=user, application=app, role=Role.CURATOR)
    EvalCaseFactory(application=app, case_id="e1", split="dev", subject="tokyo", expected_object="japan")
    CandidateFactory(application=app, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=app, candidate_id="c-1", actor=Actor.system())
    barrier = threading.Barrier(len(operators))
    outcomes: list[str] = []

    def decide(user, decision):
        try:
            barrier.wait()
            proposal_decide(application=app, proposal_id=proposal.proposal_id, decision=decision, operator=user)
            outcomes.append("ok")
        except Conflict:
            outcomes.append("conflict")
        finally:
            connections.close_all()  # this thread's connection, so the test database can be dropped

    threads = [
        threading.Thread(target=decide, args=(user, "accept" if i % 2 == 0 else "reject"))
        for i, user in enumerate(operators)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "ok"]
    assert ProposalDecision.objects.count() == 1
    decision = ProposalDecision.objects.get().decision
    assert CorpusEntry.objects.count() == (1 if decision == "accept" else 0)
    assert ProposalEvent.objects.filter(proposal=proposal).count() == 2
