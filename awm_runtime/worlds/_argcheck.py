"""A tool's arguments found valid against its input schema without jsonschema, when that is plain to see.

Every tool call's arguments are checked against the tool's input schema before its handler runs, as mcp's server
checks them; jsonschema's `iter_errors` and `best_match` cost ~13 µs a call on the bench scenario (issue 49), and
nearly every call is valid. A tool's input schema, generated from its route's parameters and body model, is nearly
always flat: properties with a type (or an `anyOf` of types, or a list of them), bounds, lengths, a pattern, an
`enum`, arrays of such items, `required` (all 254 tools of the built-in worlds). `plain_check(schema)` compiles
such a schema once into a predicate that answers True only when the arguments are valid for certain; False means
"not certain", and the caller then asks jsonschema, which also words the error. So a schema or a value beyond this
small subset costs what it always did, and the check can only ever let through what jsonschema lets through
(tests/awm_runtime/worlds/test_argcheck.py holds it to that with generated schemas and values).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Keywords that say nothing about validity (no format checker is passed to jsonschema, so `format` is one).
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "example", "format", "deprecated", "readOnly",
                          "writeOnly", "$comment"})
_VALUE_KEYS = frozenset({"type", "anyOf", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                         "minLength", "maxLength", "pattern", "items", "minItems", "maxItems",
                         "additionalProperties"}) | _ANNOTATIONS
_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS


def _number(v: Any) -> bool:
    return type(v) is int or type(v) is float


_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": _number,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "array": lambda v: type(v) is list,
    "object": lambda v: type(v) is dict,
}


def _length_check(sized: type[str] | type[list[Any]], bound: int, *, at_least: bool) -> Check:
    """A length bound on values of type `sized` (others pass: the keyword does not apply to them)."""
    if at_least:
        return lambda v: type(v) is not sized or len(v) >= bound
    return lambda v: type(v) is not sized or len(v) <= bound


def _value_check(schema: Any) -> Check | None:
    """A predicate for one property's schema, or None when the schema is beyond the plain subset."""
    if schema is True or schema == {}:
        return lambda v: True
    if not isinstance(schema, dict) or not set(schema) <= _VALUE_KEYS or schema.get("additionalProperties", True) \
            is not True:  # an object's extra keys allowed says nothing; anything else is beyond the subset
        return None
    checks: list[Check] = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not names or not all(isinstance(n, str) and n in _TYPES for n in names):
            return None
        kinds = [_TYPES[n] for n in names]
        checks.append(kinds[0] if len(kinds) == 1 else lambda v: any(k(v) for k in kinds))
    if "anyOf" in schema:
        options = [_value_check(s) for s in schema["anyOf"]] if isinstance(schema["anyOf"], list) else [None]
        if not options or any(o is None for o in options):
            return None
        subs: list[Check] = [o for o in options if o is not None]
        checks.append(lambda v: any(s(v) for s in subs))
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            return None
        allowed = [(type(e), e) for e in schema["enum"] if type(e) in (str, int, float, bool) or e is None]
        checks.append(lambda v: any(t is type(v) and e == v for t, e in allowed))
    for key, ok in (("minimum", lambda b: lambda v: not _number(v) or v >= b),
                    ("maximum", lambda b: lambda v: not _number(v) or v <= b),
                    ("exclusiveMinimum", lambda b: lambda v: not _number(v) or v > b),
                    ("exclusiveMaximum", lambda b: lambda v: not _number(v) or v < b)):
        if key in schema:
            if not _number(schema[key]):
                return None
            checks.append(ok(schema[key]))
    for key, sized in (("minLength", str), ("maxLength", str), ("minItems", list), ("maxItems", list)):
        if key in schema:
            if type(schema[key]) is not int:
                return None
            checks.append(_length_check(sized, schema[key], at_least=key.startswith("min")))
    if "pattern" in schema:
        try:
            search = re.compile(schema["pattern"]).search  # jsonschema's own test: re.search(pattern, value)
        except (re.error, TypeError):
            return None
        checks.append(lambda v: type(v) is not str or search(v) is not None)
    if "items" in schema:
        item = _value_check(schema["items"]) if isinstance(schema["items"], dict) else None
        if item is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item(x) for x in v))
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def plain_check(schema: Any) -> Check | None:
    """A predicate that is True only for arguments `schema` surely accepts, or None when the schema is beyond the
    plain subset (an object of typed properties with bounds, lengths, enums and `required`)."""
    if not isinstance(schema, dict) or not set(schema) <= _OBJECT_KEYS or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or extra not in (True, False):
        return None
    checks: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _value_check(sub)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)
    closed = extra is False

    def valid(arguments: Any) -> bool:
        if type(arguments) is not dict:
            return False
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if closed:
                    return False
            elif not check(value):
                return False
        return True

    return valid


__all__ = ["Check", "plain_check"]
