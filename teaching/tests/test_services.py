import hashlib
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consoles import files
from consoles.errors import Conflict, InvalidInput, NotFound, PermissionDeniedError
from consoles.files import ExportPathError, read_manifest
from consoles.models import ApiToken, Role
from consoles.tests.factories import ApplicationFactory, MembershipFactory, application_token
from teaching import selectors
from teaching.domain import EventFacts, fold_events, proposal_id_for
from teaching.models import (
    Candidate,
    CorpusEntry,
    EvalCase,
    Proposal,
    ProposalDecision,
    ProposalEvent,
)
from teaching.services import (
    Actor,
    Ineligible,
    candidate_submit,
    candidates_import,
    corpus_export,
    corpus_supersede,
    eval_cases_import,
    proposal_create,
    proposal_decide,
)
from teaching.tests.factories import (
    CandidateFactory,
    CorpusEntryFactory,
    EvalCaseFactory,
    candidate_payload,
)

pytestmark = pytest.mark.django_db
SYSTEM = Actor.system()


def corpus_bytes(application) -> bytes:
    return "".join(selectors.corpus_active_jsonl(application=application)).encode()


def propose(application, candidate_id, **kw):
    return proposal_create(application=application, candidate_id=candidate_id, actor=SYSTEM, **kw)


# --- candidates -----------------------------------------------------------------------


def test_submit_stores_a_candidate_and_is_idempotent_on_identical_content(application):
    candidate, created = candidate_submit(application=application, data=candidate_payload(), actor=SYSTEM)
    assert created and candidate.subject == "tokyo" and candidate.evidence == [{"source": "corpus", "ref": "entry:7"}]
    again, created = candidate_submit(application=application, data=candidate_payload(), actor=SYSTEM)
    assert again.pk == candidate.pk and not created


def test_resubmitting_a_candidate_with_other_content_is_a_conflict_and_changes_nothing(application):
    candidate_submit(application=application, data=candidate_payload(), actor=SYSTEM)
    with pytest.raises(Conflict) as exc:
        candidate_submit(application=application, data=candidate_payload(polarity="falsifies"), actor=SYSTEM)
    assert exc.value.code == "candidate_conflict"
    assert Candidate.objects.get().polarity == "affirms"


def test_invalid_candidate_names_each_bad_field(application):
    bad = candidate_payload(candidate_id="has space", polarity="maybe", boundary_clean="yes", evidence=[{"ref": "x"}])
    bad["proposed_chain"]["subject"] = 7
    with pytest.raises(InvalidInput) as exc:
        candidate_submit(application=application, data=bad, actor=SYSTEM)
    assert set(exc.value.fields) == {
        "candidate_id", "polarity", "boundary_clean", "evidence.0.source", "proposed_chain.subject",
    }
    assert not Candidate.objects.exists()


def test_an_incomplete_or_undetermined_candidate_is_still_stored_as_evidence(application):
    payload = candidate_payload(polarity="undetermined")
    payload["proposed_chain"]["object"] = None
    candidate, created = candidate_submit(application=application, data=payload, actor=SYSTEM)
    assert created and candidate.object == "" and candidate.polarity == "undetermined"


def test_import_is_all_or_nothing_and_names_the_bad_line(application):
    records = [(1, candidate_payload("c-1")), (2, candidate_payload("c-2", polarity="nope"))]
    with pytest.raises(InvalidInput) as exc:
        candidates_import(application=application, records=records, actor=SYSTEM)
    assert exc.value.message.startswith("line 2:") and "polarity" in exc.value.message
    assert not Candidate.objects.exists()


def test_import_reports_ineligible_candidates_by_gate(application):
    result = candidates_import(
        application=application,
        records=[(1, candidate_payload("c-1")), (2, candidate_payload("c-2", boundary_clean=False))],
        actor=SYSTEM,
    )
    assert (result.created, result.unchanged) == (2, 0)
    assert result.ineligible == {"c-2": ["boundary_clean"]}


# --- gates and proposals ----------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides,gate",
    [
        ({"polarity": "undetermined"}, "polarity_decided"),
        ({"evidence": [{"source": "pack", "ref": "p"}]}, "corpus_evidence"),
        ({"claim_domain": "evaluative"}, "evaluative_allowed"),
        ({"boundary_clean": False}, "boundary_clean"),
        ({"connective": ""}, "chain_complete"),
    ],
)
def test_proposing_an_ineligible_candidate_is_refused_naming_the_gate(world, overrides, gate):
    CandidateFactory(application=world, candidate_id="c-bad", **overrides)
    with pytest.raises(Ineligible) as exc:
        propose(world, "c-bad")
    assert exc.value.status == 422 and exc.value.code == "ineligible"
    # The field keeps the gate's key; the message names it in words, as the candidates page does.
    assert exc.value.fields["gates"] == gate and gate.replace("_", " ") in exc.value.message
    assert not Proposal.objects.exists() and not ProposalEvent.objects.exists()
    assert Candidate.objects.filter(candidate_id="c-bad").exists()  # it stays a candidate


def test_evaluative_candidate_with_flag_and_strong_hedge_is_proposed(world):
    CandidateFactory(
        application=world, candidate_id="c-eval", claim_domain="evaluative", hedge_tier="strong",
        hedge_surface="Most travellers would agree",
    )
    with pytest.raises(Ineligible):
        propose(world, "c-eval")
    proposal, created = propose(world, "c-eval", allow_evaluative=True)
    assert created and proposal.allow_evaluative


def test_proposal_id_is_the_content_hash_and_proposing_twice_is_idempotent(world):
    candidate = CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    first, created = propose(world, "c-1")
    assert created and first.proposal_id == proposal_id_for("c-1", candidate.chain)
    second, created = propose(world, "c-1")
    assert not created and second.pk == first.pk
    assert Proposal.objects.count() == 1 and ProposalEvent.objects.count() == 1


def test_unknown_candidate_is_not_found(world):
    with pytest.raises(NotFound):
        propose(world, "nope")


def test_a_replay_equivalent_proposal_stays_pending_with_both_metric_sets(world):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = propose(world, "c-1")
    assert proposal.state == "pending" and proposal.replay_equivalent and proposal.regressed_metrics == []
    assert proposal.baseline["lookup.accuracy.dev"] == 0.0
    assert proposal.candidate_metrics["lookup.accuracy.dev"] == 1.0
    assert proposal.baseline["lookup.accuracy.public"] == proposal.candidate_metrics["lookup.accuracy.public"] == 1.0
    assert list(proposal.events.values_list("kind", flat=True)) == ["proposed"]


def test_a_regression_auto_rejects_with_the_rollback_note(world):
    # A second capital for paris makes the corpus contradict itself on a public case.
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    proposal, _ = propose(world, "c-lyon")
    assert proposal.state == "rejected" and proposal.replay_equivalent is False
    assert proposal.regressed_metrics == ["lookup.accuracy.public", "lookup.precision.public"]
    assert proposal.operator_note == "auto_rollback_regression: lookup.accuracy.public, lookup.precision.public"
    events = list(proposal.events.values_list("kind", "actor_kind", "note"))
    assert events == [("proposed", "system", ""), ("auto_rejected", "system", proposal.operator_note)]
    assert not ProposalDecision.objects.exists()  # the gate is not an operator


@pytest.mark.parametrize("subject,obj", [("tokyo", "japan"), ("paris", "lyon")])
def test_the_gate_never_writes_the_active_corpus(world, subject, obj):
    CandidateFactory(application=world, candidate_id="c-x", subject=subject, object=obj)
    before = corpus_bytes(world)
    with CaptureQueriesContext(connection) as ctx:
        propose(world, "c-x")
    assert corpus_bytes(world) == before  # byte for byte, whatever the outcome
    corpus_table = CorpusEntry._meta.db_table
    writes = [q["sql"] for q in ctx.captured_queries if corpus_table in q["sql"] and not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []  # not even transiently
    assert CorpusEntry.objects.count() == 2


# --- decisions ---------------------------------------------------------------------------


def test_accept_appends_exactly_one_corpus_entry_with_provenance(world, operator):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = propose(world, "c-1")
    proposal = proposal_decide(
        application=world, proposal_id=proposal.proposal_id, decision="accept", operator=operator, note="checked atlas"
    )
    assert proposal.state == "accepted" and proposal.operator_note == "checked atlas"
    assert CorpusEntry.objects.count() == 3
    entry = CorpusEntry.objects.get(proposal=proposal)
    assert (entry.subject, entry.intent, entry.connective, entry.object, entry.polarity) == (
        "tokyo", "capital_of", "is", "japan", "affirms",
    )
    assert entry.source == "discovery_promoted" and entry.adr_id == "adr-0057"
    assert entry.operator == operator and entry.decision.decision == "accept"
    assert entry.decision.operator == operator and entry.review_date is not None
    record = json.loads(corpus_bytes(world).decode().splitlines()[-1])
    assert record["provenance"] == {
        "source": "discovery_promoted", "adr_id": "adr-0057", "proposal_id": proposal.proposal_id,
        "decision": "accept", "operator": "olga", "review_date": entry.review_date.isoformat(),
    }
    assert list(proposal.events.values_list("kind", flat=True)) == ["proposed", "accepted"]


def test_accept_is_refused_when_not_replay_equivalent_and_nothing_is_written(world, operator):
    CandidateFactory(application=world, candidate_id="c-lyon", subject="paris", object="lyon")
    proposal, _ = propose(world, "c-lyon")
    before = corpus_bytes(world)
    with pytest.raises(InvalidInput) as exc:
        proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="accept", operator=operator)
    assert exc.value.code == "not_replay_equivalent" and "not replay-equivalent" in exc.value.message
    assert corpus_bytes(world) == before and not ProposalDecision.objects.exists()
    assert proposal.events.count() == 2


def test_accept_is_refused_when_the_corpus_changed_since_the_gate(application, operator):
    # Proposed while nothing covered "tokyo"; an eval case added later shows it is wrong.
    EvalCaseFactory(application=application, case_id="e-dev", split="dev", subject="x", expected_object="y")
    CandidateFactory(application=application, candidate_id="c-edo", subject="tokyo", object="edo")
    proposal, _ = propose(application, "c-edo")
    assert proposal.state == "pending"
    EvalCaseFactory(application=application, case_id="e-tokyo", split="dev", subject="tokyo", expected_object="japan")
    with pytest.raises(InvalidInput) as exc:
        proposal_decide(application=application, proposal_id=proposal.proposal_id, decision="accept", operator=operator)
    assert exc.value.code == "not_replay_equivalent" and "corpus changed" in exc.value.message
    assert not CorpusEntry.objects.exists()
    proposal.refresh_from_db()
    assert proposal.state == "pending"


@pytest.mark.parametrize("decision,state", [("reject", "rejected"), ("withdraw", "withdrawn")])
def test_reject_and_withdraw_change_state_only(world, operator, decision, state):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = propose(world, "c-1")
    before = corpus_bytes(world)
    proposal = proposal_decide(application=world, proposal_id=proposal.proposal_id, decision=decision, operator=operator, note="n")
    assert proposal.state == state and corpus_bytes(world) == before
    assert ProposalDecision.objects.get(proposal=proposal).operator == operator
    assert proposal.events.last().kind == state


def test_a_decision_is_final(world, operator):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = propose(world, "c-1")
    proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="reject", operator=operator)
    with pytest.raises(Conflict) as exc:
        proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="accept", operator=operator)
    assert exc.value.current == {"state": "rejected"}
    assert CorpusEntry.objects.count() == 2


def test_only_a_curator_of_the_application_can_decide(world, viewer):
    CandidateFactory(application=world, candidate_id="c-1", subject="tokyo", object="japan")
    proposal, _ = propose(world, "c-1")
    outsider = MembershipFactory(application=ApplicationFactory(), role=Role.ADMIN).user
    for user in (viewer, outsider):
        with pytest.raises(PermissionDeniedError):
            proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="reject", operator=user)
    assert Proposal.objects.get().state == "pending"


def test_a_proposal_of_another_application_cannot_be_decided(world, operator):
    other = ApplicationFactory()
    CandidateFactory(application=other, candidate_id="c-1")
    proposal, _ = propose(other, "c-1")
    with pytest.raises(NotFound):
        proposal_decide(application=world, proposal_id=proposal.proposal_id, decision="reject", operator=operator)


def test_replaying_the_event_log_reconstructs_every_proposal_state(world, operator):
    for i, (subject, obj) in enumerate(
        [("tokyo", "japan"), ("paris", "lyon"), ("oslo", "norway"), ("lima", "peru"), ("bern", "swiss")]
    ):
        CandidateFactory(application=world, candidate_id=f"c-{i}", subject=subject, object=obj)
        propose(world, f"c-{i}")
    pending = list(Proposal.objects.filter(state="pending").order_by("id"))
    proposal_decide(application=world, proposal_id=pending[0].proposal_id, decision="accept", operator=operator)
    proposal_decide(application=world, proposal_id=pending[1].proposal_id, decision="reject", operator=operator)
    proposal_decide(application=world, proposal_id=pending[2].proposal_id, decision="withdraw", operator=operator)
    events = selectors.proposal_event_list(application=world)
    log = fold_events(EventFacts(e.proposal.proposal_id, e.kind, e.from_state, e.to_state) for e in events)
    stored = dict(Proposal.objects.values_list("proposal_id", "state"))
    assert log.errors == [] and log.states == stored
    assert set(stored.values()) == {"accepted", "rejected", "withdrawn", "pending"}


# --- corpus: supersession and export ------------------------------------------------------


def test_supersession_retires_an_entry_without_rewriting_it(world, operator):
    old, new = CorpusEntry.objects.order_by("id")
    snapshot = CorpusEntry.objects.filter(pk=old.pk).values().get()
    corpus_supersede(application=world, entry_number=old.number, superseded_by_number=new.number, operator=operator, note="dup")
    assert [e.pk for e in selectors.corpus_active(application=world)] == [new.pk]
    assert CorpusEntry.objects.filter(pk=old.pk).values().get() == snapshot
    with pytest.raises(Conflict):
        corpus_supersede(application=world, entry_number=old.number, superseded_by_number=new.number, operator=operator)
    with pytest.raises(InvalidInput):
        corpus_supersede(application=world, entry_number=new.number, superseded_by_number=old.number, operator=operator)
    with pytest.raises(InvalidInput):
        corpus_supersede(application=world, entry_number=new.number, superseded_by_number=new.number, operator=operator)


def test_supersession_is_sealed_per_application(world, operator):
    mine = CorpusEntry.objects.filter(application=world).first()
    other = ApplicationFactory()
    for _ in range(CorpusEntry.objects.filter(application=world).count() + 1):
        foreign = CorpusEntryFactory(application=other)  # numbered past the world's last entry
    with pytest.raises(NotFound):
        corpus_supersede(application=world, entry_number=mine.number, superseded_by_number=foreign.number,
                         operator=operator)


def test_export_writes_the_active_corpus_atomically_with_its_manifest(world, operator, tmp_path):
    out = tmp_path / "corpus.jsonl"
    assert corpus_export(application=world, out=out) == 2
    assert out.read_bytes() == corpus_bytes(world)
    manifest = read_manifest(out)
    assert manifest["kind"] == "teaching_corpus"
    assert manifest["application"] == world.slug
    assert manifest["entries"] == 2
    assert manifest["sha256"] == hashlib.sha256(corpus_bytes(world)).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "corpus.jsonl.manifest.json"]  # no temp file
    assert out.stat().st_mode & 0o777 == 0o600  # end users' text: owner-readable only
    # An earlier export is replaced whole.
    first, second = CorpusEntry.objects.filter(application=world).order_by("id")
    corpus_supersede(application=world, entry_number=first.number, superseded_by_number=second.number, operator=operator)
    assert corpus_export(application=world, out=out) == 1
    assert out.read_bytes() == corpus_bytes(world)
    assert read_manifest(out)["entries"] == 1


def test_export_never_stands_without_its_manifest(world, operator, tmp_path, monkeypatch):
    out = tmp_path / "corpus.jsonl"
    corpus_export(application=world, out=out)
    before = out.read_bytes()
    first, second = CorpusEntry.objects.filter(application=world).order_by("id")
    corpus_supersede(application=world, entry_number=first.number, superseded_by_number=second.number, operator=operator)

    def full_disk(path, manifest):
        raise ExportPathError("Cannot write the manifest: No space left on device.")

    monkeypatch.setattr(files, "write_manifest", full_disk)
    with pytest.raises(ExportPathError):
        corpus_export(application=world, out=out)
    assert out.read_bytes() == before and read_manifest(out)["entries"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "corpus.jsonl.manifest.json"]


def test_export_never_overwrites_a_file_that_is_not_an_export(world, tmp_path):
    precious = tmp_path / "settings.py"
    precious.write_text("SECRET = 1\n")
    with pytest.raises(ExportPathError, match="is not an export"):
        corpus_export(application=world, out=precious)
    assert precious.read_text() == "SECRET = 1\n"
    link = tmp_path / "corpus.jsonl"
    link.symlink_to(precious)
    with pytest.raises(ExportPathError, match="symbolic link"):
        corpus_export(application=world, out=link)
    assert precious.read_text() == "SECRET = 1\n"
    with pytest.raises(ExportPathError, match="does not exist"):
        corpus_export(application=world, out=tmp_path / "missing" / "x.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "settings.py"]


# --- eval cases -----------------------------------------------------------------------------


def test_eval_cases_import_creates_updates_and_refuses_bad_lines(application):
    row = {"case_id": "e1", "split": "public", "subject": "a", "intent": "b", "expected_object": "c", "expected_polarity": "affirms"}
    result = eval_cases_import(application=application, records=[(1, row)])
    assert result.created == 1
    result = eval_cases_import(application=application, records=[(1, row), (2, {**row, "case_id": "e2"})])
    assert (result.created, result.unchanged) == (1, 1)
    result = eval_cases_import(application=application, records=[(1, {**row, "split": "dev"})])
    assert result.updated == 1 and EvalCase.objects.get(case_id="e1").split == "dev"
    with pytest.raises(InvalidInput) as exc:
        eval_cases_import(application=application, records=[(1, {**row, "case_id": "e3"}), (2, {**row, "split": "train"})])
    assert "line 2" in exc.value.message and "line 2.split" in exc.value.fields
    assert not EvalCase.objects.filter(case_id="e3").exists()


def test_token_actor_is_recorded_for_a_candidate(application):
    application_token(application)
    token = ApiToken.objects.get()
    candidate, _ = candidate_submit(
        application=application, data=candidate_payload(), actor=Actor(kind="token", token=token)
    )
    assert candidate.actor_token == token and candidate.actor_user is None
