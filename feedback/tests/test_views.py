from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from consoles.testing import assert_sealed
from feedback.models import Flag, FlagReview

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db


def _queue(slug="acme"):
    return reverse("feedback:queue", args=[slug])


def _detail(flag):
    return reverse("feedback:detail", args=[flag.application.slug, flag.public_id])


def _review(flag):
    return reverse("feedback:review", args=[flag.application.slug, flag.public_id])


def test_the_queue_lists_flags_in_few_queries_at_any_size(client, application, viewer, django_assert_max_num_queries):
    for i in range(60):
        FlagFactory(application=application, message_id=f"m{i}")
    client.force_login(viewer)
    with django_assert_max_num_queries(8):
        response = client.get(_queue() + "?status=pending")
    html = response.content.decode()
    assert response.status_code == 200 and html.count("data-flag-id=") == 50
    assert 'rel="next"' in html and "COUNT" not in str(response)
    assert 'name="ids"' not in html  # a viewer gets no bulk selection


def test_the_queue_reads_only_what_its_rows_show(client, application, viewer):
    flag = FlagFactory(application=application, prompt="P" * 5000, answer="A" * 5000,
                       note="a note longer than the column shows, " * 20)
    client.force_login(viewer)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(_queue() + "?status=pending")
    html = response.content.decode()
    page_query = next(q["sql"] for q in queries if 'FROM "feedback_flag"' in q["sql"])
    assert '"prompt"' not in page_query and '"answer"' not in page_query and '"context"' not in page_query
    # The row as it was drawn from the whole flag: its day, status, axis and note cut to size.
    row = html[html.index(f'id="row-{flag.public_id}"'):]
    row = row[: row.index("</tr>")]
    assert timezone.localtime(flag.created_at).strftime("%Y-%m-%d %H:%M") + " UTC" in row
    assert flag.get_status_display() in row and flag.axis.replace("_", " ") in row
    assert f'title="{flag.note[:499]}…"' in row and flag.note[:47] + "…" in row
    assert "PPPP" not in html


def test_an_htmx_request_gets_only_the_rows(client, application, curator):
    FlagFactory(application=application, note="row note")
    client.force_login(curator)
    response = client.get(_queue() + "?status=pending", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-rows")
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and 'id="queue-rows"' in html and "row note" in html


def test_a_rows_note_tooltip_is_capped_and_escaped(client, application, curator):
    """The queue carries each row's note as a tooltip: a 100,000-character note would
    put megabytes into one page of rows, so the tooltip stops at 500 characters."""
    FlagFactory(application=application, note="<i>x</i> " + "y" * 99_000)
    client.force_login(curator)
    html = client.get(_queue() + "?status=pending").content.decode()
    title = html.split('class="clip" title="', 1)[1].split('"', 1)[0]
    assert title.startswith("&lt;i&gt;x&lt;/i&gt; yyy") and title.endswith("…")
    assert len(title.replace("&lt;", "<").replace("&gt;", ">")) == 500 and "y" * 600 not in html


def test_filters_narrow_the_rows_and_bad_filters_say_why(client, application, curator):
    FlagFactory(application=application, problem="offensive", suggested_axis="toxicity", note="rude one")
    FlagFactory(application=application, note="made up one")
    client.force_login(curator)
    html = client.get(_queue() + "?axis=toxicity").content.decode()
    assert "rude one" in html and "made up one" not in html
    html = client.get(_queue() + "?status=bogus").content.decode()
    assert "Select a valid choice" in html and "rude one" not in html
    response = client.get(_queue() + "?created_from=0001-01-01&created_to=9999-12-31")
    html = response.content.decode()
    assert response.status_code < 500 and "Choose a day from 1970-01-01" in html and "rude one" not in html
    # no download of "these flags" while the filters are wrong (the link saved the error page as a file)
    assert 'data-testid="export-jsonl"' not in html
    assert 'data-testid="export-jsonl"' in client.get(_queue() + "?axis=toxicity").content.decode()


def test_filters_are_remembered_per_user_and_never_shared(client, application, curator, curator2):
    client.force_login(curator)
    client.get(_queue() + "?status=approved&region=prompt")
    response = client.get(_queue())
    assert response.status_code == 302 and response.url.endswith("?status=approved&region=prompt")
    client.force_login(curator2)
    response = client.get(_queue())
    assert response.status_code == 302 and response.url.endswith("?status=pending")


def test_the_detail_escapes_user_text_and_shows_scores_and_history(client, application, curator):
    flag = FlagFactory(application=application, prompt="<script>alert('x')</script>", note="<b>bold</b>",
                       detector_scores={"hallucination": 0.7})
    client.force_login(curator)
    html = client.get(_detail(flag)).content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert '<meter min="0" max="1" value="0.700"' in html
    assert "End user" in html and "Created" in html


def _claim(flag):
    return reverse("feedback:claim", args=[flag.application.slug, flag.public_id])


def test_opening_a_flag_with_a_get_claims_nothing_the_pane_claims_by_post(client, application, curator, curator2):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    html = client.get(_detail(flag)).content.decode()
    assert Flag.objects.get(pk=flag.pk).claimed_by is None  # a GET (a prefetch, a crawler) claims nothing
    assert f'hx-post="{_claim(flag)}" hx-trigger="load"' in html
    assert client.get(_claim(flag)).status_code == 405
    assert client.post(_claim(flag), HTTP_HX_REQUEST="true").status_code == 204
    flag.refresh_from_db()
    assert flag.claimed_by == curator and flag.claimed_until > timezone.now()
    assert "hx-trigger=\"load\"" not in client.get(_detail(flag)).content.decode()  # held already: no second claim
    client.force_login(curator2)
    html = client.get(_detail(flag)).content.decode()
    assert "Open by cora" in html and _claim(flag) not in html
    client.post(_claim(flag))
    assert Flag.objects.get(pk=flag.pk).claimed_by == curator  # not stolen


def test_a_viewer_cannot_claim(client, application, viewer):
    flag = FlagFactory(application=application)
    client.force_login(viewer)
    assert _claim(flag) not in client.get(_detail(flag)).content.decode()
    assert client.post(_claim(flag)).status_code == 403
    assert Flag.objects.get(pk=flag.pk).claimed_by is None


def test_next_follows_the_lists_order_and_skips_flags_another_curator_has_open(client, application, curator,
                                                                                curator2):
    older = FlagFactory(application=application, created_at=timezone.now() - timedelta(hours=2))
    newer = FlagFactory(application=application, created_at=timezone.now() - timedelta(hours=1))
    url = reverse("feedback:next", args=["acme"])
    client.force_login(curator)
    assert client.get(url).url.startswith(_detail(newer))  # newest first, as the list
    assert Flag.objects.get(pk=newer.pk).claimed_by is None  # a GET claims nothing
    assert client.post(url + "?status=pending").url == _detail(newer) + "?status=pending"
    assert Flag.objects.get(pk=newer.pk).claimed_by == curator
    client.force_login(curator2)
    assert client.post(url).url.startswith(_detail(older))
    # oldest first when the list is sorted so
    Flag.objects.update(claimed_by=None, claimed_until=None)
    assert client.post(url + "?status=pending&sort=created").url.startswith(_detail(older))


def test_after_a_decision_next_is_the_row_below_in_the_lists_order(client, application, curator):
    now = timezone.now()
    top, middle, bottom = (FlagFactory(application=application, created_at=now - timedelta(hours=h)) for h in (1, 2, 3))
    client.force_login(curator)
    response = client.post(_review(middle) + "?status=pending", {"decision": "rejected", "version": 1})
    assert response.url == _detail(bottom) + "?status=pending"  # below it, not the list's top
    response = client.post(_review(bottom) + "?status=pending", {"decision": "rejected", "version": 1})
    assert response.url == _detail(top) + "?status=pending"  # from the bottom row, back to the top


def test_approve_by_form_then_the_next_pending_flag_opens(client, application, curator):
    first = FlagFactory(application=application, created_at=timezone.now() - timedelta(hours=2))
    second = FlagFactory(application=application, created_at=timezone.now() - timedelta(hours=1))
    client.force_login(curator)
    response = client.post(_review(first) + "?status=pending", {
        "decision": "approved", "version": 1, "axis": "jailbreak", "verdict": "false_positive", "note": "ok"})
    assert response.status_code == 302 and response.url == _detail(second) + "?status=pending"
    first.refresh_from_db()
    assert (first.status, first.axis, first.verdict) == ("approved", "jailbreak", "false_positive")
    assert FlagReview.objects.get().reviewer == curator
    html = client.get(response.url).content.decode()
    assert f"Approved {first.public_id}." in html


def test_reject_and_reopen_by_form(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    client.post(_review(flag), {"decision": "rejected", "version": 1, "note": "noise"})
    assert Flag.objects.get(pk=flag.pk).status == "rejected"
    response = client.post(_review(flag), {"decision": "pending", "version": 2})
    assert response.status_code == 302 and response.url == _detail(flag)
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_a_decision_on_a_flag_decided_meanwhile_shows_a_conflict(client, application, curator, curator2):
    flag = FlagFactory(application=application)
    client.force_login(curator2)
    client.post(_review(flag), {"decision": "rejected", "version": 1})
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "approved", "version": 1, "verdict": "false_negative"})
    html = response.content.decode()
    assert response.status_code == 409 and 'data-testid="conflict"' in html and "rejected" in html
    assert html.count("your decision was not saved") == 1  # said once, not as a banner too
    assert Flag.objects.get(pk=flag.pk).status == "rejected" and FlagReview.objects.count() == 1
    # queue.js puts the flag's own address in the address bar, not the form's /review/.
    assert f'data-shown-url="{_detail(flag)}"' in html


def test_a_version_the_flag_never_had_is_bad_input_not_a_conflict(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "approved", "verdict": "false_negative", "version": 9})
    html = response.content.decode()
    assert response.status_code == 422 and 'data-testid="conflict"' not in html
    assert "Version 9 is not one this flag has had" in html
    assert Flag.objects.get(pk=flag.pk).status == "pending" and not FlagReview.objects.exists()


def test_an_invalid_decision_is_a_form_error(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    response = client.post(_review(flag), {"decision": "approved", "version": 1, "axis": "vibes"})
    assert response.status_code == 422 and "Select a valid choice" in response.content.decode()
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_a_capture_is_labelled_from_the_screen(client, application, curator):
    capture = CaptureFactory(application=application)
    client.force_login(curator)
    html = client.get(_detail(capture)).content.decode()
    assert 'data-testid="label-form"' in html and "should-have-refused" in html and 'data-testid="approve-form"' not in html
    client.post(_review(capture), {"decision": "labelled", "version": 1, "label": "wrong"})
    capture.refresh_from_db()
    assert capture.status == "labelled" and capture.capture_label == "wrong"


def test_a_viewer_cannot_decide(client, application, viewer):
    flag = FlagFactory(application=application)
    client.force_login(viewer)
    assert 'data-testid="approve-form"' not in client.get(_detail(flag)).content.decode()
    assert client.post(_review(flag), {"decision": "rejected", "version": 1}).status_code == 403
    assert Flag.objects.get(pk=flag.pk).status == "pending" and Flag.objects.get(pk=flag.pk).claimed_by is None


def test_bulk_reject_asks_first_leaves_captures_out_and_offers_an_undo(client, application, curator, curator2):
    flags = [FlagFactory(application=application) for _ in range(3)]
    capture = CaptureFactory(application=application)
    client.force_login(curator)
    url = reverse("feedback:bulk_reject", args=["acme"])
    assert client.get(url).status_code == 302
    chosen = [flags[0].public_id, flags[2].public_id, capture.public_id]
    response = client.post(url, {"ids": chosen})
    html = response.content.decode()
    assert response.status_code == 200 and "Reject 2 flags?" in html and "2 flagged by end users" in html
    assert "1 selected capture is left out" in html and capture.public_id not in html.split("bulk-ids")[1]
    assert [Flag.objects.get(pk=f.pk).status for f in (*flags, capture)] == ["pending"] * 4  # nothing yet
    response = client.post(url, {"ids": chosen, "confirm": "1"})
    assert response.status_code == 302
    assert [Flag.objects.get(pk=f.pk).status for f in (*flags, capture)] == ["rejected", "pending", "rejected",
                                                                              "pending"]
    html = client.get(response.url, follow=True).content.decode()
    assert 'data-testid="bulk-undo"' in html and "Rejected 2 flags." in html
    assert 'data-testid="bulk-undo"' not in client.get(response.url, follow=True).content.decode()  # offered once
    batch = html.split('name="batch" value="', 1)[1].split('"', 1)[0]
    # someone re-decides one of them meanwhile: the undo leaves that one as it is
    changed = Flag.objects.get(pk=flags[2].pk)
    other = Client()
    other.force_login(curator2)
    other.post(_review(changed), {"decision": "pending", "version": changed.version})
    other.post(_review(changed), {"decision": "rejected", "version": changed.version + 1, "note": "mine"})
    reopen = reverse("feedback:bulk_reopen", args=["acme"])
    assert client.post(reopen, {"batch": "forged"}).status_code == 302
    assert Flag.objects.get(pk=flags[0].pk).status == "rejected"  # a wrong batch undoes nothing
    client.post(reopen, {"batch": batch})
    assert [Flag.objects.get(pk=f.pk).status for f in flags] == ["pending", "pending", "rejected"]
    client.post(reopen, {"batch": batch})  # once only
    assert Flag.objects.get(pk=flags[0].pk).version == 3
    assert client.post(url, {}).status_code == 302  # nothing selected: a message, nothing written


def test_another_tenants_flag_is_404_on_every_screen(client, tenant_pair):
    flag = FlagFactory(application=tenant_pair.b)
    assert_sealed(client, tenant_pair.member_of_a, _detail(flag))
    assert_sealed(client, tenant_pair.member_of_a, _review(flag), method="post",
                  data={"decision": "rejected", "version": 1})
    # and A's own URL for B's flag is a 404 too
    url = reverse("feedback:detail", args=[tenant_pair.a.slug, flag.public_id])
    client.force_login(tenant_pair.member_of_a)
    assert client.get(url).status_code == 404
    assert Flag.objects.get(pk=flag.pk).status == "pending"


def test_the_detail_page_query_count_is_bounded(client, application, curator, django_assert_max_num_queries):
    flag = FlagFactory(application=application)
    for i in range(30):
        FlagFactory(application=application, message_id=f"n{i}")
    client.force_login(curator)
    with django_assert_max_num_queries(14):
        assert client.get(_detail(flag)).status_code == 200


def test_the_history_shows_changed_values_as_people_read_them(client, application, curator):
    flag = FlagFactory(application=application)
    client.force_login(curator)
    client.post(reverse("feedback:review", args=[application.slug, flag.public_id]),
                {"decision": "approved", "version": flag.version, "axis": "hallucination",
                 "verdict": "false_positive", "note": "over-flagged"})
    html = client.get(_detail(flag)).content.decode()
    assert "verdict — → False positive (an over-flag)" in html and "false_positive" not in html.split("History")[-1]
    assert ": “over-flagged”" in html
