"""`_argcheck.plain_check`: a tool's arguments found valid without jsonschema only when jsonschema would find them
valid too; a schema beyond the plain subset is left to jsonschema."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import validators

from awm_runtime.worlds._argcheck import plain_check

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-300, 300), st.floats(-300, 300, allow_nan=False),
                     st.text(max_size=6), st.sampled_from([0, 1, 1.0, True, False, "", "open", 2**70]))
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=2), st.dictionaries(st.text(max_size=2), _SCALARS,
                                                                               max_size=2))
_TYPE_NAMES = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])


@st.composite
def _property(draw: st.DrawFn, depth: int = 0) -> Any:
    schema: dict[str, Any] = {}
    if draw(st.booleans()):
        schema["type"] = draw(st.one_of(_TYPE_NAMES, st.lists(_TYPE_NAMES, max_size=3)))
    if depth == 0 and draw(st.booleans()):
        schema["anyOf"] = draw(st.lists(_property(depth=1), min_size=0, max_size=3))
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.one_of(st.integers(-5, 200), st.floats(-5, 200, allow_nan=False), st.booleans()))
    for key in ("minLength", "maxLength"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.integers(0, 4))
    if draw(st.integers(0, 4)) == 0:
        schema["enum"] = draw(st.lists(_SCALARS, max_size=4))
    if draw(st.integers(0, 4)) == 0:
        schema["pattern"] = draw(st.sampled_from(["^a", "b$", "[0-9]", "^[A-Za-z._-]+$"]))
    for key in ("minItems", "maxItems"):
        if draw(st.integers(0, 4)) == 0:
            schema[key] = draw(st.integers(0, 3))
    if depth == 0 and draw(st.integers(0, 3)) == 0:
        schema["items"] = draw(_property(depth=1))
    if draw(st.integers(0, 6)) == 0:
        schema["uniqueItems"] = True  # beyond the subset
    if draw(st.integers(0, 4)) == 0:
        schema["additionalProperties"] = draw(st.sampled_from([True, False, {"type": "string"}]))
    for key in ("title", "description", "default", "format", "example"):
        if draw(st.booleans()):
            schema[key] = draw(st.sampled_from(["x", "date-time", "email", 3]))
    return schema


@st.composite
def _schema(draw: st.DrawFn) -> dict[str, Any]:
    properties = draw(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _property(), max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": properties, "title": "t"}
    schema["required"] = draw(st.lists(st.sampled_from(["a", "b", "c", "e"]), max_size=3, unique=True))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=500, deadline=None)
@given(schema=_schema(), arguments=st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), _VALUES, max_size=5), _VALUES))
def test_plain_valid_is_jsonschema_valid(schema: dict[str, Any], arguments: Any) -> None:
    check = plain_check(schema)
    if check is not None and check(arguments):
        validator = validators.validator_for(schema)(schema)
        assert list(validator.iter_errors(arguments)) == []


def _bench_like() -> dict[str, Any]:
    return {"type": "object", "title": "list_bookingsArguments", "required": ["name"], "properties": {
        "status": {"anyOf": [{"type": "string"}, {"type": "null"}], "title": "status", "type": "string"},
        "limit": {"type": "integer", "maximum": 200, "minimum": 1, "default": 50, "title": "limit"},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "name": {"type": "string", "minLength": 1, "maxLength": 20},
        "kind": {"enum": ["a", "b", 3]},
        "ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
        "slug": {"type": "string", "pattern": "^[a-z]+$"}}}


def test_typical_valid_arguments_take_the_plain_path() -> None:
    check = plain_check(_bench_like())
    assert check is not None
    assert check({"name": "x"})
    assert check({"name": "x", "status": "open", "limit": 200, "amount": 0.5, "kind": 3, "unknown": [1],
                  "ids": [1, 2], "slug": "abc"})


def test_anything_doubtful_is_left_to_jsonschema() -> None:
    check = plain_check(_bench_like())
    assert check is not None
    for arguments in ({}, {"name": ""}, {"name": "x", "limit": 0}, {"name": "x", "limit": 1.0},
                      {"name": "x", "limit": True}, {"name": "x", "amount": 0}, {"name": "x", "kind": 3.0},
                      {"name": "x", "status": 3}, {"name": "y" * 21}, ["name"], None, {"name": "x", "ids": []},
                      {"name": "x", "ids": [1, 2, 3, 4]}, {"name": "x", "ids": [1, "2"]}, {"name": "x", "slug": "A"}):
        assert not check(arguments), arguments
    assert not plain_check({**_bench_like(), "additionalProperties": False})({"name": "x", "other": 1})  # type: ignore[misc]


def test_schemas_beyond_the_subset_have_no_plain_check() -> None:
    for schema in ({"type": "array"}, {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
                   {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
                   {"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}},
                   {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
                   {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
                   {"type": "object", "properties": {"a": {"type": "number", "exclusiveMinimum": True}}},
                   {"type": "object", "additionalProperties": {"type": "string"}},
                   {"type": "object", "properties": {"a": {"anyOf": []}}},
                   {"type": "object", "properties": {"a": {"type": []}}}, "not a schema",
                   {"type": "object", "properties": {"a": {"enum": "ab"}}},
                   {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2.0}}},
                   {"type": "object", "properties": {"a": {"type": "array", "minItems": "1"}}}):
        assert plain_check(schema) is None, schema


def test_a_property_that_allows_anything_is_plain() -> None:
    check = plain_check({"type": "object", "properties": {"a": {}, "b": True}, "required": ["a"]})
    assert check is not None and check({"a": [1, {"x": None}], "b": "anything"}) and not check({"b": 1})
