import re

import pytest
from django.urls import reverse

from adjudication.models import CaseLabel, GoldLabelRevision, QueueEntry
from adjudication.schemas import CaseIn
from adjudication.services import case_import, label_submit, queue_enqueue
from consoles.testing import assert_sealed
from feedback.models import CaseFeedback

from .factories import CaseFactory, CaseLabelFactory, case_payload

pytestmark = pytest.mark.django_db


def _case(application, case_id="c1", **kw):
    return case_import(application=application, data=CaseIn.model_validate(case_payload(case_id, **kw)), actor=None).case


def url(name, application, *args):
    return reverse(f"adjudication:{name}", args=[application.slug, *args])


def test_case_page_shows_claim_evidence_and_families_in_plain_prose(client, application, curator, django_assert_max_num_queries):
    case = _case(application)
    client.force_login(curator)
    with django_assert_max_num_queries(16):
        response = client.get(url("case", application, case.case_id))
    html = response.content.decode()
    assert response.status_code == 200
    assert "The agent committed the fix." in html and "corroborated" in html
    assert "family 1 — 2 records, counted as ONE source: same agent turn (event evt-1)" in html
    assert "contested" in html and "independent sources disagree" in html
    for word in ("union", "graph", "node"):
        assert word not in html.lower().split("<main", 1)[1]


def test_family_prose_is_absent_when_no_family_groups_records(client, application, curator):
    case = _case(application, evidence=[{"evidence_id": "e1", "relation": "supports", "trust_class": "host_observed"}])
    client.force_login(curator)
    assert "counted as ONE source" not in client.get(url("case", application, case.case_id)).content.decode()


def test_user_text_is_escaped(client, application, curator):
    case = _case(application, claim={"subject": "<script>x</script>", "text": "<b>bold</b>"})
    client.force_login(curator)
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html


def test_labels_are_hidden_before_submitting_your_own(client, application, curator, curator2):
    case = _case(application)
    label_submit(application=application, case=case, reviewer=curator, label="contradicted", rationale="secret reasoning")
    client.force_login(curator2)
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert "secret reasoning" not in html and "contradicted</span>" not in html
    assert "1 other label hidden until you submit yours" in html
    response = client.post(url("label", application, case.pk), {"label": "reliable", "rationale": "my own"})
    assert response.status_code == 302
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert "secret reasoning" in html and "hidden until" not in html


def test_label_form_errors_write_nothing(client, application, curator):
    case = _case(application)
    client.force_login(curator)
    response = client.post(url("label", application, case.pk), {"label": "reliable", "rationale": ""})
    assert response.status_code == 422 and "This field is required." in response.content.decode()
    assert not CaseLabel.objects.exists()


def test_viewer_can_read_but_not_label(client, application, viewer):
    case = _case(application)
    client.force_login(viewer)
    assert client.get(url("case", application, case.case_id)).status_code == 200
    assert client.post(url("label", application, case.pk), {"label": "reliable", "rationale": "x"}).status_code == 403
    assert client.post(url("claim_next", application)).status_code == 403


def test_claim_next_release_and_skip_screens(client, application, curator):
    first, second = _case(application, "c1"), _case(application, "c2")
    queue_enqueue(application=application, case=first, selection_reason="manual", actor=curator)
    queue_enqueue(application=application, case=second, selection_reason="plan 1", actor=None)
    client.force_login(curator)
    response = client.post(url("claim_next", application))
    assert response.url == url("case", application, first.case_id)
    entry = QueueEntry.objects.get(case=first)
    assert entry.claimed_by == curator
    assert "You hold this case" in client.get(response.url).content.decode()
    response = client.post(url("skip", application, entry.pk))
    assert response.url == url("case", application, second.case_id)
    other = QueueEntry.objects.get(case=second)
    client.post(url("release", application, other.pk))
    other.refresh_from_db()
    assert other.claimed_by is None
    assert client.get(url("claim_next", application)).status_code == 302  # GET just shows the queue


def test_promote_to_gold_and_history(client, application, curator, curator2, curator3):
    case = _case(application)
    mine = label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    theirs = label_submit(application=application, case=case, reviewer=curator2, label="unreliable", rationale="r")
    client.force_login(curator)
    page = client.get(url("case", application, case.case_id)).content.decode()
    assert 'name="rationale"' in page and f'id="why-{theirs.pk}"' in page  # a reason can go with the promotion
    client.post(url("promote", application, case.pk), {"label_id": mine.pk})
    client.post(url("promote", application, case.pk), {"label_id": theirs.pk, "rationale": "host log"})
    assert list(GoldLabelRevision.objects.order_by("revision").values_list("label", flat=True)) == ["reliable", "unreliable"]
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert "revision 2" in html and "host log" in html
    # the gold label's value is not offered for promotion again, whoever gave it
    assert f'data-testid="promote-{theirs.pk}"' not in html and f'data-testid="promote-{mine.pk}"' in html
    same = label_submit(application=application, case=case, reviewer=curator3, label="unreliable", rationale="r")
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert f'data-testid="promote-{same.pk}"' not in html
    client.post(url("promote", application, case.pk), {"label_id": same.pk})
    assert GoldLabelRevision.objects.count() == 2
    # someone who has not labelled the case cannot promote
    other_case = _case(application, "c2")
    label = CaseLabelFactory(case=other_case, reviewer=curator2)
    client.post(url("promote", application, other_case.pk), {"label_id": label.pk})
    assert not GoldLabelRevision.objects.filter(case=other_case).exists()


def test_operator_feedback_from_the_case_page(client, application, viewer):
    case = _case(application)
    client.force_login(viewer)
    response = client.post(url("feedback", application, case.pk), {"disposition": "disagrees", "note": "no"})
    assert response.status_code == 302
    row = CaseFeedback.objects.get()
    assert row.author_kind == "operator" and row.bound_manifest == case.replay_manifest
    assert not CaseLabel.objects.exists()


def test_case_list_filters_and_htmx_partial(client, application, curator, django_assert_max_num_queries):
    for i in range(5):
        _case(application, f"c{i}")
    _case(application, "special", claim={"subject": "rare subject", "text": "t"})
    client.force_login(curator)
    with django_assert_max_num_queries(8):
        response = client.get(url("index", application))
    assert response.status_code == 200 and len(_listed(response.content.decode())) == 6
    partial = client.get(url("index", application), {"q": "rare"}, HTTP_HX_REQUEST="true")
    html = partial.content.decode()
    assert "<html" not in html and "special" in html and "c1<" not in html
    # a filter that is not valid says so and lists nothing (it listed every case)
    bad = client.get(url("index", application), {"status": "bogus"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="filter-errors"' in bad and "Select a valid choice" in bad and "No cases match" in bad
    assert _listed(bad) == []


def _listed(html: str) -> list[str]:
    return re.findall(r'<td><a class="case-id" href="/a/[^/]+/cases/[^/"]+/">([^<]+)</a>', html)


def test_case_list_pages_newest_first_by_cursor_keeping_its_filters(
    client, application, curator, monkeypatch, django_assert_max_num_queries
):
    """It paged by page number, counting the whole filtered, annotated list on every page."""
    monkeypatch.setattr("adjudication.views.PAGE_SIZE", 2)
    for i in range(5):
        _case(application, f"odd-{i}", mined_by=["sensor_disagreement"])
        _case(application, f"even-{i}", mined_by=["high_uncertainty"])
    client.force_login(curator)
    index = url("index", application)
    pages, link = [], "?strategy=sensor_disagreement"
    while True:
        with django_assert_max_num_queries(8) as queries:
            html = client.get(index + link).content.decode()
        listing = [q["sql"] for q in queries.captured_queries if "adjudication_case" in q["sql"]]
        assert listing and not any("COUNT(*)" in sql or "OFFSET" in sql for sql in listing)
        pages.append(_listed(html))
        if not (found := re.search(r'href="(\?[^"]+)" rel="next"', html)):
            break
        link = found.group(1).replace("&amp;", "&")
        assert "strategy=sensor_disagreement" in link  # the filter goes along
    assert pages == [["odd-4", "odd-3"], ["odd-2", "odd-1"], ["odd-0"]]
    back = re.search(r'href="(\?[^"]+)" rel="prev"', html).group(1).replace("&amp;", "&")
    assert _listed(client.get(index + back).content.decode()) == ["odd-2", "odd-1"]
    # A hand-edited cursor says so and shows the newest, not a 500.
    response = client.get(index, {"strategy": "sensor_disagreement", "cursor": "garbage"})
    assert response.status_code == 200 and "Invalid cursor." in response.content.decode()
    assert _listed(response.content.decode()) == ["odd-4", "odd-3"]
    # Each strategy badge links to this filter, by the strategy's exact name.
    unfiltered = client.get(index).content.decode()
    assert 'href="?strategy=high_uncertainty"' in unfiltered and 'href="?strategy=sensor_disagreement"' in unfiltered


def test_agreement_page_gate_and_figures(client, application, curator):
    client.force_login(curator)
    for i in range(19):
        case = CaseFactory(application=application)
        CaseLabelFactory(case=case, reviewer__username="ann", label="reliable" if i % 3 else "unreliable")
        CaseLabelFactory(case=case, reviewer__username="ben", label="reliable")
    html = client.get(url("agreement", application)).content.decode()
    assert "not enough data (19/20)" in html and "κ =" not in html
    case = CaseFactory(application=application)
    CaseLabelFactory(case=case, reviewer__username="ann", label="unreliable")
    CaseLabelFactory(case=case, reviewer__username="ben", label="unreliable")
    html = client.get(url("agreement", application)).content.decode()
    assert "κ =" in html and "not enough data (20/20)" not in html and "<svg" in html


def test_pages_are_sealed(client, tenant_pair):
    case = _case(tenant_pair.b)
    for name in ("case", "label", "promote", "enqueue", "feedback"):
        method = "get" if name == "case" else "post"
        assert_sealed(client, tenant_pair.member_of_a, url(name, tenant_pair.b, case.pk), method)


def test_home_cards(client, application, curator, curator2):
    case = _case(application)
    queue_enqueue(application=application, case=case, selection_reason="manual", actor=curator)
    label_submit(application=application, case=case, reviewer=curator, label="reliable", rationale="r")
    client.force_login(curator2)
    html = client.get(reverse("application_home", args=[application.slug])).content.decode()
    assert 'data-testid="count-open-queue-entries">1<' in html
    assert 'data-testid="count-cases-needing-a-second-label">1<' in html


def test_adding_a_queued_case_again_says_who_added_it_and_why(client, application, curator, curator2):
    case = _case(application)
    entry = queue_enqueue(application=application, case=case, selection_reason="odd citation", actor=curator2)
    client.force_login(curator)
    response = client.post(url("enqueue", application, case.pk), {"selection_reason": ""}, follow=True)
    assert (f"This case is already in the queue, added on {entry.created_at:%Y-%m-%d %H:%M} UTC by "
            f"{curator2.username} (“odd citation”); nothing was added.") in response.content.decode()
    assert QueueEntry.objects.get() == entry


def test_a_case_with_its_labels_is_not_offered_for_the_queue(client, application, curator, curator2):
    case = _case(application)
    for reviewer, label in ((curator, "reliable"), (curator2, "unreliable")):
        label_submit(application=application, case=case, reviewer=reviewer, label=label, rationale="r")
    client.force_login(curator)
    html = client.get(url("case", application, case.case_id)).content.decode()
    assert "Add to the queue" not in html and "already has 2 labels, as many as the queue asks for" in html
    response = client.post(url("enqueue", application, case.pk), {"selection_reason": ""}, follow=True)
    assert "Not added to the queue: this case already has 2 labels" in response.content.decode()
    assert not QueueEntry.objects.exists()


def test_refused_inputs_on_the_case_page_are_named_not_swallowed(client, application, curator):
    case = _case(application)
    client.force_login(curator)
    response = client.post(url("enqueue", application, case.pk), {"selection_reason": "r" * 501}, follow=True)
    assert "Not added to the queue: the reason: Ensure this value has at most 500 characters" in (
        response.content.decode())
    assert not QueueEntry.objects.filter(case=case).exists()  # it was filed as "manual"
    client.post(url("enqueue", application, case.pk), {"selection_reason": ""})
    assert QueueEntry.objects.get(case=case).selection_reason == "manual"  # empty still means manual
    response = client.post(url("feedback", application, case.pk), {"disposition": "disagrees", "note": "n" * 5001})
    assert response.status_code == 422 and "at most" in response.content.decode()
    assert not CaseFeedback.objects.exists()
