"""Publishable keys: a third token kind, hashed, shown once, revocable, with origins
the database insists on; made by the command, the admin or load_demo."""

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction

from consoles.errors import InvalidInput
from consoles.models import ApiToken, TokenKind
from consoles.origins import origin_normalize
from consoles.services import token_authenticate, token_issue, token_revoke
from consoles.tests.factories import ApplicationFactory, UserFactory
from consoles.tokens import token_digest

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("raw,normal", [
    ("https://Chat.Example.com", "https://chat.example.com"),
    ("https://chat.example.com:443/", "https://chat.example.com"),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("http://[::1]:9000", "http://[::1]:9000"),
])
def test_origins_are_kept_in_the_form_a_browser_sends(raw, normal):
    assert origin_normalize(raw) == normal


@pytest.mark.parametrize("raw", ["chat.example.com", "ftp://x.example", "https://x.example/path", "*",
                                 "https://user@x.example", "https://x.example?q=1", "", "https://x.example:99999"])
def test_anything_but_an_origin_is_refused(raw):
    with pytest.raises(ValueError):
        origin_normalize(raw)


def test_a_publishable_key_is_stored_hashed_and_authenticates_until_revoked():
    app = ApplicationFactory(slug="shop")
    issued = token_issue(name="widget", application=app, publishable=True,
                         origins=["https://Chat.Example.com", "https://chat.example.com/"])
    assert issued.secret.startswith("cc_pub_")
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert token.kind == TokenKind.PUBLISHABLE and token.origins == ["https://chat.example.com"]
    assert token.digest == token_digest(issued.secret) and issued.secret not in str(token.__dict__)
    assert token_authenticate(secret=issued.secret).origins == ["https://chat.example.com"]
    token_revoke(token=token)
    assert token_authenticate(secret=issued.secret) is None


def test_the_database_refuses_a_publishable_key_without_origins_or_a_user_owner():
    app = ApplicationFactory()
    rows = [
        ApiToken(kind=TokenKind.PUBLISHABLE, name="k", application=app, prefix="x", digest="a" * 64, origins=[]),
        ApiToken(kind=TokenKind.PUBLISHABLE, name="k", user=UserFactory(), prefix="x", digest="b" * 64,
                 origins=["https://x.example"]),
        ApiToken(kind=TokenKind.APPLICATION, name="k", application=app, prefix="x", digest="c" * 64,
                 origins=["https://x.example"]),
    ]
    for row in rows:
        with pytest.raises(ValidationError):
            row.full_clean()
        with pytest.raises(IntegrityError), transaction.atomic():
            row.save()
    assert not ApiToken.objects.exists()


def test_the_service_refuses_bad_origins_naming_the_field():
    app = ApplicationFactory()
    for origins in ([], ["not an origin"]):
        with pytest.raises(InvalidInput) as exc:
            token_issue(name="k", application=app, publishable=True, origins=origins)
        assert "origins" in exc.value.fields
    with pytest.raises(InvalidInput):
        token_issue(name="k", application=app, origins=["https://x.example"])  # not publishable
    assert not ApiToken.objects.exists()


def test_issue_token_publishable_prints_the_key_once():
    app = ApplicationFactory(slug="shop")
    out, err = run("issue_token", "shop", "--name", "widget", "--publishable",
                   "--origin", "https://chat.example.com", "--origin", "http://localhost:3000")
    token = token_authenticate(secret=out.strip())
    assert token.kind == TokenKind.PUBLISHABLE and token.application == app
    assert token.origins == ["https://chat.example.com", "http://localhost:3000"]
    assert "not shown again" in err


@pytest.mark.parametrize("args,message", [
    (["--publishable"], "at least one origin"),
    (["--publishable", "--origin", "chat.example.com"], "is not an origin"),
    (["--origin", "https://chat.example.com"], "--origin is for publishable keys"),
    (["--publishable", "--user", "ann", "--origin", "https://chat.example.com"], "drop --user"),
])
def test_issue_token_publishable_errors_are_one_line_with_exit_2(args, message):
    ApplicationFactory(slug="shop")
    with pytest.raises(CommandError) as exc:
        run("issue_token", "shop", "--name", "widget", *args)
    assert exc.value.returncode == 2 and message in str(exc.value)
    assert not ApiToken.objects.exists()


def test_the_admin_creates_a_publishable_key_shown_once(admin_client):
    app = ApplicationFactory(slug="shop")
    response = admin_client.post("/admin/consoles/apitoken/add/", {
        "kind": "publishable", "name": "widget", "application": app.pk,
        "origins": "https://chat.example.com\n\nhttps://Chat.example.com:443\nhttp://localhost:3000"}, follow=True)
    assert response.status_code == 200
    token = ApiToken.objects.get(kind=TokenKind.PUBLISHABLE)
    assert token.origins == ["https://chat.example.com", "http://localhost:3000"]
    # On the response page itself, never in a message (the cookie is signed, not encrypted).
    assert not any("cc_pub_" in str(m) for m in response.context.get("messages", []))
    secret = response.text.split('data-testid="token-secret">', 1)[1].split("<", 1)[0]
    assert token_digest(secret) == token.digest
    assert secret not in admin_client.get(f"/admin/consoles/apitoken/{token.pk}/change/").text


@pytest.mark.parametrize("form,field", [
    ({"kind": "publishable", "origins": ""}, "origins"),
    ({"kind": "publishable", "origins": "chat.example.com"}, "origins"),
    ({"kind": "application", "origins": "https://chat.example.com"}, "origins"),
])
def test_the_admin_names_a_bad_origin_next_to_its_field(admin_client, form, field):
    app = ApplicationFactory(slug="shop")
    response = admin_client.post("/admin/consoles/apitoken/add/", {"name": "widget", "application": app.pk, **form})
    assert response.status_code == 200
    assert field in response.context["adminform"].form.errors
    assert not ApiToken.objects.exists()


def test_load_demo_makes_the_demo_key_with_the_origins_asked_for_idempotently():
    from consoles.management.commands.load_demo import DEMO_PUBLISHABLE_KEY

    run("load_demo")
    run("load_demo", "--origin", "http://127.0.0.1:9000")
    run("load_demo", "--origin", "http://127.0.0.1:9000")
    key = token_authenticate(secret=DEMO_PUBLISHABLE_KEY)
    assert key.kind == TokenKind.PUBLISHABLE and key.application.slug == "acme-chat"
    assert key.origins == ["http://127.0.0.1:8000", "http://localhost:8000", "http://127.0.0.1:9000"]
    assert ApiToken.objects.filter(kind=TokenKind.PUBLISHABLE).count() == 1
