"""JSON bodies taken as the schema types them, not as DRF coerces form posts.

DRF's fields read a form's strings: a ``BooleanField`` takes ``0`` and ``"yes"``, a
``CharField`` turns ``0`` into ``"0"``, a related slug reads ``""`` as none. The schema
promises a JSON boolean, a string, a non-empty slug; a JSON body that sends otherwise is a
``400`` naming the field, as the schema says (multipart and form bodies keep DRF's reading); so
is a field the operation does not take.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.relations import RelatedField

__all__ = ["READ_ONLY", "UNKNOWN", "StrictJson"]

UNKNOWN = "Unknown field: this operation does not take it."
READ_ONLY = "This field is read-only."


def _problem(field: serializers.Field[Any, Any, Any, Any], value: object) -> str | None:
    """Why ``value`` is not of ``field``'s JSON type (``None``: it is)."""
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return "Must be a boolean (true or false)."
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return "Must be a string."
    if isinstance(field, RelatedField) and value == "":
        return "This field may not be blank."
    return None


class StrictJson:
    """A request serializer's mixin (first in its bases): a JSON body's fields must have the
    JSON type their schema gives (``null`` is the field's own to allow or refuse), and a field it
    does not take is refused by name (its schema says ``additionalProperties: false``)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping) and not isinstance(data, QueryDict):
            fields = cast("serializers.Serializer[Any]", self).fields
            errors = {
                name: [problem]
                for name, field in fields.items()
                if not field.read_only
                and data.get(name) is not None
                and (problem := _problem(field, data[name])) is not None
            }
            # A misspelt field silently ignored is a setting silently lost: name it instead.
            errors.update(
                (str(name), [UNKNOWN if name not in fields else READ_ONLY])
                for name in data
                if name not in fields or fields[name].read_only
            )
            if errors:
                raise serializers.ValidationError(errors)
        return cast(Any, super()).to_internal_value(data)
