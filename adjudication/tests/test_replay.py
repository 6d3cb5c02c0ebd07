"""DESIGN.md invariant 4 for gold labels: replaying the gold_promoted events
reconstructs every case's current gold label and its revision history
(SQLite and PostgreSQL)."""

import pytest

from adjudication.models import AdjudicationEvent, GoldLabelRevision
from adjudication.schemas import CaseIn
from adjudication.selectors import gold_labels_current
from adjudication.services import case_import, gold_promote, label_submit
from consoles.errors import Conflict, InvalidInput, PermissionDeniedError
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

from .factories import case_payload

pytestmark = pytest.mark.django_db


def replay_gold(application) -> tuple[dict[int, tuple[int, str]], list[str]]:
    """case pk -> (revision, label) after folding the promotions in log order, and
    every promotion that does not supersede the revision before it."""
    current: dict[int, tuple[int, str]] = {}
    errors: list[str] = []
    events = AdjudicationEvent.objects.filter(application=application, kind="gold_promoted").order_by("id")
    for event in events:
        before = current.get(event.case_id)
        supersedes = before[0] if before else None
        if event.detail["supersedes"] != supersedes or event.detail["revision"] != (supersedes or 0) + 1:
            errors.append(f"case {event.case_id}: revision {event.detail['revision']} after {supersedes}")
        current[event.case_id] = (event.detail["revision"], event.detail["label"])
    return current, errors


def _case(application, case_id: str):
    data = CaseIn.model_validate(case_payload(case_id))
    return case_import(application=application, data=data, actor=None).case


def test_replaying_the_promotions_reconstructs_every_gold_label(application, curator, curator2, curator3):
    other = ApplicationFactory(slug="other")
    outsider = MembershipFactory(user=UserFactory(username="oz"), application=other).user
    foreign = _case(other, "case-x")
    gold_promote(application=other, case=foreign, adjudicator=outsider,
                 label=label_submit(application=other, case=foreign, reviewer=outsider, label="reliable",
                                    rationale="r"))
    cases = [_case(application, f"case-{n}") for n in range(3)]
    labels = {}
    for case in cases:
        for reviewer, label in ((curator, "reliable"), (curator2, "unreliable"), (curator3, "contradicted")):
            labels[case.pk, reviewer.pk] = label_submit(application=application, case=case, reviewer=reviewer,
                                                       label=label, rationale="r")
    a, b, c = cases
    for reviewer in (curator, curator2, curator3, curator):
        gold_promote(application=application, case=a, label=labels[a.pk, reviewer.pk], adjudicator=curator)
    gold_promote(application=application, case=b, label=labels[b.pk, curator2.pk], adjudicator=curator3)
    with pytest.raises(Conflict):  # already the gold label: nothing is written
        gold_promote(application=application, case=b, label=labels[b.pk, curator2.pk], adjudicator=curator)
    application.gold_requires_two_agreeing = True
    application.save()
    with pytest.raises(InvalidInput):
        gold_promote(application=application, case=c, label=labels[c.pk, curator.pk], adjudicator=curator)
    with pytest.raises(PermissionDeniedError):
        gold_promote(application=application, case=c, label=labels[c.pk, curator.pk],
                     adjudicator=UserFactory(username="nolabel"))

    replayed, errors = replay_gold(application)
    assert errors == []
    assert {case: label for case, (_, label) in replayed.items()} == gold_labels_current(application=application)
    assert replayed == {a.pk: (4, "reliable"), b.pk: (1, "unreliable")}
    # Each revision row is one promotion of the log, in the same order.
    rows = GoldLabelRevision.objects.filter(application=application).order_by("id")
    promotions = AdjudicationEvent.objects.filter(application=application, kind="gold_promoted").order_by("id")
    assert [(r.case_id, r.revision, r.label) for r in rows] == [
        (e.case_id, e.detail["revision"], e.detail["label"]) for e in promotions
    ]
