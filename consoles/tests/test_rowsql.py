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


def _comparable(values):
    # psycopg's JSON wrapper has no equality of its own: compare what it wraps.
    return [(type(v).__name__, v.obj) if type(v).__name__ == "Jsonb" else v for v in values]


def _orm_values(instance, plan):
    """What Model.save() binds for a new row: every field's own preparation."""
    return _comparable([f.get_db_prep_save(f.pre_save(instance, True), connection) for f in plan.fields])


def test_values_bind_exactly_what_the_fields_would_prepare():
    from feedback.models import FlagStatus

    application = ApplicationFactory()
    flag = _flag(application)
    flag.status = FlagStatus.PENDING  # a TextChoices member, as the services set it
    flag.weight = 0.5
    plan = rowsql._insert_plan(Flag)
    fast = rowsql._values(flag, plan)
    assert _comparable(fast) == _orm_values(flag, plan)
    # The member goes in as its plain value, not as the enum.
    by_name = dict(zip([f.name for f in plan.fields], fast, strict=True))
    assert type(by_name["status"]) is str and by_name["status"] == "pending"


def test_values_fall_back_to_the_field_for_anything_not_plain():
    application = ApplicationFactory()
    flag = _flag(application)
    flag.problem = 7  # not a str: the field prepares it (CharField makes it "7")
    flag.version = True  # a bool is no plain int for an integer field
    plan = rowsql._insert_plan(Flag)
    assert _comparable(rowsql._values(flag, plan)) == _orm_values(flag, plan)
    by_name = dict(zip([f.name for f in plan.fields], rowsql._values(flag, plan), strict=True))
    # An int, not the bool (PostgreSQL's backend prepares it as psycopg's Int4, an int too).
    assert by_name["problem"] == "7" and isinstance(by_name["version"], int) and by_name["version"] is not True


def test_a_prepared_pair_writes_without_preparing_again(monkeypatch):
    """The values are prepared when the pair is built, so a caller that takes a
    write lock after that holds it for the statements alone."""
    application = ApplicationFactory()
    flag = _flag(application)
    event = FlagEvent(application_id=application.pk, flag=flag, action="created", from_status="",
                      to_status="pending", actor_kind="system", created_at=flag.created_at)
    pair = rowsql.PreparedPair(flag, event, "flag")

    def refuse(*args, **kwargs):
        raise AssertionError("prepared again inside write()")

    monkeypatch.setattr(rowsql, "_values", refuse)
    with transaction.atomic():
        pair.write()
    stored = FlagEvent.objects.select_related("flag").get(pk=event.pk)
    assert stored.flag_id == flag.pk and stored.flag.created_at == flag.created_at
    assert stored.created_at == flag.created_at


def _application_row(application: Application):
    """The application's row as token_authenticate selects it, and the plan it used."""
    plan = rowsql.read_plan(Application, "a")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {plan.columns} FROM consoles_application a WHERE a.id = %s",  # noqa: S608
                       [application.pk])
        return plan, cursor.fetchone()


def test_instance_from_builds_what_from_db_builds():
    application = ApplicationFactory()
    plan, row = _application_row(application)
    fast = rowsql.instance_from(Application, plan, row)
    orm = Application.objects.get(pk=application.pk)
    assert type(fast) is Application and not fast._state.adding and fast._state.db == orm._state.db
    assert {k: v for k, v in fast.__dict__.items() if k != "_state"} == {
        k: v for k, v in orm.__dict__.items() if k != "_state"
    }
    fast.name = "renamed"
    fast.save(update_fields=["name"])  # a working instance: saves as an update of its row
    assert Application.objects.get(pk=application.pk).name == "renamed"


def test_instance_from_runs_init_signals_when_something_listens():
    from django.db.models.signals import post_init

    application = ApplicationFactory()
    plan, row = _application_row(application)
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Application)
    try:
        built = rowsql.instance_from(Application, plan, row)
    finally:
        post_init.disconnect(receiver, sender=Application)
    assert seen == [built]


def _state_of(instance) -> dict:
    return {k: v for k, v in instance.__dict__.items() if k != "_state"}


def test_new_builds_what_the_constructor_builds_and_it_saves():
    application = ApplicationFactory()
    user = UserFactory(username="op")
    values = dict(public_id="fb_" + "c" * 16, application=application, region="prompt", problem="fabricated",
                  detector_scores={"hallucination": 0.5}, message_id="m-9", author_kind="operator",
                  author_user=user, author_token=None, created_at=datetime(2026, 1, 2, tzinfo=UTC),
                  updated_at=datetime(2026, 1, 2, tzinfo=UTC))
    fast, orm = rowsql.new(Flag, **values), Flag(**values)
    assert type(fast) is Flag and fast._state.adding and fast._state.db == orm._state.db
    assert _state_of(fast) == _state_of(orm)  # every default too: status, version, blank texts, null keys
    assert fast.application is application and fast.author_user is user  # the related objects, cached
    fast.save()
    assert Flag.objects.get(pk=fast.pk).author_user_id == user.pk


def test_new_refuses_what_the_constructor_refuses_and_runs_init_signals():
    from django.db.models.signals import post_init

    with pytest.raises(TypeError, match="unexpected keyword arguments: colour"):
        rowsql.new(Application, slug="x", colour="red")
    with pytest.raises(ValueError):
        rowsql.new(Flag, application=UserFactory())  # not an application, as the descriptor says
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Application)
    try:
        built = rowsql.new(Application, slug="y", name="Y")
    finally:
        post_init.disconnect(receiver, sender=Application)
    assert seen == [built]
