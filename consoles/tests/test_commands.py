import io

import pytest
from django.core.management import CommandError, call_command

from consoles.models import ApiToken, Application, Membership, TokenKind
from consoles.services import token_authenticate
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_create_application():
    assert "Created application shop" in run("create_application", "shop", "--name", "Shop bot")
    assert Application.objects.get(slug="shop").name == "Shop bot"


def test_create_application_refuses_a_duplicate_and_a_bad_slug_with_exit_2():
    ApplicationFactory(slug="shop")
    for args in (["shop"], ["Not A Slug"]):
        with pytest.raises(CommandError) as exc:
            run("create_application", *args)
        assert exc.value.returncode == 2


def test_create_application_takes_the_slug_for_a_blank_name():
    run("create_application", "shop", "--name", "   ")
    assert Application.objects.get(slug="shop").name == "shop"


def test_add_member_and_change_role():
    ApplicationFactory(slug="shop")
    UserFactory(username="ann")
    run("add_member", "shop", "ann", "--role", "curator")
    assert Membership.objects.get(user__username="ann").role == "curator"
    run("add_member", "shop", "ann", "--role", "admin")
    assert Membership.objects.get(user__username="ann").role == "admin"


@pytest.mark.parametrize(
    "args,message",
    [
        (["nope", "ann", "--role", "curator"], "Unknown application 'nope'"),
        (["shop", "ghost", "--role", "curator"], "Unknown user 'ghost'"),
    ],
)
def test_add_member_errors_are_clear_with_exit_2(args, message):
    ApplicationFactory(slug="shop")
    UserFactory(username="ann")
    with pytest.raises(CommandError) as exc:
        run("add_member", *args)
    assert exc.value.returncode == 2 and message in str(exc.value)


def test_issue_application_token_prints_a_working_secret_once():
    app = ApplicationFactory(slug="shop")
    secret = run("issue_token", "shop", "--name", "gateway").strip()
    token = token_authenticate(secret=secret)
    assert token.kind == TokenKind.APPLICATION and token.application == app and token.user is None


def test_issue_personal_token_for_a_member():
    membership = MembershipFactory(application=ApplicationFactory(slug="shop"), user=UserFactory(username="ann"))
    secret = run("issue_token", "shop", "--user", "ann", "--name", "laptop").strip()
    token = token_authenticate(secret=secret)
    assert token.kind == TokenKind.PERSONAL and token.user == membership.user


@pytest.mark.parametrize(
    "args,message",
    [
        (["nope", "--name", "x"], "Unknown application 'nope'"),
        (["shop", "--user", "ghost", "--name", "x"], "Unknown user 'ghost'"),
        (["shop", "--user", "stranger", "--name", "x"], "not a member"),
        # SQLite would keep all 101 characters; PostgreSQL would refuse the insert with a traceback.
        (["shop", "--name", "n" * 101], "A token name has at most 100 characters."),
    ],
)
def test_issue_token_errors_are_clear_with_exit_2(args, message):
    ApplicationFactory(slug="shop")
    UserFactory(username="stranger")
    with pytest.raises(CommandError) as exc:
        run("issue_token", *args)
    assert exc.value.returncode == 2 and message in str(exc.value)
    assert ApiToken.objects.count() == 0


def test_load_demo_is_idempotent(monkeypatch):
    from feedback.models import HistoryDay

    first = run("load_demo")
    assert "http://127.0.0.1:8000/login/" in first  # the Makefile's defaults
    # The overview's ended days are summed by the load, not by the first view.
    assert HistoryDay.objects.filter(application__slug="acme-chat").count() >= 20
    counts = [m.objects.count() for m in (Application, Membership, ApiToken)]
    monkeypatch.setenv("PORT", "9123")
    monkeypatch.setenv("HOST", "localhost")
    out = run("load_demo")
    assert [m.objects.count() for m in (Application, Membership, ApiToken)] == counts
    assert "curator" in out and "demo-pass-2026" in out
    assert "http://localhost:9123/login/" in out  # what `HOST=localhost PORT=9123 make run` serves


def test_load_demo_is_refused_in_production_unless_scratch(settings):
    settings.PRODUCTION = True
    with pytest.raises(CommandError) as exc:
        run("load_demo")
    assert exc.value.returncode == 2 and "refusing to load the demo in production" in str(exc.value)
    assert not Application.objects.exists() and not ApiToken.objects.exists()
    assert "demo-pass-2026" in run("load_demo", "--scratch")
    assert Application.objects.filter(slug="acme-chat").exists()
