"""What curators read on the adjudication screens: labels as words (their keys
stay in form values), times that say UTC, and a refusal that says what exists."""

import pytest
from django.urls import reverse

from adjudication.models import CaseLabel, GoldLabelRevision, QueueEntry
from adjudication.schemas import CaseIn
from adjudication.services import (
    case_import,
    gold_promote,
    label_submit,
    queue_claim_next,
    queue_enqueue,
)
from consoles.timestamps import on_screen

from .factories import CaseFactory, CaseLabelFactory, case_payload

pytestmark = pytest.mark.django_db

OBSERVED = {"evidence_id": "e1", "relation": "supports", "trust_class": "host_observed",
            "observed_at": "2026-11-30T14:02:00+00:00"}


def _case(application, case_id="c1", **kw):
    return case_import(application=application, data=CaseIn.model_validate(case_payload(case_id, **kw)), actor=None).case


def url(name, application, *args):
    return reverse(f"adjudication:{name}", args=[application.slug, *args])


def test_case_labels_read_as_words_on_the_case_page_and_the_case_list(client, application, curator, curator2):
    case = _case(application, local_verdict="not_checked")
    mine = label_submit(application=application, case=case, reviewer=curator, label="insufficient_evidence", rationale="r")
    gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    other = _case(application, "c2")
    label_submit(application=application, case=other, reviewer=curator, label="reliable", rationale="r")
    theirs = label_submit(application=application, case=other, reviewer=curator2, label="insufficient_evidence",
                          rationale="r")
    client.force_login(curator)
    html = client.get(url("case", application, case.pk)).content.decode()
    assert 'Your label: <span class="badge">insufficient evidence</span>' in html
    assert 'Current: <span class="badge approved">insufficient evidence</span>' in html
    assert "<td>1</td><td>insufficient evidence</td>" in html  # the gold history
    assert '<span class="badge">not checked</span>' in html  # the local verdict
    assert ">insufficient_evidence<" not in html and "not_checked<" not in html
    html = client.get(url("case", application, other.pk)).content.decode()
    assert 'cid: <span class="badge">insufficient evidence</span>' in html
    assert f'data-testid="promote-{theirs.pk}">Promote “insufficient evidence” to gold</button>' in html
    html = client.get(url("index", application)).content.decode()
    assert '<span class="badge approved">insufficient evidence</span>' in html
    assert '<span class="badge">not checked</span>' in html and "insufficient_evidence" not in html


def test_the_label_form_shows_words_and_posts_the_key(client, application, curator):
    case = _case(application)
    client.force_login(curator)
    html = client.get(url("case", application, case.pk)).content.decode()
    assert 'value="insufficient_evidence"' in html and "insufficient evidence</label>" in html
    client.post(url("label", application, case.pk), {"label": "insufficient_evidence", "rationale": "r"})
    assert CaseLabel.objects.get().label == "insufficient_evidence"
    response = client.post(url("promote", application, case.pk), {"label_id": CaseLabel.objects.get().pk}, follow=True)
    assert "Gold label is now “insufficient evidence” (revision 1)." in response.content.decode()
    assert GoldLabelRevision.objects.get().label == "insufficient_evidence"


def test_agreement_page_names_labels_in_words(client, application, curator):
    case = CaseFactory(application=application)
    CaseLabelFactory(case=case, reviewer__username="ann", label="insufficient_evidence")
    CaseLabelFactory(case=case, reviewer__username="ben", label="reliable")
    client.force_login(curator)
    html = client.get(url("agreement", application)).content.decode()
    assert '<th scope="col">insufficient evidence</th>' in html
    assert '<tr><th scope="row">insufficient evidence</th>' in html and "insufficient_evidence" not in html


def test_a_second_label_from_the_same_curator_says_which_label_exists(client, application, curator):
    case = _case(application)
    client.force_login(curator)
    stale_page_post = {"label": "reliable", "rationale": "second thoughts"}
    first = label_submit(application=application, case=case, reviewer=curator, label="insufficient_evidence",
                         rationale="r")
    response = client.post(url("label", application, case.pk), stale_page_post)
    html = response.content.decode()
    assert response.status_code == 422
    assert (f"You already labelled this case (insufficient evidence, {on_screen(first.created_at)}); "
            "each curator labels a case once, so this second label was not saved.") in html
    assert "already given" not in html
    assert list(CaseLabel.objects.values_list("label", flat=True)) == ["insufficient_evidence"]


def test_promoting_the_gold_label_again_says_who_promoted_it_and_when(client, application, curator):
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="insufficient_evidence", rationale="r")
    client.force_login(curator)
    client.post(url("promote", application, case.pk), {"label_id": mine.pk})
    gold = GoldLabelRevision.objects.get()
    response = client.post(url("promote", application, case.pk), {"label_id": mine.pk}, follow=True)
    assert ("“insufficient evidence” is already the current gold label (revision 1, promoted by cora on "
            f"{on_screen(gold.created_at)}); nothing was changed.") in response.content.decode()
    assert GoldLabelRevision.objects.count() == 1


def test_times_on_the_case_and_queue_pages_say_utc(client, application, curator, curator2):
    case = _case(application, evidence=[OBSERVED])
    queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    gold = gold_promote(application=application, case=case, label=mine, adjudicator=curator)
    waiting = _case(application, "c2")
    queue_enqueue(application=application, case=waiting, selection_reason="plan 1", actor=None)
    claimed = queue_claim_next(application=application, user=curator2)
    client.force_login(curator)
    client.post(url("feedback", application, case.pk), {"disposition": "disagrees", "note": "no"})
    html = client.get(url("case", application, case.pk)).content.decode()
    assert "<td class=\"nowrap\">2026-11-30 14:02 UTC</td>" in html  # the evidence's observation
    assert f"<td>{on_screen(gold.created_at)}</td>" in html  # the gold history
    assert "Disagrees with the verdict</span> cora · " in html
    feedback_at = html.split("Disagrees with the verdict</span> cora · ", 1)[1][:20]
    assert feedback_at.endswith(" UTC")
    html = client.get(url("queue", application)).content.decode()
    entry = QueueEntry.objects.get(case=waiting)
    assert f"<td>{on_screen(entry.created_at)}</td>" in html
    assert f"cid until {on_screen(claimed.claim_expires_at)[-9:]}</td>" in html  # "HH:MM UTC"
