import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from consoles.models import ApiToken, Application, Membership, Role, TokenKind
from consoles.tests.factories import ApplicationFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_application_defaults_are_sensible_and_capture_is_off():
    app = Application.objects.create(slug="new", name="New")
    app.full_clean()
    assert app.capture_enabled is False
    assert app.capture_on_low_confidence is False and app.capture_on_refusal is False
    assert set(app.problem_axis_map.values()) <= set(app.axes)
    assert app.captures_reason("low_confidence") is False


def test_capture_needs_both_the_master_switch_and_the_reason_toggle():
    app = ApplicationFactory(capture_enabled=False, capture_on_refusal=True)
    assert not app.captures_reason("refused")
    app.capture_enabled = True
    assert app.captures_reason("refused")
    assert not app.captures_reason("low_confidence")


def test_problem_mapped_to_unknown_axis_is_refused():
    app = ApplicationFactory.build(axes=["a"], problems=[{"key": "p", "label": "P", "axis": "b"}])
    with pytest.raises(ValidationError) as exc:
        app.full_clean()
    assert "problems" in exc.value.message_dict


def test_retention_days_zero_is_refused_by_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        Application.objects.create(slug="zero", name="Zero", retention_days=0)


def test_membership_is_unique_per_user_and_application():
    membership = MembershipFactory()
    duplicate = Membership(user=membership.user, application=membership.application, role=Role.VIEWER)
    with pytest.raises(ValidationError):
        duplicate.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        duplicate.save()


def test_membership_role_is_checked_by_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        Membership.objects.create(user=UserFactory(), application=ApplicationFactory(), role="owner")


@pytest.mark.parametrize(
    "kind,with_app,with_user",
    [
        (TokenKind.APPLICATION, True, True),  # an application token is never a user's
        (TokenKind.APPLICATION, False, False),
        (TokenKind.PERSONAL, True, True),
        (TokenKind.PERSONAL, False, False),
        (TokenKind.PERSONAL, True, False),
    ],
)
def test_token_owner_must_match_its_kind(kind, with_app, with_user):
    token = ApiToken(
        kind=kind,
        name="t",
        application=ApplicationFactory() if with_app else None,
        user=UserFactory() if with_user else None,
        prefix="x",
        digest="a" * 64,
    )
    with pytest.raises(ValidationError):
        token.full_clean()
    with pytest.raises(IntegrityError), transaction.atomic():
        token.save()


def test_token_digest_must_look_like_a_sha256_so_a_plaintext_secret_cannot_be_stored():
    with pytest.raises(IntegrityError), transaction.atomic():
        ApiToken.objects.create(
            kind=TokenKind.APPLICATION, name="t", application=ApplicationFactory(), prefix="x",
            digest="cc_app_plaintext-secret",
        )
