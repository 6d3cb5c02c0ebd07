"""One-row reads and inserts for the ingest path, with the SQL built once per
model from its metadata.

Every integration's POST /api/v1/flags pays for one token lookup and two
inserts (the flag and its history row: `insert_pair`, one statement on
PostgreSQL). Through the ORM, most of that is Django compiling the same SQL again
on every call (about 0.35 ms per insert and 0.4 ms per `raw()` lookup here,
against well under 0.1 ms for the statements themselves), which kept ingest
under half the throughput of a bare endpoint (issue #3's target).

What the ORM does that matters is kept: values are prepared by each field
(`pre_save`, `get_db_prep_save`: auto_now_add, JSON, foreign keys), rows read
go through the backend's and the fields' converters (`from_db_value`), and
database errors arrive as `django.db.IntegrityError` and friends. What is
skipped: `Model.save()` and the `pre_save`/`post_save` signals. So `insert`
refuses a model that has a receiver for those signals, and is for models whose
`save()` adds nothing a new row needs (callers say so where they use it).
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.expressions import Col
from django.db.models.signals import post_save, pre_save


@dataclass(frozen=True)
class _InsertPlan:
    sql: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class _ReadPlan:
    columns: str  # "alias"."column", ... in concrete-field order
    attnames: tuple[str, ...]
    converters: tuple[tuple[int, tuple[Callable, ...], Col], ...]  # (position, converters, expression)


_inserts: dict[tuple[type[Model], str], _InsertPlan] = {}
_reads: dict[tuple[type[Model], str, str], _ReadPlan] = {}


def _insert_plan(model: type[Model]) -> _InsertPlan:
    key = (model, connection.vendor)
    plan = _inserts.get(key)
    if plan is None:
        opts = model._meta
        fields = tuple(f for f in opts.local_concrete_fields if f is not opts.auto_field)
        for f in fields:
            # A database default or a generated column would need the ORM's
            # expression handling; refuse rather than write something else.
            if f.generated or f.has_db_default():
                raise TypeError(f"rowsql.insert cannot write {model.__name__}.{f.name}: use the ORM.")
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        # Only quoted identifiers from the model's metadata are interpolated; values are bound.
        sql = f"INSERT INTO {quote(opts.db_table)} ({columns}) VALUES ({placeholders})"  # noqa: S608
        if opts.auto_field is not None:
            sql += f" RETURNING {quote(opts.auto_field.column)}"
        plan = _inserts[key] = _InsertPlan(sql=sql, fields=fields)
    return plan


def _refuse_signals(model: type[Model]) -> None:
    if pre_save.has_listeners(model) or post_save.has_listeners(model):
        raise TypeError(f"{model.__name__} has save signal receivers; rowsql.insert would skip them.")


def _values(instance: Model, fields: tuple[Field, ...]) -> list[Any]:
    """The new row's values, prepared by each field as Model.save() would."""
    return [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]


def _saved(instance: Model) -> Model:
    instance._state.adding = False
    instance._state.db = connection.alias
    return instance


def insert(instance: Model) -> Model:
    """INSERT `instance` as a new row (in the caller's transaction) and set its primary key."""
    model = type(instance)
    _refuse_signals(model)
    plan = _insert_plan(model)
    with connection.cursor() as cursor:
        cursor.execute(plan.sql, _values(instance, plan.fields))
        if model._meta.auto_field is not None:
            setattr(instance, model._meta.auto_field.attname, cursor.fetchone()[0])
    return _saved(instance)


def pair_is_one_statement() -> bool:
    """Whether `insert_pair` writes with one statement here (atomic without a transaction)."""
    return connection.vendor == "postgresql"


@dataclass(frozen=True)
class _PairPlan:
    sql: str
    parent_fields: tuple[Field, ...]
    child_fields: tuple[Field, ...]  # without the link: the statement reads it from the parent's row


_pairs: dict[tuple[type[Model], type[Model], str], _PairPlan] = {}


def insert_pair(parent: Model, child: Model, link: str) -> None:
    """INSERT `parent` and `child`, whose foreign key `link` is set to the new parent.

    On PostgreSQL it is one statement (the parent's INSERT as a data-modifying
    CTE, the child's key read from it): atomic on its own, and one round trip
    where a transaction would take four (BEGIN, two INSERTs, COMMIT). Elsewhere
    it is two inserts, which the caller's transaction makes one.
    """
    parent_model, child_model = type(parent), type(child)
    link_field = child_model._meta.get_field(link)
    if link_field.related_model is not parent_model or not link_field.concrete:
        raise TypeError(f"{child_model.__name__}.{link} is not a foreign key to {parent_model.__name__}.")
    if not pair_is_one_statement():
        insert(parent)
        setattr(child, link, parent)
        insert(child)
        return
    _refuse_signals(parent_model)
    _refuse_signals(child_model)
    key = (parent_model, child_model, link)
    if key not in _pairs:
        parent_plan, child_plan = _insert_plan(parent_model), _insert_plan(child_model)
        if parent_model._meta.auto_field is None or child_model._meta.auto_field is None:
            raise TypeError("rowsql.insert_pair needs auto primary keys on both models.")
        quote = connection.ops.quote_name
        parent_pk = quote(parent_model._meta.auto_field.column)
        child_pk = quote(child_model._meta.auto_field.column)
        # Only quoted identifiers from the models' metadata are interpolated; values are bound.
        parent_key = f"(SELECT {parent_pk} FROM parent_row)"  # noqa: S608
        values = ", ".join(parent_key if f is link_field else "%s" for f in child_plan.fields)
        columns = ", ".join(quote(f.column) for f in child_plan.fields)
        sql = (
            f"WITH parent_row AS ({parent_plan.sql}) "  # noqa: S608
            f"INSERT INTO {quote(child_model._meta.db_table)} ({columns}) VALUES ({values}) "
            f"RETURNING {child_pk}, {quote(link_field.column)}"
        )
        _pairs[key] = _PairPlan(sql=sql, parent_fields=parent_plan.fields,
                                child_fields=tuple(f for f in child_plan.fields if f is not link_field))
    plan = _pairs[key]
    with connection.cursor() as cursor:
        cursor.execute(plan.sql, _values(parent, plan.parent_fields) + _values(child, plan.child_fields))
        child_id, parent_id = cursor.fetchone()
    parent.pk = parent_id
    _saved(parent)
    setattr(child, link, parent)
    child.pk = child_id
    _saved(child)


def read_plan(model: type[Model], alias: str) -> _ReadPlan:
    """The select list of every concrete field of `model` under table alias `alias`."""
    key = (model, alias, connection.vendor)
    plan = _reads.get(key)
    if plan is None:
        quote = connection.ops.quote_name
        fields = model._meta.concrete_fields
        converters = []
        for position, f in enumerate(fields):
            expression = Col(alias, f)
            found = tuple(connection.ops.get_db_converters(expression) + f.get_db_converters(connection))
            if found:
                converters.append((position, found, expression))
        plan = _reads[key] = _ReadPlan(
            columns=", ".join(f"{quote(alias)}.{quote(f.column)}" for f in fields),
            attnames=tuple(f.attname for f in fields),
            converters=tuple(converters),
        )
    return plan


def instance_from(model: type[Model], plan: _ReadPlan, values: Sequence[Any]) -> Model:
    """A model instance from the columns `plan` selected, converted as the ORM would."""
    values = list(values)
    for position, converters, expression in plan.converters:
        value = values[position]
        for convert in converters:
            value = convert(value, expression, connection)
        values[position] = value
    return model.from_db(connection.alias, plan.attnames, values)
