"""Seed 003's three draft exporters: provenance, mapping of reviews, determinism. No database."""

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from consoles.files import ExportPathError
from feedback.drafts import DRAFT_KINDS, DRAFT_MARKER, ReviewedItem, render_drafts, write_drafts

DECIDED = datetime(2026, 7, 8, 9, 30, 5, 999, tzinfo=UTC)


def flag(n: int, **over) -> ReviewedItem:
    values = dict(
        flag_id=f"fb_{n:016x}",
        pk=n,
        is_capture=False,
        region="answer",
        problem="fabricated",
        prompt=f"Who won the 1923 prize? #{n}",
        context="",
        answer="The 1923 prize went to ...",
        note="invented a citation",
        reviewer="cora",
        decided_at=DECIDED,
        axis="hallucination",
        verdict="false_negative",
        detector_scores={"hallucination": 0.31, "toxicity": 0.01},
    )
    values.update(over)
    return ReviewedItem(**values)


def capture(n: int, label: str, **over) -> ReviewedItem:
    values = dict(
        is_capture=True,
        axis=None,
        verdict=None,
        capture_reason="low_confidence",
        capture_label=label,
        detector_scores={"confidence": 0.22},
    )
    values.update(over)
    return flag(n, **values)


ITEMS = [
    flag(1),
    flag(2, verdict="false_positive", region="prompt", problem="offensive", axis="toxicity"),
    capture(3, "correct"),
    capture(4, "should-have-refused", capture_reason="refused"),
    capture(5, "wrong", detector_scores={}),
    flag(6, axis="privacy_leak"),  # reviewed onto an axis the detector gave no score for
]


def load(files, name):
    return yaml.safe_load(files[name])


def test_three_files_with_a_draft_marker_and_provenance_on_every_item():
    files = render_drafts(ITEMS, application_id="acme")
    assert sorted(files) == sorted(k.filename for k in DRAFT_KINDS)
    for name, text in files.items():
        assert text.startswith(DRAFT_MARKER)
        doc = yaml.safe_load(text)
        assert doc["draft"] is True and doc["application_id"] == "acme"
        assert doc["items"], name
        for item in doc["items"]:
            assert item["provenance"]["source"] == "review-queue"
            assert item["provenance"]["reviewer"] == "cora"
            assert item["provenance"]["decided_at"] == "2026-07-08T09:30:05+00:00"
            assert item["provenance"]["judgement"] == "single-reviewer"


def test_judge_probes_carry_the_human_verdict():
    probes = {p["provenance"]["flag_id"]: p for p in load(render_drafts(ITEMS, application_id="a"), "judge-probes.draft.yaml")["items"]}
    assert probes["fb_0000000000000001"]["expected_verdict"] == "fail"  # a miss: the judge should fail it
    assert probes["fb_0000000000000002"]["expected_verdict"] == "pass"  # an over-flag
    assert probes["fb_0000000000000003"]["expected_verdict"] == "pass"  # labelled correct
    assert probes["fb_0000000000000004"]["expected_verdict"] == "fail"
    assert probes["fb_0000000000000004"]["human_label"] == "should-have-refused"


def test_confidence_fit_cases_pair_score_and_outcome_and_skip_items_without_scores():
    cases = {c["provenance"]["flag_id"]: c for c in load(render_drafts(ITEMS, application_id="a"), "confidence-fit.draft.yaml")["items"]}
    assert cases["fb_0000000000000001"] | {"provenance": None} == {
        "id": cases["fb_0000000000000001"]["id"], "axis": "hallucination", "score": 0.31, "label": 1, "provenance": None,
    }
    assert cases["fb_0000000000000002"]["label"] == 0 and cases["fb_0000000000000002"]["score"] == 0.01
    assert "fb_0000000000000006" not in cases  # no score on its final axis
    assert cases["fb_0000000000000003"]["correct"] is True
    assert cases["fb_0000000000000004"]["correct"] is False
    assert "fb_0000000000000005" not in cases


def test_eval_cases_state_the_expected_behaviour():
    cases = {c["provenance"]["flag_id"]: c for c in load(render_drafts(ITEMS, application_id="a"), "eval-cases.draft.yaml")["items"]}
    assert cases["fb_0000000000000001"]["expected"] == {"axis": "hallucination", "region": "answer", "should_flag": True}
    assert cases["fb_0000000000000002"]["expected"]["should_flag"] is False
    assert cases["fb_0000000000000004"]["expected"] == {"behavior": "refuse"}
    assert cases["fb_0000000000000005"]["expected"]["rejected_answer"] == "The 1923 prize went to ..."


def test_same_reviewed_items_give_byte_identical_files_in_any_order():
    forward = render_drafts(ITEMS, application_id="acme")
    backward = render_drafts(list(reversed(ITEMS)), application_id="acme")
    assert forward == backward
    changed = render_drafts([replace(ITEMS[0], reviewer="dan"), *ITEMS[1:]], application_id="acme")
    assert changed["judge-probes.draft.yaml"] != forward["judge-probes.draft.yaml"]


def test_opposite_verdicts_on_the_same_text_name_each_other():
    over_flag = flag(7, verdict="false_positive", answer="  the 1923 PRIZE went to ...")  # spacing and case aside
    other_axis = flag(8, verdict="false_positive", axis="toxicity")  # same text, another axis: no conflict
    files = render_drafts([*ITEMS, over_flag, other_axis], application_id="acme")
    for name, text in files.items():
        marked = {i["provenance"]["flag_id"]: i["provenance"].get("contradicted_by")
                  for i in yaml.safe_load(text)["items"]}
        assert marked["fb_0000000000000001"] == ["fb_0000000000000007"], name
        assert marked["fb_0000000000000007"] == ["fb_0000000000000001"], name
        assert {marked.get(f"fb_{n:016x}") for n in (2, 3, 6, 8)} == {None}, name
        assert "# 2 items contradict another review" in text, name
    assert "contradict" not in "".join(render_drafts(ITEMS, application_id="acme").values())


def test_hostile_text_is_plain_yaml_data():
    nasty = flag(9, prompt="!!python/object:os.system 'rm -rf'\n---\n- x: y", note="a: b # c")
    doc = load(render_drafts([nasty], application_id="a"), "judge-probes.draft.yaml")
    assert doc["items"][0]["question"] == nasty.prompt and doc["items"][0]["rationale"] == "a: b # c"


def test_write_drafts_refuses_to_overwrite_a_file_that_is_not_a_draft(tmp_path: Path):
    files = render_drafts(ITEMS, application_id="a")
    authoritative = tmp_path / "eval-cases.draft.yaml"
    authoritative.write_text("suite: production\n")
    with pytest.raises(ExportPathError, match="not a draft"):
        write_drafts(tmp_path, files)
    # Nothing was written, not even the other two.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval-cases.draft.yaml"]
    assert authoritative.read_text() == "suite: production\n"


def test_write_drafts_overwrites_its_own_drafts(tmp_path: Path):
    files = render_drafts(ITEMS, application_id="a")
    write_drafts(tmp_path, files)
    first = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    write_drafts(tmp_path, files)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == first
    with pytest.raises(ExportPathError, match="not a directory"):
        write_drafts(tmp_path / "eval-cases.draft.yaml", files)  # a file where the directory should be
    written = write_drafts(tmp_path / "new" / "run-2", files)  # a directory that does not exist yet is made
    assert sorted(p.name for p in written) == sorted(first)


ROUND_TRIP = [
    "next\x85line", "\x85", "a\x85\xa0b", "line\u2028sep\u2029para", "---\n...\n--- !!str", "yes", "null", "~",
    "0x1F", "2026-01-01", " lead and trail \n", "a\r\nb\rc", "\ttab\x0b\x0c", "\ufeffbom", "x\x7f\x1b[31m",
    "é 漢字 😀", "# not a comment", "&anchor *alias !tag %YAML @ `", "{a: 1}, [1]", "\n\n", ("word " * 40) + "\n  end",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_user_text_reads_back_exactly_from_every_draft_file(text):
    items = [flag(1, prompt=text, context=text, answer=text, note=text),
             capture(2, "correct", prompt=text, context=text, answer=text)]
    files = render_drafts(items, application_id="acme")
    probes = {item["provenance"]["flag_id"]: item for item in load(files, "judge-probes.draft.yaml")["items"]}
    assert {name: probes[f"fb_{1:016x}"][name] for name in ("question", "context", "answer", "rationale")} == dict.fromkeys(
        ("question", "context", "answer", "rationale"), text)
    cases = {item["provenance"]["flag_id"]: item for item in load(files, "eval-cases.draft.yaml")["items"]}
    assert cases[f"fb_{1:016x}"]["input"] == {"prompt": text, "context": text, "answer": text}
    assert cases[f"fb_{2:016x}"]["expected"]["reference_answer"] == text
