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

from django.db import connection, models
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.enums import Choices
from django.db.models.expressions import Col
from django.db.models.signals import post_init, post_save, pre_init, pre_save


@dataclass(frozen=True)
class _InsertPlan:
    sql: str
    fields: tuple[Field, ...]
    # Per field: (attname, the value types it stores as they are), or None when
    # every value goes through the field's own preparation (see _as_is).
    as_is: tuple[tuple[str, frozenset[type]] | None, ...]
    memo: tuple[bool, ...]  # per field: prepared once per value (see _memo)


# Fields whose preparation returns a value of these exact types unchanged
# (`to_python` of a str is the str; of an int, the int; the backends adapt ints,
# floats and None as they are). Exact classes only: a subclass may prepare more.
_PLAIN_TYPES: dict[type[Field], frozenset[type]] = {
    models.CharField: frozenset({str, type(None)}),
    models.TextField: frozenset({str, type(None)}),
    models.IntegerField: frozenset({int, type(None)}),
    models.PositiveIntegerField: frozenset({int, type(None)}),
    models.BigIntegerField: frozenset({int, type(None)}),
    models.PositiveBigIntegerField: frozenset({int, type(None)}),
    models.SmallIntegerField: frozenset({int, type(None)}),
    models.FloatField: frozenset({float, type(None)}),
    models.BooleanField: frozenset({bool, type(None)}),
}
# A foreign key stores its target's value: as is when the target is an integer key.
_INTEGER_KEYS = (models.AutoField, models.BigAutoField, models.SmallAutoField)


def _memo(f: Field) -> bool:
    """A moment field whose value is prepared once per write, however many columns
    share it (a new flag's created_at and updated_at and its event's created_at
    are one `now`): its preparation depends on the value alone."""
    return type(f) is models.DateTimeField and not f.auto_now and not f.auto_now_add


def _as_is(f: Field) -> tuple[str, frozenset[type]] | None:
    """Whether (and for which value types) `f`'s value can be bound without
    `pre_save` and `get_db_prep_save`: the same value they would return, at a
    fraction of the cost (each is a few calls per field, 30 fields a flag)."""
    if type(f) is models.ForeignKey and type(f.target_field) in _INTEGER_KEYS:
        return (f.attname, frozenset({int, type(None)}))
    types = _PLAIN_TYPES.get(type(f))
    return (f.attname, types) if types is not None else None


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
        plan = _inserts[key] = _InsertPlan(sql=sql, fields=fields, as_is=tuple(_as_is(f) for f in fields),
                                           memo=tuple(_memo(f) for f in fields))
    return plan


def _refuse_signals(model: type[Model]) -> None:
    if pre_save.has_listeners(model) or post_save.has_listeners(model):
        raise TypeError(f"{model.__name__} has save signal receivers; rowsql.insert would skip them.")


def _values(
    instance: Model, plan: _InsertPlan, skip: Field | None = None, memo: dict[int, Any] | None = None
) -> list[Any]:
    """The new row's values (but `skip`'s), prepared by each field as Model.save() would."""
    state = instance.__dict__
    values = []
    memo = {} if memo is None else memo
    for f, as_is, memoized in zip(plan.fields, plan.as_is, plan.memo, strict=True):
        if f is skip:
            continue
        if memoized:
            value = state.get(f.attname)
            if id(value) not in memo:
                # The value stays referenced by the instance, so its id is not reused meanwhile.
                memo[id(value)] = f.get_db_prep_save(value, connection)
            values.append(memo[id(value)])
            continue
        if as_is is not None:
            value = state.get(as_is[0], _MISSING)
            if type(value) in as_is[1]:
                values.append(value)
                continue
            if isinstance(value, Choices) and type(value._value_) in as_is[1]:
                values.append(value._value_)  # a TextChoices member stores its value
                continue
        values.append(f.get_db_prep_save(f.pre_save(instance, True), connection))
    return values


_MISSING = object()


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
        cursor.execute(plan.sql, _values(instance, plan))
        if model._meta.auto_field is not None:
            setattr(instance, model._meta.auto_field.attname, cursor.fetchone()[0])
    return _saved(instance)


def prepared_cursor():
    """A cursor for the hot path's fixed statements: on PostgreSQL one that has
    the server plan each statement once per connection (see the backend's
    `prepared_cursor`); elsewhere the usual one (SQLite compiles a statement
    once per connection anyway)."""
    prepared = getattr(connection, "prepared_cursor", None)
    return prepared() if prepared is not None else connection.cursor()


def pair_is_one_statement() -> bool:
    """Whether `insert_pair` writes with one statement here (atomic without a transaction)."""
    return connection.vendor == "postgresql"


@dataclass(frozen=True)
class _PairPlan:
    link: Field
    parent: _InsertPlan
    child: _InsertPlan
    sql: str  # PostgreSQL: both rows in one statement (see _pair_sql); elsewhere empty
    link_at: int  # where the link's value goes among the child's values


_pairs: dict[tuple[type[Model], type[Model], str, str], _PairPlan] = {}


def _pair_sql(parent_model, child_model, link_field, parent_plan: _InsertPlan, child_plan: _InsertPlan) -> str:
    """Both rows in one statement: the parent's INSERT as a data-modifying CTE, the
    child's key read from it (PostgreSQL)."""
    quote = connection.ops.quote_name
    parent_pk = quote(parent_model._meta.auto_field.column)
    child_pk = quote(child_model._meta.auto_field.column)
    # Only quoted identifiers from the models' metadata are interpolated; values are bound.
    parent_key = f"(SELECT {parent_pk} FROM parent_row)"  # noqa: S608
    values = ", ".join(parent_key if f is link_field else "%s" for f in child_plan.fields)
    columns = ", ".join(quote(f.column) for f in child_plan.fields)
    return (
        f"WITH parent_row AS ({parent_plan.sql}) "  # noqa: S608
        f"INSERT INTO {quote(child_model._meta.db_table)} ({columns}) VALUES ({values}) "
        f"RETURNING {child_pk}, {quote(link_field.column)}"
    )


def _pair_plan(parent_model: type[Model], child_model: type[Model], link: str) -> _PairPlan:
    key = (parent_model, child_model, link, connection.vendor)
    plan = _pairs.get(key)
    if plan is not None:
        return plan
    link_field = child_model._meta.get_field(link)
    if link_field.related_model is not parent_model or not link_field.concrete:
        raise TypeError(f"{child_model.__name__}.{link} is not a foreign key to {parent_model.__name__}.")
    if parent_model._meta.auto_field is None or child_model._meta.auto_field is None:
        raise TypeError("rowsql.insert_pair needs auto primary keys on both models.")
    parent_plan, child_plan = _insert_plan(parent_model), _insert_plan(child_model)
    sql = _pair_sql(parent_model, child_model, link_field, parent_plan, child_plan) if pair_is_one_statement() else ""
    plan = _pairs[key] = _PairPlan(link=link_field, parent=parent_plan, child=child_plan, sql=sql,
                                   link_at=child_plan.fields.index(link_field))
    return plan


class PreparedPair:
    """A parent row and a child row keyed to it, their values prepared now and
    written by `write()`: a caller that takes a write lock for the insert (SQLite's
    BEGIN IMMEDIATE) prepares first, so the lock is held for the statements alone."""

    def __init__(self, parent: Model, child: Model, link: str) -> None:
        _refuse_signals(type(parent))
        _refuse_signals(type(child))
        self.parent, self.child = parent, child
        self.plan = plan = _pair_plan(type(parent), type(child), link)
        memo: dict[int, Any] = {}
        self.parent_values = _values(parent, plan.parent, memo=memo)
        self.child_values = _values(child, plan.child, skip=plan.link, memo=memo)

    def write(self) -> None:
        """INSERT both rows (on PostgreSQL one statement, atomic on its own; elsewhere
        two, which the caller's transaction makes one) and set both keys."""
        plan, parent, child = self.plan, self.parent, self.child
        with connection.cursor() as cursor:
            if pair_is_one_statement():
                cursor.execute(plan.sql, self.parent_values + self.child_values)
                child_id, parent_id = cursor.fetchone()
            else:
                cursor.execute(plan.parent.sql, self.parent_values)
                parent_id = cursor.fetchone()[0]
                values = list(self.child_values)
                values.insert(plan.link_at, parent_id)
                cursor.execute(plan.child.sql, values)
                child_id = cursor.fetchone()[0]
        parent.pk = parent_id
        _saved(parent)
        setattr(child, plan.link.name, parent)
        child.pk = child_id
        _saved(child)


def insert_pair(parent: Model, child: Model, link: str) -> None:
    """INSERT `parent` and `child`, whose foreign key `link` is set to the new parent.

    On PostgreSQL it is one statement (the parent's INSERT as a data-modifying
    CTE, the child's key read from it): atomic on its own, and one round trip
    where a transaction would take four (BEGIN, two INSERTs, COMMIT). Elsewhere
    it is two inserts, which the caller's transaction makes one.
    """
    PreparedPair(parent, child, link).write()


def new(model: type[Model], **values: Any) -> Model:
    """`model(**values)`: a new, unsaved instance, built without the generic
    constructor's per-field bookkeeping (the ingest builds a flag of 30 fields
    on every post). Each field not given takes its default, a relation given as
    an object goes through its descriptor (key and cached object), and anything
    the constructor would run besides (init signals, an `__init__` of the
    model's own) makes it the constructor itself."""
    if pre_init.has_listeners(model) or post_init.has_listeners(model) or model.__init__ is not Model.__init__:
        return model(**values)
    instance = model.__new__(model)
    instance._state = ModelState()
    state = instance.__dict__
    for f in model._meta.concrete_fields:
        if f.name in values:
            value = values.pop(f.name)
            if f.is_relation:
                setattr(instance, f.name, value)
            else:
                state[f.attname] = value
        elif f.attname in values:
            state[f.attname] = values.pop(f.attname)
        else:
            state[f.attname] = f.get_default()
    if values:
        raise TypeError(f"{model.__name__}() got unexpected keyword arguments: {', '.join(values)}")
    return instance


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
    if pre_init.has_listeners(model) or post_init.has_listeners(model) or model.__init__ is not Model.__init__:
        return model.from_db(connection.alias, plan.attnames, values)
    # What `from_db` does for a full row (Model.__init__ with every concrete field
    # positionally: each attname set, in order, then the state), without the
    # generic constructor's per-field bookkeeping: the ingest builds the token and
    # its application from one row on every request.
    instance = model.__new__(model)
    instance.__dict__.update(zip(plan.attnames, values, strict=True))
    state = instance._state = ModelState()
    state.adding = False
    state.db = connection.alias
    return instance
