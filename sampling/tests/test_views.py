"""The sampling screens."""

import pytest
from django.urls import reverse

from adjudication.models import QueueEntry
from consoles.tables import MAX_PER_PAGE
from consoles.testing import assert_sealed
from consoles.tests.factories import UserFactory
from sampling.models import SamplingPlan
from sampling.services import plan_create

from .factories import give_gold_label, make_case

pytestmark = pytest.mark.django_db


def url(name: str, *args) -> str:
    return reverse(f"sampling:{name}", args=["acme", *args])


def test_index_lists_plans_for_a_viewer_in_few_queries(client, viewer, curator, corpus, django_assert_max_num_queries):
    for budget in (1, 2, 3):
        plan_create(application=viewer.memberships.get().application, budget=budget, actor=curator)
    client.force_login(viewer)
    with django_assert_max_num_queries(10):
        response = client.get(url("index"))
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count('href="/a/acme/sampling/plans/') == 3
    assert "New plan" not in html  # a viewer cannot make one


def test_index_pages_plans_within_bounds_whatever_the_url_asks(client, application, curator, corpus):
    """`?per_page=` is read from the URL: a huge one must not list every plan in one
    response, and a negative one is not a server error."""
    plan, _ = plan_create(application=application, budget=1, actor=curator)
    fields = {f.attname: getattr(plan, f.attname) for f in SamplingPlan._meta.concrete_fields if not f.primary_key}
    SamplingPlan.objects.bulk_create(
        SamplingPlan(**{**fields, "plan_digest": f"{i:064x}"}) for i in range(MAX_PER_PAGE + 10)
    )
    client.force_login(curator)
    html = client.get(url("index"), {"per_page": 10**9}).content.decode()
    assert html.count('href="/a/acme/sampling/plans/') == MAX_PER_PAGE
    response = client.get(url("index"), {"per_page": -1})
    assert response.status_code == 200 and response.content.decode().count('href="/a/acme/sampling/plans/') == 1


def test_index_says_when_there_are_not_enough_gold_labels(client, curator, corpus):
    give_gold_label(corpus["loud"], "unreliable")
    client.force_login(curator)
    html = client.get(url("index"), {"budget": 5, "seed": 1, "draws": 10}).content.decode()
    assert "not enough gold labels (1/20)" in html
    assert 'data-testid="comparison-result"' not in html


def test_the_comparison_card_computes_once_twenty_cases_have_gold_labels(client, application, curator):
    reviewer = UserFactory(username="rex")
    # 10 signalled cases whose verdict a human overturned, 15 routine confirmed ones.
    for i in range(10):
        case = make_case(application, f"hot-{i:02}", evidence="conflict")
        give_gold_label(case, "unreliable", reviewer)
    for i in range(15):
        give_gold_label(make_case(application, f"calm-{i:02}"), "reliable", reviewer)
    client.force_login(curator)
    response = client.get(url("index"), {"budget": 10, "seed": 3, "draws": 500}, HTTP_HX_REQUEST="true",
                          HTTP_HX_TARGET="comparison")
    html = response.content.decode()
    assert "<html" not in html  # the partial only
    assert 'data-testid="policy-share">1.000 (10 of 10)' in html
    assert "the policy finds more human-changed answers than random draws" in html.lower()


def test_a_too_large_comparison_budget_is_a_form_error(client, application, curator):
    for i in range(20):
        give_gold_label(make_case(application, f"c-{i:02}"), "reliable", UserFactory(username="rex"))
    client.force_login(curator)
    html = client.get(url("index"), {"budget": 20, "seed": 1, "draws": 10}).content.decode()
    assert "smaller than the 20 gold-labelled cases" in html


def test_a_viewer_cannot_open_the_new_plan_form(client, viewer):
    client.force_login(viewer)
    assert client.get(url("plan_new")).status_code == 403


def test_preview_shows_the_selection_and_stores_nothing(client, curator, corpus):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 5, "max_per_pattern": 2, "preview": "1"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "5 of 6 cases selected (4 with a signal); the cap of 2 per pattern left out 1" in html
    assert "Needs a human (3 signals)" in html
    assert SamplingPlan.objects.count() == 0


def test_htmx_preview_returns_the_partial(client, curator, corpus):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 2, "max_per_pattern": 2, "preview": "1"},
                           HTTP_HX_REQUEST="true", HTTP_HX_TARGET="preview")
    html = response.content.decode()
    assert "<html" not in html and "2 of 6 cases selected" in html


def test_make_plan_stores_it_and_goes_to_its_page(client, curator, corpus):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 5, "max_per_pattern": 2, "create": "1"})
    plan = SamplingPlan.objects.get()
    assert response.status_code == 302 and response.url == url("plan", plan.pk)
    assert plan.created_by == curator


def test_bad_form_input_shows_errors_and_writes_nothing(client, curator, corpus):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 0, "max_per_pattern": "x", "create": "1"})
    assert response.status_code == 200
    assert response.context["form"].errors.keys() == {"budget", "max_per_pattern"}
    assert SamplingPlan.objects.count() == 0
    html = response.content.decode()
    assert html.count("Enter a whole number.") == 1  # beside its field, not again under the form


def test_htmx_preview_lists_the_errors_in_the_swapped_region(client, curator, corpus):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 0, "max_per_pattern": 2, "preview": "1"},
                           HTTP_HX_REQUEST="true", HTTP_HX_TARGET="preview")
    html = response.content.decode()
    assert "<html" not in html and 'role="alert"' in html and "Budget:" in html


def test_an_empty_corpus_is_a_form_error(client, curator):
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 5, "max_per_pattern": 2, "create": "1"})
    assert "no case without a gold label" in response.content.decode()


def test_plan_page_shows_reasons_and_the_caps_effect_in_few_queries(
    client, application, viewer, curator, corpus, django_assert_max_num_queries
):
    for i in range(40):
        make_case(application, f"more-{i:02}", subject="same", mined_by=("high_uncertainty",))
    plan, _ = plan_create(application=application, budget=30, actor=curator)
    client.force_login(viewer)
    with django_assert_max_num_queries(10):
        response = client.get(url("plan", plan.pk))
    html = response.content.decode()
    assert html.count("Needs a human (") == 5  # loud, dup-1, dup-2, more-00, more-01
    assert "left out 39 cases" in html
    assert "Enqueue</button>" not in html  # viewers cannot enqueue
    first = plan.selections.get(rank=1)
    assert f'<a href="/a/acme/cases/{first.case_id}/">{first.case_ref}</a>' in html  # each selection opens its case


def test_enqueue_button_queues_the_plan_once(client, application, curator, corpus):
    plan, _ = plan_create(application=application, budget=3, actor=curator)
    client.force_login(curator)
    response = client.post(url("plan_enqueue", plan.pk), follow=True)
    html = response.content.decode()
    assert "3 cases queued." in html
    assert QueueEntry.objects.count() == 3
    response = client.post(url("plan_enqueue", plan.pk), follow=True)
    assert QueueEntry.objects.count() == 3
    plan.refresh_from_db()
    assert (f"This plan was already enqueued on {plan.enqueued_at:%Y-%m-%d %H:%M} UTC by {curator.username}; "
            "nothing was queued twice.") in response.content.decode()


def test_making_an_identical_plan_says_when_and_by_whom_it_was_made(client, application, curator, corpus):
    plan, _ = plan_create(application=application, budget=3, max_per_pattern=2, actor=None)
    client.force_login(curator)
    response = client.post(url("plan_new"), {"budget": 3, "max_per_pattern": 2, "create": "1"}, follow=True)
    assert SamplingPlan.objects.get() == plan
    assert (f"An identical plan was made on {plan.created_at:%Y-%m-%d %H:%M} UTC by a command, and nothing has "
            "changed since: here it is; nothing new was stored.") in response.content.decode()


def test_enqueue_needs_a_post_and_a_curator(client, application, viewer, curator, corpus):
    plan, _ = plan_create(application=application, budget=3, actor=curator)
    client.force_login(viewer)
    assert client.post(url("plan_enqueue", plan.pk)).status_code == 403
    client.force_login(curator)
    assert client.get(url("plan_enqueue", plan.pk)).status_code == 405
    assert QueueEntry.objects.count() == 0


def test_plan_json_is_the_stored_bytes(client, application, curator, corpus):
    plan, _ = plan_create(application=application, budget=3, actor=curator)
    client.force_login(curator)
    assert client.get(url("plan_json", plan.pk)).content == plan.canonical_json.encode()


def test_plan_pages_are_sealed_between_applications(client, tenant_pair):
    make_case(tenant_pair.b, "b-case")
    plan, _ = plan_create(application=tenant_pair.b, budget=1, actor=tenant_pair.member_of_b)
    for name in ("plan", "plan_json"):
        assert_sealed(client, tenant_pair.member_of_a, reverse(f"sampling:{name}", args=[tenant_pair.b.slug, plan.pk]))
        # and through A's slug the plan of B does not exist either
        assert_sealed(client, tenant_pair.member_of_a, reverse(f"sampling:{name}", args=[tenant_pair.a.slug, plan.pk]))
    assert_sealed(client, tenant_pair.member_of_a,
                  reverse("sampling:plan_enqueue", args=[tenant_pair.a.slug, plan.pk]), method="post")


def test_home_card_counts_plans_waiting_to_be_enqueued(client, application, curator, corpus):
    plan_create(application=application, budget=3, actor=curator)
    client.force_login(curator)
    html = client.get(reverse("application_home", args=["acme"])).content.decode()
    assert 'data-testid="count-sampling-plans-to-enqueue">1<' in html
