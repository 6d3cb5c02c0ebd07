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


# --- The indexes an ingested flag writes ------------------------------------------
# Each flag and its `created` event update every index of their tables, so an
# index that another one already serves only costs ingest time.

INGEST_TABLES = ["feedback_flag", "feedback_flagevent"]


def _indexes(table: str) -> dict[str, dict]:
    from django.db import connection

    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name: info for name, info in constraints.items() if info["index"] and not info["primary_key"]}


def _index_definitions(table: str) -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        else:
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s", [table])
        return {name: definition or "" for name, definition in cursor.fetchall()}


@pytest.mark.parametrize("table", INGEST_TABLES)
def test_no_ingest_index_is_served_by_another(table):
    indexes = _indexes(table)
    definitions = _index_definitions(table)
    plain = {name: info["columns"] for name, info in indexes.items()
             # An expression index (the text search's) names no column: no prefix to compare.
             if not info["unique"] and info["columns"] and None not in info["columns"]
             and " WHERE " not in definitions.get(name, "")}
    for name, columns in plain.items():
        served_by = [other for other, other_columns in plain.items()
                     if other != name and other_columns[: len(columns)] == columns]
        assert not served_by, f"{table}.{name} {columns} is a prefix of {served_by}: a redundant index on every ingest"


@pytest.mark.parametrize(
    ("table", "column"),
    [("feedback_flag", "author_user_id"), ("feedback_flag", "claimed_by_id"), ("feedback_flagevent", "actor_user_id")],
)
def test_user_keys_are_indexed_only_where_set(table, column):
    """A deleted user's rows are found by index, and a row with no user (every
    flag an integration posts) writes nothing to it."""
    definitions = _index_definitions(table)
    on_column = {name: info for name, info in _indexes(table).items() if info["columns"] == [column]}
    assert on_column, f"{table}.{column} has no index"
    for name in on_column:
        definition = "".join(c for c in definitions[name] if c not in '()"')
        assert f"WHERE {column} IS NOT NULL" in definition, definitions[name]
