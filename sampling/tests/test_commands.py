"""sample_cases and compare_sampling."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from adjudication.models import QueueEntry
from consoles.tests.factories import UserFactory
from sampling.models import SamplingPlan

from .factories import give_gold_label, make_case

pytestmark = pytest.mark.django_db


def run(name: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_sample_cases_prints_the_same_bytes_for_an_unchanged_corpus(corpus):
    first, _ = run("sample_cases", "--application", "acme", "--budget", "5")
    second, _ = run("sample_cases", "--application", "acme", "--budget", "5")
    assert first == second
    lines = first.splitlines()
    assert lines[0].startswith("plan ") and "budget 5  max per pattern 2" in lines[0]
    assert "selected 5; the cap left out 1" in lines[2]
    assert lines[3].split()[:2] == ["1", "loud"]
    assert SamplingPlan.objects.count() == 1 and SamplingPlan.objects.get().created_by is None


def test_sample_cases_json_is_the_canonical_plan(corpus):
    out, _ = run("sample_cases", "--application", "acme", "--budget", "3", "--max-per-pattern", "1", "--json")
    plan = SamplingPlan.objects.get()
    assert out == plan.canonical_json + "\n"
    body = json.loads(out)
    assert [s["case_id"] for s in body["selections"]] == ["loud", "dup-1", "quiet-1"]


def test_sample_cases_enqueue_reports_on_stderr_and_is_idempotent(corpus):
    out1, err1 = run("sample_cases", "--application", "acme", "--budget", "3", "--enqueue")
    out2, err2 = run("sample_cases", "--application", "acme", "--budget", "3", "--enqueue")
    assert out1 == out2
    assert "3 cases queued." in err1 and "already enqueued on " in err2 and "by a command;" in err2
    assert QueueEntry.objects.filter(state="open").count() == 3
    assert set(QueueEntry.objects.values_list("created_by", flat=True)) == {None}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--application", "nope", "--budget", "3"], "Unknown application 'nope'"),
        # The refused field is named on the line, not only "not valid".
        (["--application", "acme", "--budget", "0"], "not valid. budget: must be a whole number from 1 to"),
        (["--application", "acme", "--budget", "3", "--max-per-pattern", "0"], "max_per_pattern: must be a whole"),
    ],
)
def test_sample_cases_bad_input_is_one_line_and_exit_2(corpus, args, message):
    with pytest.raises(CommandError) as exc:
        run("sample_cases", *args)
    assert exc.value.returncode == 2 and message in str(exc.value)
    assert SamplingPlan.objects.count() == 0


def test_compare_sampling_below_twenty_gold_labels(corpus):
    give_gold_label(corpus["loud"], "unreliable")
    out, _ = run("compare_sampling", "--application", "acme", "--budget", "5", "--seed", "1")
    assert out.strip() == "not enough gold labels (1/20)"


def _labelled_corpus(application) -> None:
    reviewer = UserFactory(username="rex")
    for i in range(8):
        give_gold_label(make_case(application, f"hot-{i:02}", evidence="conflict"), "contradicted", reviewer)
    for i in range(24):
        give_gold_label(make_case(application, f"calm-{i:02}"), "reliable", reviewer)


def test_compare_sampling_on_a_known_corpus(application):
    _labelled_corpus(application)
    out, _ = run("compare_sampling", "--application", "acme", "--budget", "8", "--seed", "11", "--draws", "500")
    assert "policy top 8: 1.000 (8 of 8)" in out
    assert "the policy finds more human-changed answers than random draws" in out
    again, _ = run("compare_sampling", "--application", "acme", "--budget", "8", "--seed", "11", "--draws", "500")
    assert again == out


def test_compare_sampling_json(application):
    _labelled_corpus(application)
    out, _ = run("compare_sampling", "--application", "acme", "--budget", "8", "--seed", "11",
                 "--draws", "200", "--json")
    body = json.loads(out)
    assert body["labelled_count"] == 32 and body["policy_share"] == 1.0
    assert body["base_rate"] == 0.25 and 0.15 < body["random_mean"] < 0.35


def test_compare_sampling_refuses_a_budget_as_large_as_the_labelled_set(application):
    _labelled_corpus(application)
    with pytest.raises(CommandError) as exc:
        run("compare_sampling", "--application", "acme", "--budget", "32", "--seed", "1")
    assert exc.value.returncode == 2 and "smaller than the 32" in str(exc.value)


def test_compare_sampling_refuses_a_seed_the_screen_refuses(application):
    with pytest.raises(CommandError) as exc:
        run("compare_sampling", "--application", "acme", "--budget", "5", "--seed", "-1")
    assert exc.value.returncode == 2 and "seed: must be from 0 to 2147483647" in str(exc.value)
