"""Authority-rule matching: a tool-name glob plus conditions on the call's arguments.

A condition maps one argument name to exactly one test::

    {"equals": value}     the argument is present and equal to value (JSON equality: 1 != true)
    {"in": [v1, v2]}      the argument is present and equal to one of the values
    {"pattern": "regex"}  the argument is present and the regex (Python's ``re`` syntax) is
                          found in it (strings as they are; other values as their JSON text)
    {"exists": bool}      the argument is present (true) or absent (false)

Every condition must hold for the rule to match.

A pattern is an operator's, but the text it searches is the model's: a pattern that
backtracks without end on some argument would hold the event loop the call is decided on.
So it runs on the ``regex`` engine with a deadline (``PATTERN_SECONDS``, the GIL released
meanwhile), and a search that runs out of time fails closed: the condition holds for a rule
that denies or asks (the call is held), and not for one that allows.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import regex as engine  # type: ignore[import-untyped]  # ships no type hints
from django.core.exceptions import ValidationError

__all__ = [
    "CONDITION_KINDS",
    "PATTERN_SECONDS",
    "Matcher",
    "compile_matcher",
    "validate_conditions",
]

logger = logging.getLogger(__name__)

CONDITION_KINDS = ("equals", "in", "pattern", "exists")
# How long one pattern condition may search one call's argument (on the event loop).
PATTERN_SECONDS = 0.05

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
                _compile(operand)
            except (engine.error, OverflowError, RecursionError, ValueError) as error:
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


def _compile(pattern: str) -> Any:
    return engine.compile(pattern, engine.VERSION0)


def _searcher(pattern: str, on_timeout: bool) -> Callable[[str], bool]:
    compiled = _compile(pattern)

    def found(text: str) -> bool:
        try:
            return compiled.search(text, concurrent=True, timeout=PATTERN_SECONDS) is not None
        except TimeoutError:
            logger.warning("pattern %r ran out of time; counted as %s", pattern, on_timeout)
            return on_timeout

    return found


def _test(argument: str, kind: str, operand: Any, on_timeout: bool) -> _Test:
    if kind == "exists":
        return lambda args: (argument in args) is operand
    if kind == "equals":
        return lambda args: argument in args and _same(args[argument], operand)
    if kind == "in":
        return lambda args: argument in args and any(_same(args[argument], v) for v in operand)
    if kind == "pattern":
        found = _searcher(operand, on_timeout)
        return lambda args: argument in args and found(_text(args[argument]))
    raise ValueError(f"unknown condition kind {kind!r}")


def compile_matcher(
    glob: str, conditions: Mapping[str, Any], *, on_timeout: bool = True
) -> Matcher:
    """Compile a glob and conditions once into ``match(tool_name, arguments) -> bool``.

    The glob is case-sensitive (``fnmatchcase``): tool names are exact identifiers.
    ``on_timeout`` is what a pattern condition that runs out of time counts as (``True``
    for a rule that restricts, ``False`` for one that allows: either way, the safer verdict).
    """
    name = re.compile(fnmatch.translate(glob))
    tests = []
    for argument, test in conditions.items():
        kind, operand = next(iter(test.items()))
        tests.append(_test(argument, kind, operand, on_timeout))

    def match(tool_name: str, arguments: Mapping[str, Any]) -> bool:
        if name.match(tool_name) is None:
            return False
        return all(test(arguments) for test in tests)

    return match
