"""A score on a bank large enough to be pruned (see bank.PRUNE_MIN_ROWS) says exactly
what the full scan says, through the services and over HTTP, on either database."""

import numpy as np
import pytest
from django.utils import timezone

from consoles.testing import bearer
from exemplars import services
from exemplars.bank import PRUNE_MIN_ROWS
from exemplars.selectors import exemplar_page
from feedback.models import Flag

from .factories import BankSettingsFactory, DetectorProfileFactory

pytestmark = pytest.mark.django_db

DIM = 48


@pytest.fixture
def large(application):
    """PRUNE_MIN_ROWS + 500 approved jailbreak prompts, a third benign, each with an uploaded vector."""
    profile = DetectorProfileFactory(application=application, name="tapestry", axes=["jailbreak"],
                                     embedder="external")
    BankSettingsFactory(application=application, enabled=True)
    now = timezone.now()
    Flag.objects.bulk_create([
        Flag(public_id=f"fb_{i:016x}", application=application, region="prompt", problem="fabricated",
             suggested_axis="jailbreak", axis="jailbreak", status="approved",
             verdict="false_positive" if i % 3 == 0 else "false_negative", prompt=f"text number {i}", answer="",
             message_id=f"m{i}", author_kind="end_user", created_at=now, updated_at=now)
        for i in range(PRUNE_MIN_ROWS + 500)
    ])
    rng = np.random.default_rng(17)
    vectors, after = {}, None
    while True:
        page = exemplar_page(profile=profile, missing=True, after=after, limit=1000)
        body = [{"exemplar_id": e.exemplar_id, "vector": rng.standard_normal(DIM).tolist()} for e in page.items]
        if body:
            services.vectors_upload(profile=profile, dim=DIM, vectors=body)
            vectors.update({item["exemplar_id"]: item["vector"] for item in body})
        if page.next_after is None:
            break
        after = page.next_after
    return profile, list(vectors.values()), rng


def run(application, vector, *, preview=False):
    return services.score(application=application, detector="tapestry", region="prompt", text="",
                          axis_energy={"jailbreak": (0.4, 0.5)}, embedding=vector, preview=preview)


def test_a_pruned_score_matches_as_the_full_scan_does(application, large):
    profile, vectors, rng = large
    queries = [vectors[i] for i in range(0, len(vectors), 97)]  # exemplars themselves: a match each
    near = np.asarray(vectors[5]) / np.linalg.norm(vectors[5])
    queries += [(near + rng.normal(0, s, DIM) / np.sqrt(DIM)).tolist() for s in np.linspace(0.2, 0.8, 20)]
    queries += [rng.standard_normal(DIM).tolist() for _ in range(10)]  # no match
    moved = 0
    for tau in (0.88, 0.6):
        services.bank_settings_update(application=application, enabled=True, tau=tau)
        for query in queries:
            scored, full = run(application, query).axes["jailbreak"], run(application, query, preview=True).axes["jailbreak"]
            assert (scored.match, scored.p, scored.flag) == (full.match, full.p, full.flag)
            moved += scored.match is not None
    assert services._cache[profile.pk].index._sketch is not None  # the scores took the pruned path
    assert moved >= 2 * len(vectors) // 97


def test_the_api_answers_the_exemplar_it_was_sent(client, app_token, application, large):
    _, vectors, _ = large
    body = {"detector": "tapestry", "region": "prompt", "text": "", "embedding": vectors[4],
            "axis_energy": {"jailbreak": {"p_detector": 0.2, "threshold": 0.5}}}
    answer = client.post("/api/v1/score", body, content_type="application/json", **bearer(app_token)).json()
    axis = answer["axis_energy"]["jailbreak"]
    assert axis["exemplar_match"]["sim"] == pytest.approx(1.0, abs=1e-6)
    assert axis["exemplar_match"]["flag_id"] == "fb_0000000000000004"  # a false negative: raised
    assert (axis["flag"], axis["p"]) == (True, pytest.approx(0.51))
