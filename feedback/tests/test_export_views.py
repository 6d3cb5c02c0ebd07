"""The queue's download button exports exactly what the queue's filters show."""

import json

import pytest
from django.urls import reverse

from consoles.testing import assert_sealed
from feedback.models import ExportManifest
from feedback.services import flag_review

from .factories import FlagFactory

pytestmark = pytest.mark.django_db


def download(client, slug, query=""):
    response = client.get(reverse("feedback:export", args=[slug]) + query)
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def flags(application, curator):
    approved = FlagFactory(application=application, prompt="<script>alert(1)</script>")
    approved = flag_review(flag=approved, reviewer=curator, status="approved", version=approved.version,
                           axis="toxicity")
    pending = FlagFactory(application=application)
    return approved, pending


def test_the_download_holds_what_the_filters_show(client, flags, curator, django_assert_max_num_queries):
    approved, pending = flags
    client.force_login(curator)
    rows = download(client, "acme", "?status=approved&axis=toxicity&sort=created")
    assert [r["id"] for r in rows] == [approved.public_id]
    assert rows[0]["prompt"] == "<script>alert(1)</script>"  # data, exactly as stored
    assert [r["id"] for r in download(client, "acme", "?status=pending")] == [pending.public_id]
    # The queue without a status filter shows every status: so does its download.
    assert {r["id"] for r in download(client, "acme", "?status=")} == {approved.public_id, pending.public_id}
    # A fixed number whatever the rows: session, user, membership, the export's
    # cursor (declare/fetch/close on PostgreSQL) and the download record.
    with django_assert_max_num_queries(10):
        download(client, "acme", "?status=approved")
    assert ExportManifest.objects.filter(requested_by=curator, requested_by_label="queue:cora").count() == 4


def test_a_viewer_may_download_and_an_outsider_gets_404(client, flags, viewer, tenant_pair):
    client.force_login(viewer)
    assert len(download(client, "acme", "?status=approved")) == 1
    assert_sealed(client, tenant_pair.member_of_a, reverse("feedback:export", args=["acme"]))
    assert_sealed(client, tenant_pair.member_of_a, reverse("feedback:export", args=["tenant-b"]))


def test_bad_filters_go_back_to_the_queue_with_a_message(client, flags, curator):
    client.force_login(curator)
    response = client.get(reverse("feedback:export", args=["acme"]) + "?axis=weather")
    assert response.status_code == 302 and response["Location"].startswith("/a/acme/flags/?")
    assert not ExportManifest.objects.exists()


def test_the_queue_links_the_download_with_its_filters(client, flags, curator):
    client.force_login(curator)
    page = client.get(reverse("feedback:queue", args=["acme"]) + "?status=approved&axis=toxicity")
    html = page.content.decode()
    assert 'data-testid="export-jsonl"' in html
    assert '/a/acme/flags/export.jsonl?status=approved&amp;axis=toxicity' in html
    # An htmx filter change re-renders the rows region, link included.
    partial = client.get(reverse("feedback:queue", args=["acme"]) + "?status=pending",
                         HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-rows")
    assert '/a/acme/flags/export.jsonl?status=pending' in partial.content.decode()
