import hashlib

import pytest
from django.db import connection

from consoles.errors import Conflict, InvalidInput
from consoles.models import ApiToken, Role
from consoles.services import (
    application_create,
    membership_set,
    token_authenticate,
    token_issue,
    token_revoke,
)
from consoles.tests.factories import ApplicationFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_token_is_stored_hashed_and_the_secret_appears_in_no_column():
    app = ApplicationFactory()
    issued = token_issue(name="gateway", application=app)
    row = ApiToken.objects.get(pk=issued.token.pk)
    assert row.digest == hashlib.sha256(issued.secret.encode()).hexdigest()
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM consoles_apitoken WHERE id = %s", [row.pk])
        values = [str(v) for v in cursor.fetchone()]
    assert all(issued.secret not in v for v in values)
    assert issued.secret.startswith("cc_app_") and len(issued.secret) > 40


def test_two_tokens_are_never_the_same():
    app = ApplicationFactory()
    assert token_issue(name="a", application=app).secret != token_issue(name="b", application=app).secret


def test_authenticate_finds_the_token_and_records_last_use():
    app = ApplicationFactory()
    issued = token_issue(name="gateway", application=app)
    assert issued.token.last_used_at is None
    token = token_authenticate(secret=issued.secret)
    assert token.pk == issued.token.pk and token.application == app
    assert ApiToken.objects.get(pk=token.pk).last_used_at is not None


def test_revoked_token_is_refused():
    issued = token_issue(name="gateway", application=ApplicationFactory())
    token_revoke(token=issued.token)
    assert token_authenticate(secret=issued.secret) is None


def test_unknown_token_is_refused():
    assert token_authenticate(secret="cc_app_nope") is None
    assert token_authenticate(secret="") is None


def test_personal_token_of_a_deactivated_user_is_refused():
    user = UserFactory()
    issued = token_issue(name="laptop", user=user)
    user.is_active = False
    user.save()
    assert token_authenticate(secret=issued.secret) is None


def test_token_needs_exactly_one_owner():
    with pytest.raises(InvalidInput):
        token_issue(name="x", application=ApplicationFactory(), user=UserFactory())
    with pytest.raises(InvalidInput):
        token_issue(name="x")


def test_application_create_validates_and_refuses_duplicates():
    application_create(slug="fresh", name="Fresh")
    with pytest.raises(Conflict):
        application_create(slug="fresh")
    with pytest.raises(InvalidInput) as exc:
        application_create(slug="Bad Slug!")
    assert "slug" in exc.value.fields


def test_membership_set_adds_then_changes_role():
    app, user = ApplicationFactory(), UserFactory()
    assert membership_set(application=app, user=user, role=Role.VIEWER).role == Role.VIEWER
    assert membership_set(application=app, user=user, role=Role.CURATOR).role == Role.CURATOR
    assert app.memberships.count() == 1
    with pytest.raises(InvalidInput):
        membership_set(application=app, user=user, role="owner")
