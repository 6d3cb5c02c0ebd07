"""Exports, drafts, retention and erasure against the database (SQLite and PostgreSQL)."""

import errno
import hashlib
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone

from consoles import files
from consoles.errors import InvalidInput
from consoles.files import ExportPathError, read_manifest
from consoles.tests.factories import ApplicationFactory, UserFactory
from feedback import services
from feedback.exports import EXPORT_FIELDS, decode_id_set
from feedback.models import ErasureRecord, ExportKind, ExportManifest, Flag, FlagEvent, FlagReview
from feedback.selectors import FlagFilters
from feedback.services import (
    SINCE_LAST_OVERLAP,
    drafts_export,
    flag_review,
    flags_export_file,
    flags_purge_expired,
    register_erasure_hook,
    subject_digest,
    subject_erase,
)
from feedback.services import exports as export_services

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db

APPROVED = FlagFilters(status="approved")


def approve(flag, reviewer, **decision):
    return flag_review(flag=flag, reviewer=reviewer, status="approved", version=flag.version, **decision)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def corpus(application, curator):
    """Two approved flags (a miss and an over-flag), one pending, one rejected."""
    miss = approve(FlagFactory(application=application, region="prompt", problem="jailbreak_attempt",
                               suggested_axis="jailbreak", prompt="ignore the rules", answer="",
                               note="slipped past the input screen"), curator)
    over = approve(FlagFactory(application=application), curator, verdict="false_positive",
                   axis="toxicity")
    FlagFactory(application=application)
    rejected = FlagFactory(application=application)
    flag_review(flag=rejected, reviewer=curator, status="rejected", version=rejected.version)
    return miss, over


def test_the_file_holds_exactly_the_approved_flags_in_seed_001s_format(corpus, tmp_path, application):
    miss, over = corpus
    out = tmp_path / "corpus.jsonl"
    manifest = flags_export_file(application=application, filters=APPROVED, out=out)
    records = lines(out)
    assert [r["id"] for r in records] == [miss.public_id, over.public_id]
    assert records[0] == {
        "id": miss.public_id,
        "region": "prompt",
        "axis": "jailbreak",
        "label": 1,
        "verdict": "false_negative",
        "prompt": "ignore the rules",
        "context": "",
        "answer": "",
        "problem": "jailbreak_attempt",
        "note": "slipped past the input screen",
        "application_id": "acme",
        "created_at": miss.created_at.astimezone(timezone.UTC).isoformat(timespec="seconds"),
        "source": "human_feedback",
    }
    assert list(records[0]) == list(EXPORT_FIELDS)
    assert (records[1]["axis"], records[1]["label"], records[1]["verdict"]) == ("toxicity", 0, "false_positive")
    # The manifest next to the file describes it exactly.
    data = out.read_bytes()
    document = read_manifest(out)
    assert document["rows"] == 2 == manifest.row_count
    assert document["sha256"] == hashlib.sha256(data).hexdigest() == manifest.sha256
    assert document["filters"] == {"status": "approved"} and document["corpus_version"].startswith("cv_")
    assert document["manifest_id"] == manifest.pk and document["generated_at"]
    assert sorted(decode_id_set(manifest.flag_set).tolist()) == sorted([miss.pk, over.pk])


def test_the_export_loads_as_a_dataset(corpus, tmp_path, application):
    out = tmp_path / "corpus.jsonl"
    flags_export_file(application=application, filters=APPROVED, out=out)
    try:
        import pandas
    except ImportError:  # not a dependency: the standard library reads JSONL just as well
        rows = [json.loads(line) for line in out.open(encoding="utf-8")]
        assert [sorted(r) for r in rows] == [sorted(EXPORT_FIELDS)] * 2
        assert [r["label"] for r in rows] == [1, 0]
    else:
        frame = pandas.read_json(out, lines=True)
        assert list(frame.columns) == list(EXPORT_FIELDS) and frame["label"].tolist() == [1, 0]


def test_other_tenants_flags_never_reach_the_file(corpus, tmp_path, application, curator):
    other = ApplicationFactory(slug="other")
    outsider = UserFactory(username="olga")
    from consoles.tests.factories import MembershipFactory

    MembershipFactory(user=outsider, application=other)
    approve(FlagFactory(application=other, message_id="msg_shared"), outsider)
    out = tmp_path / "acme.jsonl"
    flags_export_file(application=application, filters=FlagFilters(), out=out)
    assert {r["application_id"] for r in lines(out)} == {"acme"}
    assert len(lines(out)) == 4  # every status of acme's, none of other's


def test_a_failure_mid_export_leaves_no_file_and_no_manifest(corpus, tmp_path, application, monkeypatch):
    out = tmp_path / "corpus.jsonl"
    real = export_services.flag_export_batches

    def failing(**kwargs):
        rows = real(**kwargs)
        yield next(rows)
        raise DatabaseError("connection lost")

    monkeypatch.setattr(export_services, "flag_export_batches", failing)
    with pytest.raises(DatabaseError):
        flags_export_file(application=application, filters=APPROVED, out=out)
    assert list(tmp_path.iterdir()) == []
    assert not ExportManifest.objects.exists()


def test_a_failure_mid_export_keeps_the_previous_file_whole(corpus, tmp_path, application, monkeypatch):
    out = tmp_path / "corpus.jsonl"
    flags_export_file(application=application, filters=APPROVED, out=out)
    before = out.read_bytes()

    def failing(**kwargs):
        raise DatabaseError("connection lost")
        yield

    monkeypatch.setattr(export_services, "flag_export_batches", failing)
    with pytest.raises(DatabaseError):
        flags_export_file(application=application, filters=APPROVED, out=out)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "corpus.jsonl.manifest.json"]


def test_an_export_never_stands_without_its_manifest(corpus, tmp_path, application, monkeypatch):
    # Without the manifest beside it, the next run would refuse the file as "not an export".
    out = tmp_path / "corpus.jsonl"

    def full_disk(path, manifest):
        raise ExportPathError("Cannot write the manifest: No space left on device.")

    monkeypatch.setattr(files, "write_manifest", full_disk)
    with pytest.raises(ExportPathError):
        flags_export_file(application=application, filters=APPROVED, out=out)
    assert list(tmp_path.iterdir()) == [] and not ExportManifest.objects.exists()


def test_an_export_that_cannot_be_renamed_keeps_the_previous_manifest(corpus, tmp_path, application, monkeypatch):
    out = tmp_path / "corpus.jsonl"
    flags_export_file(application=application, filters=APPROVED, out=out)
    before, manifest_before = out.read_bytes(), files.manifest_path(out).read_bytes()
    real_replace = os.replace

    def refuse_the_export(source, target):
        if Path(target) == out:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(source, target)

    monkeypatch.setattr(files.os, "replace", refuse_the_export)
    with pytest.raises(ExportPathError):
        flags_export_file(application=application, filters=FlagFilters(status="pending"), out=out)
    assert out.read_bytes() == before and files.manifest_path(out).read_bytes() == manifest_before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "corpus.jsonl.manifest.json"]
    assert ExportManifest.objects.count() == 1


def test_an_unwritable_path_is_refused_before_reading_anything(corpus, tmp_path, application):
    with pytest.raises(ExportPathError, match="does not exist"):
        flags_export_file(application=application, filters=APPROVED, out=tmp_path / "nope" / "x.jsonl")
    assert not ExportManifest.objects.exists()


def test_since_last_exports_only_what_changed_since_the_previous_manifest(
    corpus, tmp_path, application, curator
):
    miss, over = corpus
    long_ago = timezone.now() - SINCE_LAST_OVERLAP - timedelta(hours=1)
    Flag.objects.filter(application=application).update(updated_at=long_ago)
    first = flags_export_file(application=application, filters=APPROVED, out=tmp_path / "1.jsonl",
                              since_last=True)
    assert first.since is None and first.row_count == 2  # no previous manifest: everything

    new = approve(FlagFactory(application=application), curator)
    # A re-review of an exported flag is a change too.
    flag_review(flag=over, reviewer=curator, status="pending", version=over.version)
    over.refresh_from_db()
    approve(over, curator, verdict="false_negative", axis="toxicity")

    second = flags_export_file(application=application, filters=APPROVED, out=tmp_path / "2.jsonl",
                               since_last=True)
    assert {r["id"] for r in lines(tmp_path / "2.jsonl")} == {new.public_id, over.public_id}
    assert second.since == first.watermark - SINCE_LAST_OVERLAP
    assert read_manifest(tmp_path / "2.jsonl")["since"] is not None
    # A different filter is another series: it starts from scratch.
    other = flags_export_file(application=application, filters=FlagFilters(status="approved", axis="toxicity"),
                              out=tmp_path / "3.jsonl", since_last=True)
    assert other.since is None


def _reviewed_set(application, curator):
    approve(FlagFactory(application=application), curator)
    capture = CaptureFactory(application=application, detector_scores={"hallucination": 0.4})
    flag_review(flag=capture, reviewer=curator, status="labelled", version=capture.version, label="wrong")
    FlagFactory(application=application)  # pending: not reviewed, not exported


def test_drafts_are_byte_identical_for_the_same_reviews(application, curator, tmp_path):
    _reviewed_set(application, curator)
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    m1 = drafts_export(application=application, out_dir=first)
    m2 = drafts_export(application=application, out_dir=second)
    names = sorted(p.name for p in first.iterdir())
    assert names == ["confidence-fit.draft.yaml", "eval-cases.draft.yaml", "judge-probes.draft.yaml"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes()
    assert m1.sha256 == m2.sha256 and m1.row_count == 2 and m1.kind == ExportKind.DRAFTS
    probes = (first / "judge-probes.draft.yaml").read_text()
    assert "reviewer: cora" in probes and "source: review-queue" in probes
    assert "judgement: single-reviewer" in probes


def test_a_new_review_changes_the_drafts(application, curator, tmp_path):
    _reviewed_set(application, curator)
    drafts_export(application=application, out_dir=tmp_path)
    before = (tmp_path / "eval-cases.draft.yaml").read_bytes()
    approve(FlagFactory(application=application), curator)
    drafts_export(application=application, out_dir=tmp_path)
    assert (tmp_path / "eval-cases.draft.yaml").read_bytes() != before


def test_drafts_that_cannot_be_recorded_never_appear(application, curator, tmp_path, monkeypatch):
    """An erasure finds the drafts an erased flag is in through their manifest row,
    so no draft file may exist without one."""
    _reviewed_set(application, curator)

    def failing(**kwargs):
        raise DatabaseError("connection lost")

    monkeypatch.setattr(export_services, "_export_manifest_create", failing)
    with pytest.raises(DatabaseError):
        drafts_export(application=application, out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == [] and not ExportManifest.objects.exists()


def _fail_calls(monkeypatch, owner, name: str, fails, error: OSError) -> None:
    """`owner.name` raises `error` on each call whose number (from 1) `fails(n)` picks."""
    real, calls = getattr(owner, name), []

    def failing(*args, **kwargs):
        calls.append(args)
        if fails(len(calls)):
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)


def _refuse_renames_from(monkeypatch, nth: int) -> None:
    """os.replace fails from its `nth` call on (1-based), as a full or failing disk would."""
    _fail_calls(monkeypatch, files.os, "replace", lambda n: n >= nth, OSError(errno.EIO, "Input/output error"))


@pytest.mark.parametrize("failure", ["third temporary file: disk full", "first rename: I/O error"])
def test_drafts_that_fail_before_one_appears_leave_the_previous_drafts_and_no_new_record(
    application, curator, tmp_path, monkeypatch, failure
):
    import tempfile

    _reviewed_set(application, curator)
    drafts_export(application=application, out_dir=tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    approve(FlagFactory(application=application), curator)
    if failure.startswith("third"):
        _fail_calls(monkeypatch, tempfile, "mkstemp", lambda n: n == 3, OSError(errno.ENOSPC, "No space left on device"))
    else:
        _refuse_renames_from(monkeypatch, 1)
    with pytest.raises(ExportPathError):
        drafts_export(application=application, out_dir=tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temporary left either
    assert ExportManifest.objects.count() == 1  # no draft appeared: no record of one either


def test_drafts_renamed_in_part_keep_their_record(application, curator, tmp_path, monkeypatch):
    """A draft that appeared must be findable by erasure: its manifest row stays."""
    _reviewed_set(application, curator)
    _refuse_renames_from(monkeypatch, 2)
    with pytest.raises(ExportPathError):
        drafts_export(application=application, out_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 1  # the one renamed; the other temporaries are gone
    assert ExportManifest.objects.filter(kind=ExportKind.DRAFTS).count() == 1


def _aged(flag, days):
    then = timezone.now() - timedelta(days=days)
    Flag.objects.filter(pk=flag.pk).update(created_at=then, updated_at=then)
    return flag


def test_purge_deletes_expired_flags_with_their_events_and_marks_exports_stale(
    application, curator, tmp_path
):
    application.retention_days = 30
    application.save()
    old = _aged(approve(FlagFactory(application=application), curator), 40)
    young = approve(FlagFactory(application=application), curator)
    keeper_app = ApplicationFactory(slug="keeps-all")  # no retention: never purged
    ancient = _aged(FlagFactory(application=keeper_app), 4000)
    old_export = flags_export_file(application=application, filters=APPROVED, out=tmp_path / "all.jsonl")
    events_before = FlagEvent.objects.filter(flag=old).count()
    assert events_before and FlagReview.objects.filter(flag=old).count() == 1

    reports = {r.application.slug: r for r in flags_purge_expired(requested_by="cron")}
    assert set(reports) == {"acme"} and reports["acme"].flags_deleted == 1
    assert not Flag.objects.filter(pk=old.pk).exists()
    assert not FlagEvent.objects.filter(flag_id=old.pk).exists()
    assert not FlagReview.objects.filter(flag_id=old.pk).exists()
    assert Flag.objects.filter(pk__in=[young.pk, ancient.pk]).count() == 2
    record = reports["acme"].record
    assert (record.kind, record.requested_by, record.events_deleted, record.reviews_deleted) == (
        "retention", "cron", events_before, 1,
    )
    assert record.stale_exports == [str((tmp_path / "all.jsonl").resolve())]
    old_export.refresh_from_db()
    assert old_export.is_stale and old_export.stale_reason == f"retention purge #{record.pk}"

    # Again (cron): nothing expired, nothing recorded.
    again = flags_purge_expired(requested_by="cron")
    assert again[0].flags_deleted == 0 and again[0].record is None
    assert ErasureRecord.objects.count() == 1


def test_purge_works_through_many_batches(application):
    application.retention_days = 1
    application.save()
    for _ in range(7):
        _aged(FlagFactory(application=application), 3)
    report = flags_purge_expired(batch_size=3)[0]
    assert report.flags_deleted == 7 and report.record.events_deleted == 0
    assert not Flag.objects.filter(application=application).exists()


def test_erasure_removes_the_subject_everywhere_and_records_it_without_content(
    application, curator, tmp_path
):
    gone = approve(FlagFactory(application=application, session_id="sess_erase"), curator)
    also_gone = FlagFactory(application=application, session_id="sess_erase", region="prompt")
    stays = approve(FlagFactory(application=application, session_id="sess_other"), curator)
    other_app = ApplicationFactory(slug="other")
    same_session_elsewhere = FlagFactory(application=other_app, session_id="sess_erase")
    holding = flags_export_file(application=application, filters=APPROVED, out=tmp_path / "with.jsonl")
    Flag.objects.filter(pk=gone.pk).update(status="rejected", axis="", verdict="")  # not in the next one
    clean = flags_export_file(application=application, filters=APPROVED, out=tmp_path / "without.jsonl")

    events_before = FlagEvent.objects.filter(flag__in=[gone, also_gone]).count()
    assert events_before == 1  # the approval of `gone`
    bank_calls = []
    installed = list(services._erasure_hooks)  # the exemplar bank's hook stays registered after this test
    register_erasure_hook(lambda *, application, flag_pks: bank_calls.append(sorted(flag_pks)) or 1)
    try:
        record = subject_erase(application=application, session_id="sess_erase", requested_by="dpo@acme")
    finally:
        services._erasure_hooks[:] = installed

    assert not Flag.objects.filter(pk__in=[gone.pk, also_gone.pk]).exists()
    assert not FlagEvent.objects.filter(flag_id__in=[gone.pk, also_gone.pk]).exists()
    assert Flag.objects.filter(pk__in=[stays.pk, same_session_elsewhere.pk]).count() == 2
    assert bank_calls == [sorted([gone.pk, also_gone.pk])]
    assert (record.flags_deleted, record.events_deleted, record.reviews_deleted, record.bank_entries_removed) == (
        2, events_before, 1, 1,
    )
    assert record.requested_by == "dpo@acme" and record.kind == "session_id"
    assert record.subject_digest == subject_digest(application=application, kind="session_id", value="sess_erase")
    assert "sess_erase" not in json.dumps(list(ErasureRecord.objects.values()), default=str)
    holding.refresh_from_db()
    clean.refresh_from_db()
    assert holding.is_stale and holding.stale_reason == f"erasure #{record.pk}"
    assert not clean.is_stale
    assert record.stale_exports == [str((tmp_path / "with.jsonl").resolve())]


def test_erasure_by_end_user_ref(application, curator):
    FlagFactory(application=application, end_user_ref="user-123")
    record = subject_erase(application=application, end_user_ref="user-123", requested_by="ops")
    assert record.kind == "end_user_ref" and record.flags_deleted == 1
    # Nothing of the subject left: erasing again finds nothing, and says so.
    assert subject_erase(application=application, end_user_ref="user-123", requested_by="ops").flags_deleted == 0


@pytest.mark.parametrize(
    "subject",
    [{}, {"session_id": "s", "end_user_ref": "u"}, {"session_id": ""}],
)
def test_erasure_needs_exactly_one_subject_and_writes_nothing_otherwise(application, subject):
    FlagFactory(application=application, session_id="s", end_user_ref="u")
    with pytest.raises(InvalidInput):
        subject_erase(application=application, requested_by="ops", **subject)
    assert Flag.objects.count() == 1 and not ErasureRecord.objects.exists()


NASTY = 'quote " backslash \\ newline\n tab\t cr\r ctl \x01\x1f\x7f </script> é 漢字 😀 \u2028 {"a":1}'


def test_the_database_builds_byte_for_byte_the_reference_lines(application, curator):
    """SQLite's json_object / PostgreSQL's row_to_json against feedback.exports.encode_row."""
    from datetime import UTC, datetime

    from feedback.exports import EXPORT_COLUMNS, encode_row
    from feedback.selectors import flag_export_batches

    approve(FlagFactory(application=application, prompt=NASTY, context=NASTY, answer=NASTY, note=NASTY), curator)
    approve(FlagFactory(application=application, region="prompt"), curator, verdict="false_positive")
    FlagFactory(application=application, axis="", note="")  # pending, no axis yet: nulls
    CaptureFactory(application=application, answer=NASTY)  # no problem, automated source
    odd = FlagFactory(application=application)
    # Microseconds just under the next second must not round up.
    Flag.objects.filter(pk=odd.pk).update(created_at=datetime(2026, 6, 26, 10, 14, 33, 999999, tzinfo=UTC))

    everything = FlagFilters()
    built = {
        pk: bytes(line).decode() if not isinstance(line, str) else line
        for batch in flag_export_batches(application=application, filters=everything)
        for pk, _, _, line in batch
    }
    reference = {
        row[0]: encode_row(row, application_id="acme")
        for row in Flag.objects.filter(application=application).values_list(*EXPORT_COLUMNS)
    }
    assert len(built) == 5
    assert built == reference
    assert json.loads(built[odd.pk])["created_at"] == "2026-06-26T10:14:33+00:00"


def test_an_export_abandoned_after_its_first_batch_leaves_the_connection_usable(application, curator):
    """A client that drops a streamed download closes the generator mid-stream
    (PostgreSQL: mid-COPY); the next query on the same connection must work."""
    from feedback.selectors import flag_export_batches

    for _ in range(5):
        approve(FlagFactory(application=application), curator)
    batches = flag_export_batches(application=application, filters=FlagFilters(), chunk_size=2)
    first = next(batches)
    batches.close()
    assert len(first) == 2
    assert Flag.objects.filter(application=application).count() == 5
    again = [row for batch in flag_export_batches(application=application, filters=FlagFilters())
             for row in batch]
    assert len(again) == 5
    if connection.vendor == "postgresql":
        # The export turns sorting off for its own statement only.
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('enable_sort')")
            assert cursor.fetchone()[0] == "on"
