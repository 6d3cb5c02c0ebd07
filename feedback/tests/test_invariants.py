"""DESIGN.md invariants 1, 2 and 4 for the feedback app, on SQLite and PostgreSQL."""

import io
import re
import tokenize
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from consoles.appendonly import history_delete_allowed
from consoles.models import ApiToken
from consoles.tests.factories import ApiTokenFactory
from feedback.models import FlagEvent, FlagReview
from feedback.services import flag_review

from .factories import FlagFactory

FEEDBACK_DIR = Path(__file__).resolve().parent.parent


def _insert_review(flag, reviewer_id) -> None:
    table = FlagReview._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (application_id, flag_id, reviewer_id, from_status, to_status, axis, "
            "verdict, capture_label, note, flag_version, created_at) "
            "VALUES (%s, %s, %s, 'pending', 'approved', 'hallucination', 'false_negative', '', '', 2, %s)",
            [flag.application_id, flag.pk, reviewer_id, timezone.now()],
        )


@pytest.mark.django_db(transaction=True)
def test_a_raw_insert_of_a_review_without_a_human_reviewer_fails(application):
    flag = FlagFactory(application=application)
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_review(flag, None)
    assert not FlagReview.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_raw_insert_naming_an_application_token_as_reviewer_fails(application, curator):
    flag = FlagFactory(application=application)
    User = get_user_model()
    # An application token's id that is no user's id: the reviewer column only
    # references users, so the database refuses it (checked at commit at the latest).
    token = ApiTokenFactory(application=application)
    while User.objects.filter(pk=token.pk).exists():
        token = ApiTokenFactory(application=application)
    assert ApiToken.objects.get(pk=token.pk).kind == "application"
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert_review(flag, token.pk)
    assert not FlagReview.objects.exists()
    # The same insert with a human user goes through: the failure is about the reviewer.
    with transaction.atomic():
        _insert_review(flag, curator.pk)
    assert FlagReview.objects.get().reviewer == curator


def test_the_review_model_has_no_column_that_could_hold_a_token():
    reviewer = FlagReview._meta.get_field("reviewer")
    assert reviewer.related_model is get_user_model() and reviewer.null is False
    assert not [f for f in FlagReview._meta.concrete_fields if f.is_relation and f.related_model is ApiToken]


@pytest.mark.django_db
def test_events_cannot_be_updated_or_deleted(application, curator):
    flag = FlagFactory(application=application)
    flag_review(flag=flag, reviewer=curator, status="rejected", version=flag.version)
    event = FlagEvent.objects.get(flag=flag)
    event.to_status = "approved"
    with pytest.raises(TypeError):
        event.save()
    with pytest.raises(TypeError):
        event.delete()
    with pytest.raises(TypeError):
        FlagEvent.objects.filter(flag=flag).update(to_status="approved")
    with pytest.raises(TypeError):
        FlagEvent.objects.filter(flag=flag).delete()
    assert FlagEvent.objects.get(flag=flag).to_status == "rejected"
    # retention / erasure is the one explicit exception, under the database's grant
    with transaction.atomic(), history_delete_allowed():
        assert FlagEvent.objects.filter(flag=flag).erase() == 1


FORBIDDEN = ["CaseLabel", "GoldLabelRevision", "AdjudicationLabel", "from adjudication", "import adjudication"]


def _code_without_comments(path: Path) -> str:
    """The source with comments and docstrings removed (so prose may mention them)."""
    out = []
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    previous = tokenize.INDENT
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and previous in (tokenize.INDENT, tokenize.NEWLINE, tokenize.DEDENT):
            previous = tok.type
            continue  # a docstring
        out.append(tok.string)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok.type
    return " ".join(out)


def test_feedback_never_imports_adjudication_label_types():
    sources = [p for p in FEEDBACK_DIR.rglob("*.py") if "tests" not in p.relative_to(FEEDBACK_DIR).parts]
    assert FEEDBACK_DIR / "services" / "flags.py" in sources and len(sources) >= 8
    offenders = []
    for path in sources:
        code = re.sub(r"\s+", " ", _code_without_comments(path))
        offenders += [f"{path.name}: {word}" for word in FORBIDDEN if word in code]
    assert offenders == []


def test_the_guard_would_notice_an_import(tmp_path):
    sneaky = tmp_path / "sneaky.py"
    sneaky.write_text('"""Mentions CaseLabel in prose."""\n# from adjudication import x\nfrom adjudication.models import GoldLabelRevision\n')
    code = re.sub(r"\s+", " ", _code_without_comments(sneaky))
    assert "from adjudication" in code and "GoldLabelRevision" in code and "CaseLabel" not in code
