"""Dataset snapshots (issue 34): named and immutable, the same approved set gives
the same hash, each lists its difference from the previous one, downloads again
byte for byte, or says plainly what erasure or purge removed since."""

import io
from datetime import UTC, datetime, timedelta
from importlib import import_module

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from consoles.models import Role
from consoles.tests.factories import MembershipFactory, UserFactory
from feedback.exports import entries_diff, line_hash
from feedback.models import DatasetSnapshot, ExportKind, ExportManifest
from feedback.selectors import FlagFilters, dataset_snapshot_check, dataset_snapshot_list
from feedback.services import (
    dataset_snapshot_create,
    flag_review,
    flags_purge_expired,
    subject_erase,
)

from .factories import FlagFactory

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 6, 26, 10, 0, tzinfo=UTC)
APPROVED = FlagFilters(status="approved")


def approve(flag, reviewer, **decision):
    return flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version,
                       verdict="false_negative", **decision)


@pytest.fixture
def admin(application):
    return MembershipFactory(user=UserFactory(username="ada"), application=application, role=Role.ADMIN).user


@pytest.fixture
def three(application, curator):
    return [approve(FlagFactory(application=application, created_at=T0 + timedelta(minutes=i),
                                session_id=f"sess_{i}", answer=f"wrong {i}"), curator, correction=f"right {i}")
            for i in range(3)]


def snapshot_via_command(tmp_path, name, *extra):
    out = tmp_path / f"{name}.jsonl"
    stdout = io.StringIO()
    call_command("export_flags", "--application", "acme", "--out", str(out), "--snapshot", name, *extra,
                 stdout=stdout)
    return out, stdout.getvalue()


def test_the_command_records_a_snapshot_of_exactly_its_file(three, tmp_path):
    out, stdout = snapshot_via_command(tmp_path, "v1", "--format", "sft")
    assert "Recorded it as snapshot 'v1'." in stdout
    snapshot = DatasetSnapshot.objects.get()
    lines = out.read_bytes().splitlines()
    assert (snapshot.name, snapshot.export_format, snapshot.row_count) == ("v1", "sft", 3)
    assert snapshot.filters == {"status": "approved"}
    assert snapshot.sha256 == snapshot.manifest.sha256 and snapshot.manifest.path == str(out.resolve())
    assert snapshot.entries == [[f.public_id, line_hash(line)] for f, line in zip(three, lines, strict=True)]


def test_the_same_approved_set_gives_the_same_hash(three, tmp_path, application, curator):
    snapshot_via_command(tmp_path, "a")
    snapshot_via_command(tmp_path, "b")
    by_screen = dataset_snapshot_create(application=application, name="c", filters=APPROVED, created_by=curator)
    a, b = DatasetSnapshot.objects.get(name="a"), DatasetSnapshot.objects.get(name="b")
    assert a.sha256 == b.sha256 == by_screen.sha256 and a.entries == by_screen.entries
    # A pending flag arriving changes nothing approved; an approval does.
    FlagFactory(application=application)
    assert dataset_snapshot_create(application=application, name="d", filters=APPROVED).sha256 == a.sha256
    approve(FlagFactory(application=application), curator)
    assert dataset_snapshot_create(application=application, name="e", filters=APPROVED).sha256 != a.sha256


def test_a_snapshot_is_immutable(three, application):
    snapshot = dataset_snapshot_create(application=application, name="v1", filters=APPROVED)
    snapshot.name = "renamed"
    with pytest.raises(TypeError, match="immutable"):
        snapshot.save()
    with pytest.raises(TypeError, match="immutable"):
        snapshot.delete()
    assert DatasetSnapshot.objects.get().name == "v1"


def test_a_name_is_unique_per_application_and_the_command_says_so_in_one_line(three, tmp_path, tenant_pair):
    snapshot_via_command(tmp_path, "v1")
    with pytest.raises(CommandError) as refused:
        call_command("export_flags", "--application", "acme", "--out", str(tmp_path / "again.jsonl"),
                     "--snapshot", "v1")
    assert refused.value.returncode == 2 and "--snapshot" in str(refused.value)
    assert "\n" not in str(refused.value) and not (tmp_path / "again.jsonl").exists()
    assert ExportManifest.objects.count() == 1
    # Another application may use the same name.
    dataset_snapshot_create(application=tenant_pair.a, name="v1", filters=APPROVED)
    assert DatasetSnapshot.objects.filter(name="v1").count() == 2


def test_the_diff_names_added_removed_and_changed_ids(three, application, curator):
    first, second, third = three
    dataset_snapshot_create(application=application, name="v1", filters=APPROVED, export_format="sft")
    # second: re-approved with another correction (changed); third: rejected (removed); a new one (added).
    second = flag_review(flag=second, reviewer=curator, status="pending", version=second.version)
    approve(second, curator, correction="better 1")
    third = flag_review(flag=third, reviewer=curator, status="pending", version=third.version)
    flag_review(flag=third, reviewer=curator, status="rejected", version=third.version)
    added = approve(FlagFactory(application=application, created_at=T0 + timedelta(hours=1)), curator,
                    correction="right 9")
    dataset_snapshot_create(application=application, name="v2", filters=APPROVED, export_format="sft")
    # Another format's snapshot is compared with its own kind only.
    dataset_snapshot_create(application=application, name="c1", filters=APPROVED)
    rows = {row.snapshot.name: row for row in dataset_snapshot_list(application=application)}
    assert rows["v1"].diff is None and rows["c1"].diff is None
    assert rows["v2"].previous.name == "v1"
    assert (rows["v2"].diff.added, rows["v2"].diff.removed, rows["v2"].diff.changed) == (
        [added.public_id], [third.public_id], [second.public_id])
    assert entries_diff([["x", "1"]], [["x", "1"]]).changed == []


def _snapshots_v1_v2_c1(three, application, curator) -> dict:
    first, second, third = three
    dataset_snapshot_create(application=application, name="v1", filters=APPROVED, export_format="sft")
    flag_review(flag=third, reviewer=curator, status="pending", version=third.version)
    dataset_snapshot_create(application=application, name="v2", filters=APPROVED, export_format="sft")
    dataset_snapshot_create(application=application, name="c1", filters=APPROVED)
    return {"removed": [third.public_id]}


def test_the_list_reads_the_diffs_taken_when_recorded_in_one_query_without_entries(
        three, application, curator):
    expected = _snapshots_v1_v2_c1(three, application, curator)
    with CaptureQueriesContext(connection) as queries:
        rows = dataset_snapshot_list(application=application)
        shown = [(row.snapshot.name, row.previous.name if row.previous else None,
                  row.diff.removed if row.diff else None, row.snapshot.manifest.is_stale) for row in rows]
    assert len(queries) == 1 and '"entries"' not in queries[0]["sql"]
    assert shown == [("c1", None, None, False), ("v2", "v1", expected["removed"], False), ("v1", None, None, False)]


def test_the_migration_takes_the_diffs_of_snapshots_recorded_before_it(three, application, curator):
    from django.apps import apps

    take_the_diffs = import_module("feedback.migrations.0015_snapshot_diff_taken_once").take_the_diffs
    expected = _snapshots_v1_v2_c1(three, application, curator)
    DatasetSnapshot.objects.update(previous=None, diff=None)  # as the rows were before 0015
    take_the_diffs(apps, None)
    v2 = DatasetSnapshot.objects.get(name="v2")
    assert v2.previous.name == "v1" and v2.diff == {"added": [], "removed": expected["removed"], "changed": []}
    assert DatasetSnapshot.objects.filter(diff__isnull=True).count() == 2  # the first of each format


def test_a_snapshot_downloads_again_byte_for_byte(three, tmp_path, client, curator):
    out, _ = snapshot_via_command(tmp_path, "v1", "--format", "preference")
    client.force_login(curator)
    response = client.get(reverse("feedback:snapshot_download", args=["acme", "v1"]))
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == out.read_bytes()
    download = ExportManifest.objects.get(kind=ExportKind.FLAGS_DOWNLOAD)
    assert download.export_format == "preference" and download.sha256 == DatasetSnapshot.objects.get().sha256


def test_erasure_marks_a_snapshot_changed_and_says_what_it_removed(three, application, client, curator):
    snapshot = dataset_snapshot_create(application=application, name="v1", filters=APPROVED)
    assert dataset_snapshot_check(snapshot=snapshot).intact
    record = subject_erase(application=application, session_id="sess_1", requested_by="dpo")
    assert any("dataset snapshot" in line for line in record.stale_exports)
    check = dataset_snapshot_check(snapshot=DatasetSnapshot.objects.get())
    assert not check.intact and check.erased == [three[1].public_id] and check.erasures == [record]
    client.force_login(curator)
    listing = client.get(reverse("feedback:snapshots", args=["acme"])).content.decode()
    assert 'data-testid="snapshot-stale"' in listing and f"erasure #{record.pk}" in listing
    response = client.get(reverse("feedback:snapshot_download", args=["acme", "v1"]))
    html = response.content.decode()
    assert response.status_code == 409 and 'data-testid="snapshot-erased"' in html
    assert three[1].public_id in html and f"#{record.pk}" in html
    assert not ExportManifest.objects.filter(kind=ExportKind.FLAGS_DOWNLOAD).exists()  # nothing was sent


def test_a_retention_purge_is_named_too(three, application):
    snapshot = dataset_snapshot_create(application=application, name="v1", filters=APPROVED)
    application.retention_days = 30
    application.save()
    flags_purge_expired()  # the flags were created months ago
    check = dataset_snapshot_check(snapshot=snapshot)
    assert not check.intact and sorted(check.erased) == sorted(f.public_id for f in three)
    assert [r.kind for r in check.erasures] == ["retention"]


def test_the_screen_lists_snapshots_and_only_an_admin_records_one(three, client, admin, curator):
    url = reverse("feedback:snapshots", args=["acme"])
    client.force_login(curator)
    page = client.get(url).content.decode()
    assert 'data-testid="no-snapshots"' in page and 'data-testid="snapshot-button"' not in page
    assert client.post(url, {"name": "v1", "format": "sft"}).status_code == 403
    client.force_login(admin)
    assert 'data-testid="snapshot-button"' in client.get(url).content.decode()
    assert client.post(url, {"name": "v1", "format": "sft"}).status_code == 302
    snapshot = DatasetSnapshot.objects.get()
    assert (snapshot.export_format, snapshot.row_count, snapshot.created_by) == ("sft", 3, admin)
    assert snapshot.manifest.kind == ExportKind.SNAPSHOT
    taken = client.post(url, {"name": "v1", "format": "sft"})
    assert taken.status_code == 422 and 'id="snapshot-name-error"' in taken.content.decode()
    unknown = client.post(url, {"name": "v2", "format": "unknown"})
    assert unknown.status_code == 422 and 'id="snapshot-format-error"' in unknown.content.decode()
    assert DatasetSnapshot.objects.count() == 1
    assert 'data-testid="snapshot-v1"' in client.get(url).content.decode()


def test_another_tenants_snapshots_are_404(client, tenant_pair):
    dataset_snapshot_create(application=tenant_pair.b, name="v1", filters=APPROVED)
    client.force_login(tenant_pair.member_of_a)
    assert client.get(reverse("feedback:snapshots", args=["tenant-b"])).status_code == 404
    assert client.get(reverse("feedback:snapshot_download", args=["tenant-b", "v1"])).status_code == 404
    assert client.get(reverse("feedback:snapshot_download", args=["tenant-a", "v1"])).status_code == 404
    assert client.post(reverse("feedback:snapshots", args=["tenant-b"]), {"name": "x"}).status_code == 404
