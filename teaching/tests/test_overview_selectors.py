from datetime import timedelta

import pytest
from django.utils import timezone

from teaching.selectors import proposal_gate_outcomes, proposal_state_counts_between
from teaching.services import Actor, proposal_create, proposal_decide

from .factories import CandidateFactory

pytestmark = pytest.mark.django_db


def _propose(application, candidate_id, subject, obj):
    CandidateFactory(application=application, candidate_id=candidate_id, subject=subject, object=obj)
    return proposal_create(application=application, candidate_id=candidate_id, actor=Actor.system())[0]


def test_states_count_an_auto_rejection_apart_from_an_operator_rejection(world, operator):
    _propose(world, "c-tokyo", "tokyo", "japan")
    regressed = _propose(world, "c-lyon", "paris", "lyon")
    madrid = _propose(world, "c-madrid", "madrid", "spain")
    proposal_decide(application=world, proposal_id=madrid.proposal_id, decision="reject", operator=operator)
    today = timezone.now().date()
    counts = proposal_state_counts_between(application=world, first=today - timedelta(days=1), last=today)
    assert counts == {"pending": 1, "accepted": 0, "rejected": 1, "withdrawn": 0, "auto_rejected": 1}
    newest = list(proposal_gate_outcomes(application=world, limit=2))
    assert [p.proposal_id for p in newest] == [madrid.proposal_id, regressed.proposal_id]
    assert not newest[1].replay_equivalent and newest[1].regressed_metrics
