import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from consoles.tests.factories import UserFactory
from feedback.models import AuthorKind, Flag, FlagStatus

from .factories import CaptureFactory, FlagFactory

pytestmark = pytest.mark.django_db


def _violates(flag: Flag, code: str) -> None:
    """Both paths refuse: full_clean() names the rule, the database refuses the row."""
    with pytest.raises(ValidationError) as exc:
        flag.full_clean()
    assert code in {e.code for errors in exc.value.error_dict.values() for e in errors}
    with pytest.raises(IntegrityError), transaction.atomic():
        flag.save()


def test_an_approved_flag_needs_an_axis_and_a_verdict(application):
    flag = FlagFactory.build(application=application, status=FlagStatus.APPROVED, verdict="", axis="")
    flag.author_token.save()
    _violates(flag, "approved_incomplete")


def test_an_operator_flag_names_a_user_and_no_token(application):
    flag = FlagFactory.build(application=application, author_kind=AuthorKind.OPERATOR, author_user=None)
    flag.author_token.save()
    _violates(flag, "author_mismatch")


def test_an_end_user_flag_cannot_be_attributed_to_a_user(application):
    flag = FlagFactory.build(application=application, author_user=UserFactory())
    flag.author_token.save()
    _violates(flag, "author_mismatch")


def test_a_capture_is_always_agent_authored(application):
    flag = CaptureFactory.build(application=application, author_kind=AuthorKind.END_USER)
    flag.author_token.save()
    _violates(flag, "capture_author")


def test_a_user_flag_needs_a_problem(application):
    flag = FlagFactory.build(application=application, problem="")
    flag.author_token.save()
    _violates(flag, "problem_required")


def test_labels_belong_to_captures_only(application):
    flag = FlagFactory.build(application=application, capture_label="wrong")
    flag.author_token.save()
    _violates(flag, "label_on_flag")


def test_a_user_flag_is_never_dropped(application):
    flag = FlagFactory.build(application=application, status=FlagStatus.DROPPED)
    flag.author_token.save()
    _violates(flag, "dropped_user_flag")


def test_public_id_has_the_documented_shape(application):
    flag = FlagFactory.build(application=application, public_id="fb_XYZ")
    flag.author_token.save()
    _violates(flag, "public_id_format")


def test_the_same_message_and_region_is_one_flag_per_application(application):
    first = FlagFactory(application=application, message_id="m1")
    with pytest.raises(IntegrityError), transaction.atomic():
        FlagFactory(application=application, message_id="m1", public_id="fb_0000000000000001")
    # a capture of the same message is a separate signal, and another region too
    CaptureFactory(application=application, message_id="m1")
    FlagFactory(application=application, message_id="m1", region="prompt")
    assert Flag.objects.filter(application=application, message_id="m1").count() == 3
    assert first.public_id.startswith("fb_")


def test_weight_is_between_zero_and_one(application):
    flag = FlagFactory.build(application=application, weight=1.5)
    flag.author_token.save()
    _violates(flag, "weight_range")
