"""Authority-rule matching: a tool-name glob plus conditions on the call's arguments.

A condition maps one argument name to exactly one test::

    {"equals": value}     the argument is present and equal to value (JSON equality: 1 != true)
    {"in": [v1, v2]}      the argument is present and equal to one of the values
    {"pattern": "regex"}  the argument is present and ``re.search`` finds the regex in it
                          (strings as they are; other values as their JSON text)
    {"exists": bool}      the argument is present (true) or absent (false)

Every condition must hold for the rule to match.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from django.core.exceptions import ValidationError

__all__ = ["CONDITION_KINDS", "Matcher", "compile_matcher", "validate_conditions"]

CONDITION_KINDS = ("equals", "in", "pattern", "exists")

Matcher = Callable[[str, Mapping[str, Any]], bool]
_Test = Callable[[Mapping[str, Any]], bool]


def validate_conditions(value: Any) -> None:
    """Check the shape of a conditions object (and that every regex compiles)."""
    if not isinstance(value, dict):
        raise ValidationError(
            'Enter a JSON object such as {"path": {"pattern": "^/etc/"}}.', code="invalid"
        )
    for argument, test in value.items():
        if not argument:
            raise ValidationError("An argument name is empty.", code="invalid")
        if not isinstance(test, dict) or len(test) != 1:
            raise ValidationError(
                "The condition on %(argument)s must be an object with exactly one of "
                "equals, in, pattern or exists.",
                code="invalid",
                params={"argument": argument},
            )
        ((kind, operand),) = test.items()
        params = {"argument": argument, "kind": kind}
        if kind not in CONDITION_KINDS:
            raise ValidationError(
                "Unknown condition %(kind)r on %(argument)s: use equals, in, pattern or exists.",
                code="unknown",
                params=params,
            )
        if kind == "in" and not isinstance(operand, list):
            raise ValidationError(
                "The in condition on %(argument)s needs a list of values.",
                code="invalid",
                params=params,
            )
        if kind == "exists" and not isinstance(operand, bool):
            raise ValidationError(
                "The exists condition on %(argument)s needs true or false.",
                code="invalid",
                params=params,
            )
        if kind == "pattern":
            if not isinstance(operand, str):
                raise ValidationError(
                    "The pattern condition on %(argument)s needs a regular expression string.",
                    code="invalid",
                    params=params,
                )
            try:
                re.compile(operand)
            except re.error as error:
                raise ValidationError(
                    "The pattern on %(argument)s is not a valid regular expression: %(error)s",
                    code="regex",
                    params={**params, "error": str(error)},
                ) from error


def _same(left: Any, right: Any) -> bool:
    """JSON equality: booleans never equal numbers, which Python's ``==`` would allow."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and left == right


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _test(argument: str, kind: str, operand: Any) -> _Test:
    if kind == "exists":
        return lambda args: (argument in args) is operand
    if kind == "equals":
        return lambda args: argument in args and _same(args[argument], operand)
    if kind == "in":
        return lambda args: argument in args and any(_same(args[argument], v) for v in operand)
    if kind == "pattern":
        regex = re.compile(operand)
        return lambda args: argument in args and regex.search(_text(args[argument])) is not None
    raise ValueError(f"unknown condition kind {kind!r}")


def compile_matcher(glob: str, conditions: Mapping[str, Any]) -> Matcher:
    """Compile a glob and conditions once into ``match(tool_name, arguments) -> bool``.

    The glob is case-sensitive (``fnmatchcase``): tool names are exact identifiers.
    """
    name = re.compile(fnmatch.translate(glob))
    tests = [_test(argument, *next(iter(test.items()))) for argument, test in conditions.items()]

    def match(tool_name: str, arguments: Mapping[str, Any]) -> bool:
        if name.match(tool_name) is None:
            return False
        return all(test(arguments) for test in tests)

    return match
