"""Hot statements in fixed SQL: written once against the models' tables, compiled never again.

The ORM builds and compiles every query anew, 0.3 to 0.5 ms of CPU a statement, while SQLite
itself answers in a few tens of microseconds. On a run's start that compiling is most of the
cost, and it runs on the database thread that shares the GIL with the event loop streaming
every other run. The few statements on that path are written here instead: the SQL is built
once per database vendor from the models' metadata (names stay the models'), parameters are
prepared by the fields, and rows come back converted by the fields' own converters, exactly as
the ORM would return them. Nothing here knows the apps' models.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model
from django.db.models.expressions import Col

__all__ = ["Names", "Query", "column_of", "field_of", "insert", "prep", "update"]

type Converter = Callable[[Any, Any, BaseDatabaseWrapper], Any]


class Names:
    """Quoted table and column names of models, for writing a statement's SQL."""

    def __init__(self, wrapper: BaseDatabaseWrapper) -> None:
        self.vendor = wrapper.vendor
        self._quote = wrapper.ops.quote_name
        self._locks = wrapper.features.has_select_for_update

    def quote(self, name: str) -> str:
        """A quoted name."""
        return self._quote(name)

    def table(self, model: type[Model]) -> str:
        """The model's quoted table name."""
        return self._quote(model._meta.db_table)

    def field(self, field: Field[Any, Any], alias: str = "") -> str:
        """A field's quoted column (``alias.column`` with an alias)."""
        column = self._quote(column_of(field))
        return f"{alias}.{column}" if alias else column

    def column(self, model: type[Model], name: str, alias: str = "") -> str:
        """The quoted column of the model's field ``name`` (``alias.column`` with an alias)."""
        return self.field(field_of(model, name), alias)

    def columns(self, model: type[Model], names: Sequence[str], alias: str = "") -> str:
        """Fields' quoted columns, comma-separated."""
        return ", ".join(self.column(model, name, alias) for name in names)

    @property
    def for_update(self) -> str:
        """`` FOR UPDATE`` where the database locks rows (PostgreSQL), else nothing (SQLite
        locks the whole file for the transaction)."""
        return " FOR UPDATE" if self._locks else ""


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    """The model's field ``name``, one with a column (not a relation's reverse side)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} has no column")
    return field


def column_of(field: Field[Any, Any]) -> str:
    """A concrete field's column name."""
    if field.column is None:
        raise TypeError(f"{field!r} has no column")
    return field.column


def prep(model: type[Model], name: str, value: Any) -> Any:
    """``value`` as the database takes it for the field ``name`` (a UUID key on SQLite is hex)."""
    return field_of(model, name).get_db_prep_value(value, connection)


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    converters: tuple[tuple[int, tuple[Converter, ...], Col], ...]


class Query:
    """One statement: its SQL written by ``write`` (once per vendor), its result columns
    converted by ``fields`` (a model field, or ``None`` for a value taken as it comes; or a
    function giving them, called at first use, once every model is loaded)."""

    def __init__(
        self,
        write: Callable[[Names], str],
        fields: Sequence[Field[Any, Any] | None]
        | Callable[[], Sequence[Field[Any, Any] | None]] = (),
    ) -> None:
        self._write = write
        self._fields = fields
        self._compiled: dict[str, _Compiled] = {}

    def _compile(self) -> _Compiled:
        compiled = self._compiled.get(connection.vendor)
        if compiled is None:
            converters = []
            fields = self._fields() if callable(self._fields) else self._fields
            for index, field in enumerate(fields):
                if field is None:
                    continue
                column = field.get_col(field.model._meta.db_table)
                found = connection.ops.get_db_converters(column) + column.get_db_converters(
                    connection
                )
                if found:
                    converters.append((index, tuple(found), column))
            compiled = _Compiled(self._write(Names(connection)), tuple(converters))
            self._compiled[connection.vendor] = compiled
        return compiled

    def rows(self, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows, each value converted as the ORM converts its field."""
        compiled = self._compile()
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            found = cursor.fetchall()
        if not compiled.converters:
            return [tuple(row) for row in found]
        converted = []
        for row in found:
            values = list(row)
            for index, functions, column in compiled.converters:
                value = values[index]
                for function in functions:
                    value = function(value, column, connection)
                values[index] = value
            converted.append(tuple(values))
        return converted

    def execute(self, params: Sequence[Any] = ()) -> int:
        """Run the statement; the number of rows it changed."""
        with connection.cursor() as cursor:
            cursor.execute(self._compile().sql, params)
            return cursor.rowcount


@dataclass(frozen=True, slots=True)
class _Insert:
    sql: str
    fields: tuple[Field[Any, Any], ...]
    returning: bool


_inserts: dict[tuple[type[Model], int, str], _Insert] = {}


def insert(*objs: Model) -> None:
    """Insert ``objs`` (of one model) in one statement, as ``bulk_create`` does: primary keys
    set from the database when they have none; no save signals (the apps connect none to the
    models this serves). For a few rows: the statement has a placeholder per column and row."""
    if not objs:
        return
    model = type(objs[0])
    meta = model._meta
    key = (model, len(objs), connection.vendor)
    entry = _inserts.get(key)
    if entry is None:
        quote = connection.ops.quote_name
        auto = meta.pk is not None and meta.pk.db_returning
        fields = tuple(f for f in meta.local_concrete_fields if not (auto and f.primary_key))
        row = f"({', '.join(['%s'] * len(fields))})"
        sql = (
            f"INSERT INTO {quote(meta.db_table)} "
            f"({', '.join(quote(column_of(f)) for f in fields)}) "
            f"VALUES {', '.join([row] * len(objs))}"
        )
        if auto:
            sql += f" RETURNING {quote(column_of(meta.pk))}"
        entry = _inserts[key] = _Insert(sql, fields, auto)
    params = [
        f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in entry.fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(entry.sql, params)
        # Returned in the order inserted, as ``bulk_create`` relies on for both backends.
        keys = [found[0] for found in cursor.fetchall()] if entry.returning else []
    for index, obj in enumerate(objs):
        if entry.returning:
            obj.pk = keys[index]
        obj._state.adding = False
        obj._state.db = connection.alias


@dataclass(frozen=True, slots=True)
class _Update:
    sql: str
    sets: tuple[Field[Any, Any], ...]
    filters: tuple[Field[Any, Any], ...]


_updates: dict[tuple[type[Model], tuple[str, ...], tuple[str, ...], str], _Update] = {}


def update(model: type[Model], where: Mapping[str, Any], values: Mapping[str, Any]) -> int:
    """``model.objects.filter(**where).update(**values)`` for equality filters on the model's
    own fields and plain values; the number of rows changed."""
    key = (model, tuple(where), tuple(values), connection.vendor)
    entry = _updates.get(key)
    if entry is None:
        meta, quote = model._meta, connection.ops.quote_name
        sets = tuple(field_of(model, name) for name in values)
        filters = tuple(field_of(model, name) for name in where)
        sql = (
            f"UPDATE {quote(meta.db_table)} SET "
            + ", ".join(f"{quote(column_of(f))} = %s" for f in sets)
            + " WHERE "
            + " AND ".join(f"{quote(column_of(f))} = %s" for f in filters)
        )
        entry = _updates[key] = _Update(sql, sets, filters)
    params = [
        f.get_db_prep_save(value, connection)
        for f, value in zip(entry.sets, values.values(), strict=True)
    ]
    params += [
        f.get_db_prep_value(value, connection)
        for f, value in zip(entry.filters, where.values(), strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(entry.sql, params)
        return cursor.rowcount
