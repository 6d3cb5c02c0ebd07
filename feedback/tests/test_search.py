"""Free-text search over prompt, answer and note (feedback.search), on both databases."""

import random

import pytest
from django.db import connection
from django.db.models import Q

from consoles.models import Role
from consoles.testing import bearer
from consoles.tests.factories import MembershipFactory, UserFactory, personal_token
from feedback.models import Flag
from feedback.search import (
    FTS_TABLE,
    FlagTextMatch,
    drop_sqlite_index,
    ensure_sqlite_index,
    fts5_query,
    search_terms,
    tsquery,
)
from feedback.selectors import FlagFilters, flag_list
from feedback.services import subject_erase

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db

# No word here is a prefix of another, so "every word begins a word" and a plain
# case-insensitive substring test of the same words agree on these flags.
VOCABULARY = ["lyon", "store", "opens", "sunday", "refund", "jailbreak", "citation", "paris", "prize",
              "quantum", "widget", "zebra", "harbour", "velvet", "moss", "tokyo"]


def _search(application, q: str) -> set[int]:
    return set(flag_list(application=application, filters=FlagFilters(q=q)).values_list("pk", flat=True))


def _reference(application, q: str) -> set[int]:
    """The same search as a plain ORM filter (icontains on each column), no index."""
    qs = Flag.objects.filter(application=application)
    for term in search_terms(q):
        qs = qs.filter(Q(prompt__icontains=term) | Q(answer__icontains=term) | Q(note__icontains=term))
    return set(qs.values_list("pk", flat=True))


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCABULARY).capitalize() if rng.random() < 0.3 else rng.choice(VOCABULARY)
                    for _ in range(rng.randint(0, 5)))


def test_terms_are_words_only_so_no_query_syntax_survives():
    assert search_terms('  "Lyon"* OR -store NEAR(a b) col:x ^ ') == ["lyon", "or", "store", "near", "a", "b",
                                                                      "col", "x"]
    assert search_terms("prompt_injection") == ["prompt", "injection"]
    assert fts5_query(["lyon", "7am", "ab"]) == '"lyon"* "7am"* "ab"'
    assert tsquery(["lyon", "ab"]) == "lyon:* & ab"


def test_search_agrees_with_a_plain_icontains_filter(application):
    rng = random.Random(31)
    for _ in range(60):
        FlagFactory(application=application, prompt=_sentence(rng), answer=_sentence(rng), note=_sentence(rng))
    queries = [*VOCABULARY, "lyon store", "Paris PRIZE", "zebra moss velvet", "nothing"]
    for q in queries:
        assert _search(application, q) == _reference(application, q), q
    assert any(_search(application, q) for q in VOCABULARY)


def test_a_word_matches_from_its_start_in_any_column_in_any_case(application):
    lyon = FlagFactory(application=application, prompt="When do you open?", answer="The Lyon store opens at 7am.")
    refused = FlagFactory(application=application, prompt="x", answer="y", note="It REFUSED a harmless question")
    FlagFactory(application=application, prompt="Kyoto", answer="Nagoya", note="")
    assert _search(application, "lyon") == {lyon.pk}
    assert _search(application, "refus") == {refused.pk}  # a prefix
    assert _search(application, "fused") == set()  # not the middle of a word
    assert _search(application, "lyon 7am") == {lyon.pk}  # every word is required
    assert _search(application, "lyon refused") == set()


@pytest.mark.parametrize(("q", "finds"), [
    ("lyon*", True), ('"lyon"', True), ("-lyon", True), ("^lyon", True), ("(lyon)", True), ("lyon:", True),
    ("NEAR(lyon", False), ("lyon AND", False), ("lyon OR", False), ("col:lyon", False),
    ("'; DROP TABLE feedback_flag; --", False), ('"', None), ("*", None), ("\\", None),
])
def test_query_syntax_is_taken_as_words_never_an_error(application, q, finds):
    """FTS5 and tsquery operators are words like any other (or nothing at all)."""
    lyon = FlagFactory(application=application, answer="The Lyon store", prompt="", note="")
    if finds is None:
        assert search_terms(q) == []
        return
    assert _search(application, q) == ({lyon.pk} if finds else set())
    assert Flag.objects.filter(application=application).count() == 1


def test_search_stays_in_its_tenant(tenant_pair):
    mine = FlagFactory(application=tenant_pair.a, answer="velvet harbour")
    FlagFactory(application=tenant_pair.b, answer="velvet harbour")
    assert _search(tenant_pair.a, "velvet") == {mine.pk}


def test_edits_and_deletions_keep_the_index_in_step(application):
    flag = FlagFactory(application=application, prompt="", answer="quantum widget", note="")
    assert _search(application, "quantum") == {flag.pk}
    Flag.objects.filter(pk=flag.pk).update(answer="zebra", note="moss")  # e.g. a dropped capture's text going
    assert _search(application, "quantum") == set()
    assert _search(application, "zebra moss") == {flag.pk}
    Flag.objects.filter(pk=flag.pk).delete()
    assert _search(application, "zebra") == set()
    _assert_index_in_step()


def test_erasure_removes_the_subjects_flags_from_the_index(application):
    gone = FlagFactory(application=application, session_id="sess_erase", answer="tokyo velvet")
    kept = FlagFactory(application=application, session_id="sess_keep", answer="tokyo harbour")
    CaptureFactory(application=application, session_id="sess_erase", answer="tokyo moss")
    subject_erase(application=application, session_id="sess_erase", requested_by="ticket DPO-1")
    assert _search(application, "tokyo") == {kept.pk}
    assert not Flag.objects.filter(pk=gone.pk).exists()
    _assert_index_in_step()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}_docsize")  # one row per indexed flag
            assert cursor.fetchone()[0] == 1


def _assert_index_in_step() -> None:
    """SQLite checks the external-content index against the flag table (raises if not)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('integrity-check', 1)")


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="the FTS5 table and its triggers are SQLite's")
def test_a_rebuilt_table_gets_its_triggers_and_index_back(application):
    # What a migration that rebuilds feedback_flag on SQLite does to its triggers.
    drop_sqlite_index()
    flag = FlagFactory(application=application, answer="harbour moss")
    assert ensure_sqlite_index() is True
    assert _search(application, "harbour") == {flag.pk}
    assert ensure_sqlite_index() is False  # nothing missing, nothing done
    _assert_index_in_step()


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="the GIN index is PostgreSQL's")
def test_postgresql_search_is_served_by_the_gin_index(application):
    FlagFactory(application=application, answer="harbour moss")
    # Without the application's filter (whose index a table this small would use):
    # the planner can only match the search's expression to the GIN index.
    qs = Flag.objects.filter(FlagTextMatch(search_terms("harbour")))
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        plan = qs.explain()
        cursor.execute("RESET enable_seqscan")
    assert "fb_flag_text_search" in plan


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="FTS5 is SQLite's")
def test_sqlite_reads_a_rare_words_match_by_rowid_and_a_common_words_page_by_its_index(application, monkeypatch):
    from feedback import search

    rng = random.Random(7)
    for _ in range(40):
        FlagFactory(application=application, prompt=_sentence(rng), answer=_sentence(rng), note=_sentence(rng))
    FlagFactory(application=application, answer="zephyrine moss")
    FlagFactory(application=application, note="Zephyrine")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # the planner's statistics, as the benchmark's table has them
    page = flag_list(application=application, filters=FlagFilters(q="zephyrine")).order_by("-created_at", "-id")
    # Few matches: the filter is `id IN (<their ids>)` (not `(id IN (...)) = 1`, which hid the
    # id from the planner), so the matching rows are read by rowid, then sorted.
    assert "INTEGER PRIMARY KEY" in page.explain()
    rare = list(page.values_list("pk", flat=True))
    # Many matches (two, with a threshold of 2 here): the page's own index, in order.
    monkeypatch.setattr(search, "COMMON_MATCHES", 2)
    assert "fb_flag_app_created" in page.explain()
    assert list(page.values_list("pk", flat=True)) == rare  # the same rows either way
    assert set(rare) == _reference(application, "zephyrine")


# --- The API and the screen -----------------------------------------------------------


def test_api_q_filters_and_bad_q_is_422_naming_it(client, application, app_token):
    hit = FlagFactory(application=application, answer="The Lyon store opens at 7am")
    FlagFactory(application=application, answer="Closed on Mondays")
    body = client.get("/api/v1/flags", {"q": "lyon 7AM"}, **bearer(app_token)).json()
    assert [item["id"] for item in body["items"]] == [hit.public_id]
    for bad in ("!!!", "x" * 201):
        response = client.get("/api/v1/flags", {"q": bad}, **bearer(app_token))
        assert response.status_code == 422
        assert "q" in response.json()["error"]["fields"]
    assert client.get("/api/v1/flags", {"q": '"NEAR(*'}, **bearer(app_token)).status_code == 200


def test_flags_screen_has_a_search_box_that_filters(client, application):
    user = MembershipFactory(user=UserFactory(), application=application, role=Role.CURATOR).user
    client.force_login(user)
    hit = FlagFactory(application=application, prompt="Where is the velvet harbour?")
    miss = FlagFactory(application=application, prompt="Something else")
    page = client.get(f"/a/{application.slug}/flags/", {"status": "pending", "q": "velvet"}).content.decode()
    assert 'name="q"' in page
    assert hit.public_id in page and miss.public_id not in page
    bad = client.get(f"/a/{application.slug}/flags/", {"status": "pending", "q": "***"})
    assert bad.status_code == 200
    assert "Search for a word" in bad.content.decode()


def test_personal_token_search_is_sealed(client, tenant_pair):
    FlagFactory(application=tenant_pair.b, answer="velvet")
    token = personal_token(tenant_pair.member_of_a)
    response = client.get("/api/v1/flags", {"q": "velvet", "application_id": tenant_pair.b.slug}, **bearer(token))
    assert response.status_code == 404
