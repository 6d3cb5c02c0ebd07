"""rowsql: the ingest path's one-row insert and read keep what the ORM would do."""

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_save
from django.test.utils import CaptureQueriesContext

from consoles import rowsql
from consoles.models import ApiToken, Application
from consoles.services import token_issue
from consoles.tests.factories import ApplicationFactory, UserFactory
from feedback.models import Flag, FlagEvent

pytestmark = pytest.mark.django_db


def _flag(application: Application, message_id: str = "m-1") -> Flag:
    at = datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
    return Flag(
        public_id="fb_" + "a" * 16 if message_id == "m-1" else "fb_" + "b" * 16,
        application=application, region="answer", problem="fabricated", suggested_axis="hallucination",
        axis="hallucination", status="pending", detector_scores={"hallucination": 0.25},
        message_id=message_id, author_kind="operator", author_user=UserFactory(username="operator"),
        prompt="<script>x</script> ünïcode", created_at=at, updated_at=at,
    )


def test_insert_writes_the_row_the_orm_reads_back_and_sets_the_key():
    application = ApplicationFactory()
    flag = rowsql.insert(_flag(application))

    assert flag.pk is not None and not flag._state.adding
    stored = Flag.objects.get(pk=flag.pk)
    assert stored.public_id == flag.public_id
    assert stored.detector_scores == {"hallucination": 0.25}  # JSON prepared by the field
    assert stored.prompt == "<script>x</script> ünïcode"
    assert stored.created_at == datetime(2026, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
    assert stored.application_id == application.pk


def test_insert_applies_auto_now_add_like_save():
    application = ApplicationFactory()
    flag = rowsql.insert(_flag(application))
    event = rowsql.insert(FlagEvent(
        application_id=application.pk, flag=flag, action="created", from_status="", to_status="pending",
        actor_kind="system", changes={"why": "test"}, created_at=flag.created_at,
    ))
    assert FlagEvent.objects.get(pk=event.pk).changes == {"why": "test"}
    # ApiToken.created_at is auto_now_add: pre_save fills it in, as Model.save() would.
    token = ApiToken(kind="application", name="t", application=application, prefix="p", digest="d" * 64)
    rowsql.insert(token)
    assert token.created_at is not None
    assert ApiToken.objects.get(pk=token.pk).created_at == token.created_at


def test_a_constraint_violation_is_djangos_integrity_error_and_rolls_back_with_the_transaction():
    application = ApplicationFactory()
    rowsql.insert(_flag(application))
    with pytest.raises(IntegrityError), transaction.atomic():
        rowsql.insert(_flag(application, message_id="m-2"))  # a second row: fine
        rowsql.insert(_flag(application))  # same public id and message: refused
    assert list(Flag.objects.values_list("message_id", flat=True)) == ["m-1"]


def _created(flag: Flag) -> FlagEvent:
    return FlagEvent(application_id=flag.application_id, flag=flag, action="created", from_status="",
                     to_status="pending", actor_kind="system", changes={"n": 1}, created_at=flag.created_at)


def test_insert_pair_writes_both_rows_with_the_child_keyed_to_the_new_parent():
    application = ApplicationFactory()
    flag = _flag(application)
    event = _created(flag)
    with CaptureQueriesContext(connection) as queries:
        rowsql.insert_pair(flag, event, "flag")

    # One statement where it is atomic on its own (PostgreSQL), else two.
    assert len(queries) == (1 if rowsql.pair_is_one_statement() else 2)
    assert flag.pk is not None and event.pk is not None and event.flag_id == flag.pk
    assert not flag._state.adding and not event._state.adding
    stored = FlagEvent.objects.select_related("flag").get(pk=event.pk)
    assert stored.flag.public_id == flag.public_id and stored.flag.prompt == "<script>x</script> ünïcode"
    assert stored.changes == {"n": 1} and stored.created_at == flag.created_at
    assert Flag.objects.get(pk=flag.pk).detector_scores == {"hallucination": 0.25}


def test_insert_pair_writes_neither_row_when_the_parent_is_refused():
    application = ApplicationFactory()
    rowsql.insert(_flag(application))
    again = _flag(application)  # same public id and message: refused
    with pytest.raises(IntegrityError), transaction.atomic():
        rowsql.insert_pair(again, _created(again), "flag")
    assert Flag.objects.count() == 1 and not FlagEvent.objects.exists()


def test_insert_pair_refuses_a_link_that_is_not_a_key_to_the_parent():
    application = ApplicationFactory()
    flag = _flag(application)
    with pytest.raises(TypeError):
        rowsql.insert_pair(flag, _created(flag), "actor_token")
    assert not Flag.objects.exists() and not FlagEvent.objects.exists()


def test_insert_refuses_a_model_with_save_signal_receivers():
    def receiver(**kwargs):
        pass

    post_save.connect(receiver, sender=Flag)
    try:
        with pytest.raises(TypeError, match="signal receivers"):
            rowsql.insert(_flag(ApplicationFactory()))
    finally:
        post_save.disconnect(receiver, sender=Flag)
    assert not Flag.objects.exists()


def test_instance_from_converts_columns_as_the_orm_does():
    application = ApplicationFactory(slug="conv")
    token_issue(name="t", application=application)
    plan = rowsql.read_plan(Application, "a")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {plan.columns} FROM consoles_application a WHERE a.id = %s", [application.pk])  # noqa: S608
        row = cursor.fetchone()
    read = rowsql.instance_from(Application, plan, row)
    orm = Application.objects.get(pk=application.pk)
    for field in Application._meta.concrete_fields:
        assert getattr(read, field.attname) == getattr(orm, field.attname), field.name
    assert read.created_at.tzinfo is not None  # SQLite hands text back; the converter makes it aware
    assert not read._state.adding
