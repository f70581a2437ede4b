"""The API's JSON parser: DRF's, with two refusals it lacked, each a ``400`` in the API's shape.

- JSON nested too deep: past about 10,000 levels ``json`` raises ``RecursionError`` (a
  100,000-deep array is 200 kB), which is no ``ValueError``, so DRF's parser let it through
  as an HTML 500; past ``orkestrel.storable.MAX_DEPTH`` it parses but is refused all the same.
- Text PostgreSQL cannot hold (``orkestrel.storable``): checked over the whole body once,
  here, so no field of any view reaches a query or a column with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework import exceptions, parsers
from rest_framework.exceptions import ErrorDetail

from orkestrel.storable import TOO_DEEP, Fault, first_fault

__all__ = ["JSONParser", "text_refusal"]


def text_refusal(fault: Fault) -> exceptions.ValidationError:
    """A ``ValidationError`` naming the field (nested as DRF nests a field's errors)."""
    errors: Any = [ErrorDetail(fault.message, code="invalid_text")]
    if not fault.path:
        return exceptions.ValidationError({"non_field_errors": errors})
    for step in reversed(fault.path):
        errors = {str(step): errors}
    return exceptions.ValidationError(errors)


class JSONParser(parsers.JSONParser):
    """DRF's, refusing JSON nested too deep and text no column can hold."""

    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError(f"JSON parse error - {TOO_DEEP}.") from None
        fault = first_fault(data)
        if fault is None:
            return data
        if fault.problem == TOO_DEEP:
            raise exceptions.ParseError(f"JSON parse error - {fault.message}")
        raise text_refusal(fault)
