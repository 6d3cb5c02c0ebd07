"""Times on the sampling screens say UTC, like every other screen; signals read as
words (their keys stay in the plan's JSON and a data attribute)."""

import pytest
from django.urls import reverse

from consoles.timestamps import on_screen
from sampling.services import plan_create, plan_enqueue

from .factories import make_case

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"sampling:{name}", args=["acme", *args])


def test_plan_times_say_utc_in_the_list_and_on_the_plan(client, application, curator, corpus):
    plan, _ = plan_create(application=application, budget=2, actor=curator)
    plan_enqueue(plan=plan, actor=curator)
    plan.refresh_from_db()
    client.force_login(curator)
    html = client.get(url("index")).content.decode()
    assert f">{on_screen(plan.created_at)}</a></td>" in html  # Made, a link to the plan
    assert f">{on_screen(plan.enqueued_at)}</td>" in html
    html = client.get(url("plan", plan.pk)).content.decode()
    assert f"<dt>Made</dt><dd>{on_screen(plan.created_at)} by cora</dd>" in html
    assert f'data-testid="enqueued">{on_screen(plan.enqueued_at)} by cora</dd>' in html


def test_signal_badges_read_as_words(client, application, curator, corpus):
    make_case(application, "scrubbed", sanitized=True, evidence="none")
    plan, _ = plan_create(application=application, budget=3, actor=curator)
    client.force_login(curator)
    html = client.get(url("plan", plan.pk)).content.decode()
    selections = html.split('data-testid="selections"', 1)[1]
    for key, words in [
        ("gap:unresolved_conflict", "gap: unresolved conflict"),
        ("mined:high_uncertainty", "mined: high uncertainty"),
        ("mined:sensor_disagreement", "mined: sensor disagreement"),
        ("gap:no_evidence_at_all", "gap: no evidence at all"),
        ("sanitization_altered_outcome", "sanitization altered outcome"),
    ]:
        assert f'<li class="badge" data-signal="{key}">{words}</li>' in selections
        assert f">{key}<" not in selections
    assert b'"gap:unresolved_conflict"' in client.get(url("plan_json", plan.pk)).content  # the JSON keeps keys


def test_the_comparison_card_shows_the_same_figures_as_its_verdict(client, curator, monkeypatch):
    """0.4115 and 0.5625 sit on a rounding tie: the card's figures and its sentence
    must round them the same way (the sentence says 0.411 and 0.562)."""
    from sampling import views
    from sampling.comparison import Comparison

    result = Comparison(labelled_count=22, budget=16, seed=0, draws=1000, max_per_pattern=2, enough=True,
                        selected_count=16, policy_hits=9, policy_share=0.5625, base_rate=0.409091,
                        random_mean=0.4115, random_low=0.2, random_high=0.6, draws_at_least_policy=0.1)
    monkeypatch.setattr(views, "gold_labelled_count", lambda **kwargs: 22)
    monkeypatch.setattr(views, "sampling_comparison", lambda **kwargs: result)
    client.force_login(curator)
    html = client.get(url("index"), {"budget": 16, "seed": 0, "draws": 1000}).content.decode()
    assert "policy 0.562 vs random mean 0.411" in html
    assert 'data-testid="policy-share">0.562 (9 of 16)' in html
    assert 'data-testid="random-mean">mean 0.411, 95% interval 0.200–0.600' in html
