import io
import json

import pytest
from django.core.management import CommandError, call_command

from teaching.models import Candidate, CorpusEntry, EvalCase, Proposal
from teaching.services import Actor, proposal_create
from teaching.tests.factories import CandidateFactory, candidate_payload

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command("teaching", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def fails(*args) -> str:
    with pytest.raises(CommandError) as exc:
        run(*args)
    assert exc.value.returncode == 2
    return str(exc.value)


def write_jsonl(path, records) -> str:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return str(path)


def test_import_reports_created_and_ineligible_candidates(world, tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [candidate_payload("c-1"), candidate_payload("c-2", evidence=[])])
    out = run("import", path, "--app", "acme")
    assert "Imported 2 candidates (0 already present)." in out
    assert "not eligible: c-2 (failing gates: corpus_evidence)" in out
    assert "Imported 0 candidates (2 already present)." in run("import", path, "--app", "acme")
    # Spelled as the other commands spell it, too.
    assert "Imported 0 candidates (2 already present)." in run("import", path, "--application", "acme")


def test_import_errors_are_one_line_exit_2_and_write_nothing(world, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(candidate_payload("c-1")) + "\n{not json\n")
    assert "line 2: not valid JSON" in fails("import", str(bad), "--app", "acme")
    invalid = write_jsonl(tmp_path / "i.jsonl", [candidate_payload("c-1"), candidate_payload("c-2", polarity="x")])
    assert "line 2:" in fails("import", invalid, "--app", "acme")
    assert "No such file" in fails("import", str(tmp_path / "missing.jsonl"), "--app", "acme")
    assert "Unknown application 'nope'" in fails("import", invalid, "--app", "nope")
    assert not Candidate.objects.filter(candidate_id__in=["c-1", "c-2"]).exists()


def test_import_evals(application, tmp_path):
    row = {"case_id": "e1", "split": "dev", "subject": "a", "intent": "b", "expected_object": "c", "expected_polarity": "affirms"}
    path = write_jsonl(tmp_path / "e.jsonl", [row])
    assert "1 created, 0 updated, 0 unchanged" in run("import-evals", path, "--app", "acme")
    assert json.loads(run("import-evals", path, "--app", "acme", "--json")) == {"created": 0, "updated": 0, "unchanged": 1}
    assert EvalCase.objects.get().split == "dev"


def test_propose_prints_the_id_and_the_gate_outcome(world):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    out = run("propose", "c-1", "--app", "acme")
    proposal = Proposal.objects.get(candidate__candidate_id="c-1")
    assert f"Proposed: {proposal.proposal_id} (pending)" in out and "replay-equivalent" in out
    assert f"Already proposed: {proposal.proposal_id} (pending)" in run("propose", "c-1", "--app", "acme")
    out = run("propose", "c-lyon", "--app", "acme")
    assert "(rejected)" in out and "auto_rollback_regression: lookup.accuracy.public" in out
    as_json = json.loads(run("propose", "c-1", "--app", "acme", "--json"))
    assert as_json["created"] is False and as_json["proposal_id"] == proposal.proposal_id


def test_propose_an_ineligible_candidate_names_the_gate(world):
    CandidateFactory(application=world, candidate_id="c-bad", boundary_clean=False)
    assert "boundary_clean" in fails("propose", "c-bad", "--app", "acme")
    assert "No candidate 'ghost'" in fails("propose", "ghost", "--app", "acme")


def test_proposals_lists_by_state_as_text_and_json(world):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    pending, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    proposal_create(application=world, candidate_id="c-lyon", actor=Actor.system())
    out = run("proposals", "--app", "acme")
    assert pending.proposal_id[:12] in out and "c-lyon" not in out
    rejected = json.loads(run("proposals", "--app", "acme", "--state", "rejected", "--json"))
    assert [p["source_candidate_id"] for p in rejected] == ["c-lyon"]
    assert rejected[0]["replay_evidence"]["replay_equivalent"] is False
    assert "No withdrawn proposals." in run("proposals", "--app", "acme", "--state", "withdrawn")


def test_review_accept_by_prefix_appends_one_entry(world, operator):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    out = run("review", proposal.proposal_id[:12], "--accept", "--operator", "olga", "--note", "ok", "--app", "acme")
    entry = CorpusEntry.objects.get(proposal=proposal)
    assert out.strip() == f"{proposal.proposal_id} accepted by olga; corpus entry {entry.number} appended"
    assert entry.operator.username == "olga" and entry.source == "discovery_promoted"


def test_review_errors(world, operator, viewer):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    pending, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    regressed, _ = proposal_create(application=world, candidate_id="c-lyon", actor=Actor.system())
    assert "not replay-equivalent" in fails("review", regressed.proposal_id, "--accept", "--operator", "olga", "--app", "acme")
    assert "Unknown user 'ghost'" in fails("review", pending.proposal_id, "--reject", "--operator", "ghost", "--app", "acme")
    assert "vic is not a curator" in fails("review", pending.proposal_id, "--reject", "--operator", "vic", "--app", "acme")
    assert "No proposal" in fails("review", "0000000000", "--reject", "--operator", "olga", "--app", "acme")
    with pytest.raises(CommandError):  # the operator is required, and one decision
        run("review", pending.proposal_id, "--reject", "--app", "acme")
    with pytest.raises(CommandError):
        run("review", pending.proposal_id, "--reject", "--accept", "--operator", "olga", "--app", "acme")
    assert CorpusEntry.objects.count() == 2
    assert "withdrawn by olga" in run("review", pending.proposal_id, "--withdraw", "--operator", "olga", "--app", "acme")
    assert "already withdrawn" in fails("review", pending.proposal_id, "--accept", "--operator", "olga", "--app", "acme")


def test_export_and_supersede(world, operator, tmp_path):
    first, second = CorpusEntry.objects.order_by("id")
    out = tmp_path / "corpus.jsonl"
    assert "Wrote 2 active corpus entries" in run("export", "--out", str(out), "--app", "acme")
    assert [json.loads(line)["object"] for line in out.read_text().splitlines()] == ["france", "italy"]
    assert f"Corpus entry {first.number} retired" in run(
        "supersede", str(first.number), "--by", str(second.number), "--operator", "olga", "--app", "acme"
    )
    assert "Wrote 1 active corpus entry to" in run("export", "--out", str(out), "--app", "acme")
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [second.pk]
    missing = fails("export", "--out", str(tmp_path / "no" / "x.jsonl"), "--app", "acme")
    assert missing.endswith("does not exist.") and "out:" not in missing  # said once
    # Only an earlier export is replaced: any other file is refused, one line, untouched.
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    message = fails("export", "--out", str(notes), "--app", "acme")
    assert "is not an export" in message and "\n" not in message.strip()
    assert notes.read_text() == "mine\n"


def test_an_export_that_loses_the_database_is_one_line_exit_1_and_writes_nothing(world, tmp_path, monkeypatch):
    from django.db import DatabaseError

    from teaching import selectors

    def lost(**kwargs):
        raise DatabaseError("server closed the connection unexpectedly\n\tThis probably means ...\n")
        yield

    monkeypatch.setattr(selectors, "corpus_active_jsonl", lost)
    with pytest.raises(CommandError) as exc:
        run("export", "--out", str(tmp_path / "corpus.jsonl"), "--app", "acme")
    assert exc.value.returncode == 1 and "\n" not in str(exc.value)
    assert str(exc.value).endswith("corpus.jsonl: server closed the connection unexpectedly This probably means ...")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("text", "why"), [
    ("tok\x00yo", "line 2: text must not contain NUL (\\u0000)."),  # PostgreSQL cannot store it
    ("tok\ud800yo", "line 2: text must not contain a lone surrogate"),  # no database can
])
def test_import_refuses_text_no_database_can_store_naming_the_line(world, tmp_path, text, why):
    bad = candidate_payload("c-2", proposed_chain={"subject": text, "intent": "capital_of", "connective": "is",
                                                   "object": "japan"})
    path = tmp_path / "c.jsonl"
    # ensure_ascii keeps the lone surrogate an escape, as a JSON writer in another language would.
    path.write_text(json.dumps(candidate_payload("c-1")) + "\n" + json.dumps(bad) + "\n")
    assert why in fails("import", str(path), "--app", "acme")
    assert not Candidate.objects.exists()


def test_import_reads_a_line_separator_inside_a_string_as_text(world, tmp_path):
    """U+2028 is valid inside a JSON string; splitting lines on it refused a valid file."""
    record = candidate_payload("c-1", hedge={"tier": "weak", "surface": "perhaps\u2028so"})
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    assert "Imported 1 candidate" in run("import", str(path), "--app", "acme")
    assert Candidate.objects.get().hedge_surface == "perhaps\u2028so"


def test_import_file_errors_are_one_clear_line(world, tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    assert fails("import", str(deep), "--app", "acme") == "line 1: not valid JSON (nested too deeply)"
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(json.dumps(candidate_payload("c-1", claim_domain="caf\u00e9"), ensure_ascii=False).encode("latin-1"))
    assert fails("import-evals", str(latin1), "--app", "acme").startswith(
        f"Cannot read the file {latin1}: not valid UTF-8 (byte "
    )
    assert fails("import", str(tmp_path), "--app", "acme") == f"Cannot read the file {tmp_path}: Is a directory."
    assert not Candidate.objects.exists()


@pytest.mark.parametrize("args", [["import", ""], ["import-evals", "  "], ["export", "--out", "  "]])
def test_a_blank_path_is_refused(world, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CommandError) as exc:
        run(*args, "--app", "acme")
    assert f"give a path, not {args[-1]!r}" in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_propose_again_says_what_became_of_a_decided_proposal(world, operator):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = proposal_create(application=world, candidate_id="c-1", actor=Actor.system())
    run("review", proposal.proposal_id, "--withdraw", "--operator", "olga", "--app", "acme")
    out = run("propose", "c-1", "--app", "acme")
    assert f"Already proposed: {proposal.proposal_id} (withdrawn)" in out
    assert "replay-equivalent: no metric regressed; it is withdrawn." in out and "waiting" not in out
