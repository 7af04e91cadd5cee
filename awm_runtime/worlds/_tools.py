"""Turn a FastAPI app's OpenAPI document into tools exactly as fastapi-mcp 0.4 does.

One tool per route: the name is the `operation_id`; the input schema is one flat object of
path, then query, then body parameters; the description is the summary, the description and
fastapi-mcp's "### Responses" section. Calls split a flat argument object back into path,
query, headers and body, and results use the texts an MCP client of fastapi-mcp sees
(mcp 1.x's low-level server validates arguments first and turns exceptions into error text).
`tests/awm_runtime/worlds/test_tools.py` compares the listing with fastapi-mcp's own.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any

import orjson

_METHODS = ("get", "post", "put", "delete", "patch")
_REF_PREFIX = "#/components/schemas/"
_DISPLAY_DROP = ("allOf", "anyOf", "oneOf", "nullable", "discriminator", "readOnly", "writeOnly", "xml",
                 "externalDocs")
_STRING_EXAMPLES = {"date-time": "2023-01-01T00:00:00Z", "date": "2023-01-01", "email": "user@example.com",
                    "uri": "https://example.com"}


@dataclass(frozen=True, slots=True)
class Operation:
    """How to turn a flat argument object back into an HTTP request."""

    path: str
    method: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    header_params: tuple[str, ...] = ()


def resolve_refs(part: dict[str, Any], root: dict[str, Any], seen: frozenset[str] = frozenset()) -> dict[str, Any]:
    """fastapi-mcp's resolver: a `#/components/schemas/X` ref is merged into its node (X's keys win).

    Unlike fastapi-mcp, a self-referencing model stops at the cycle instead of recursing forever.
    """
    part = part.copy()
    ref = part.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX) and ref not in seen:
        target = root.get("components", {}).get("schemas", {}).get(ref.split("/")[-1])
        if isinstance(target, dict):
            part.pop("$ref")
            part.update(target.copy())
            seen = seen | {ref}
    for key, value in part.items():
        if isinstance(value, dict):
            part[key] = resolve_refs(value, root, seen)
        elif isinstance(value, list):
            part[key] = [resolve_refs(v, root, seen) if isinstance(v, dict) else v for v in value]
    return part


def single_type(schema: dict[str, Any]) -> str:
    """The one JSON type of a parameter: the first non-null member of an anyOf, else `type`, else string."""
    if "anyOf" in schema:
        types = [str(s["type"]) for s in schema["anyOf"] if isinstance(s, dict) and s.get("type")]
        return next((t for t in types if t != "null"), "string")
    return str(schema.get("type", "string"))


def clean_for_display(schema: dict[str, Any]) -> dict[str, Any]:
    schema = schema.copy()
    for key in _DISPLAY_DROP:
        schema.pop(key, None)
    if "properties" in schema:
        schema["properties"] = {k: clean_for_display(v) if isinstance(v, dict) else v
                                for k, v in schema["properties"].items()}
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema["items"] = clean_for_display(schema["items"])
    return schema


def example_of(schema: Any) -> Any:
    """fastapi-mcp's example generator: one plausible value per JSON type."""
    if not schema or not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind == "object":
        out = {}
        for name, prop in (schema.get("properties") or {}).items():
            value = example_of(prop)
            if value is not None:
                out[name] = value
        return out
    if kind == "array":
        item = example_of(schema["items"]) if "items" in schema else None
        return [item] if item is not None else []
    if kind == "string":
        return _STRING_EXAMPLES.get(schema.get("format", ""), schema.get("title", "string"))
    return {"integer": 1, "number": 1.0, "boolean": True}.get(str(kind))


def _responses_text(responses: dict[str, Any]) -> str:
    """The "### Responses" section, with only the first 2xx response (fastapi-mcp's default)."""
    codes = [str(c) for c in range(200, 300) if str(c) in responses]
    success: dict[str, Any] | None = responses[codes[0]] if codes else None
    shown: dict[str, Any] = {codes[0]: success} if codes else responses
    text = "\n\n### Responses:\n"
    for code, data in shown.items():
        text += f"\n**{code}**: {data.get('description', '')}"
        if data == success:
            text += " (Success Response)"
        for content_type, content in (data.get("content") or {}).items():
            if "schema" not in content:
                continue
            text += f"\nContent-Type: {content_type}"
            example = None
            if "examples" in content:
                example = next((e["value"] for e in content["examples"].values() if "value" in e), None)
            elif "example" in content:
                example = content["example"]
            if not example:
                example = example_of(clean_for_display(content["schema"]))
            if example:
                text += "\n\n**Example Response:**\n```json\n" + json.dumps(example, indent=2) + "\n```"
    return text


def _property(schema: dict[str, Any], name: str, description: str, default_type: str) -> dict[str, Any]:
    prop = schema.copy()
    prop["title"] = name
    if description:
        prop["description"] = description
    prop.setdefault("type", default_type)
    return prop


def _tool(path: str, method: str, op: dict[str, Any]) -> tuple[dict[str, Any], Operation]:
    name = op["operationId"]
    description = op.get("summary", "") or f"{method.upper()} {path}"
    if op.get("description"):
        description += f"\n\n{op['description']}"
    if op.get("responses"):
        description += _responses_text(op["responses"])
    params = op.get("parameters", [])
    by_place = {place: [p for p in params if p.get("in") == place] for place in ("path", "query", "header")}
    props: dict[str, Any] = {}
    required: list[str] = []
    for place, default_required in (("path", True), ("query", False)):
        for p in by_place[place]:
            schema = p.get("schema", {})
            default_type = str(schema.get("type", "string")) if place == "path" else single_type(schema)
            props[p["name"]] = _property(schema, p["name"], p.get("description", ""), default_type)
            if p.get("required", default_required):
                required.append(p["name"])
    content = (op.get("requestBody") or {}).get("content") or {}
    body_schema = content[next(iter(content))].get("schema", {}) if content else {}
    for pname, pschema in (body_schema.get("properties") or {}).items():
        props[pname] = _property(pschema, pname, "", single_type(pschema))
        if pname in body_schema.get("required", []):
            required.append(pname)
    input_schema: dict[str, Any] = {"type": "object", "properties": props, "title": f"{name}Arguments"}
    if required:
        input_schema["required"] = required
    tool = {"name": name, "description": description, "input_schema": input_schema}
    operation = Operation(path, method, *(tuple(p["name"] for p in by_place[k]) for k in ("path", "query", "header")))
    return tool, operation


def tools_from_openapi(openapi: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Operation]]:
    """The tools (as plain dicts: name, description, input_schema) and the operation map, in route order."""
    doc = resolve_refs(openapi, openapi)
    tools: list[dict[str, Any]] = []
    ops: dict[str, Operation] = {}
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if method in _METHODS and isinstance(op, dict) and op.get("operationId"):
                tool, ops[op["operationId"]] = _tool(path, method, op)
                tools.append(tool)
    return tools, ops


def split_arguments(op: Operation, arguments: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, str], Any]:
    """(path, query, headers, JSON body or None) from a flat argument object, as fastapi-mcp splits it."""
    args = dict(arguments)
    path = op.path
    for name in op.path_params:
        if name in args:
            path = path.replace("{" + name + "}", str(args.pop(name)))
    query = {name: args.pop(name) for name in op.query_params if name in args}
    headers = {name: str(args.pop(name)) for name in op.header_params if name in args}
    body = args if args and op.method in ("post", "put", "patch") else None
    return path, query, headers, body


def query_value(value: Any) -> str:
    """httpx's rendering of one query value (fastapi-mcp sends queries through httpx)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value)


_NOT_JSON = object()


def _writes_alike(value: Any) -> bool:
    """Whether orjson writes `value` as json.dumps does. They differ on floats that Python writes with an exponent
    (1e+16 against 1e16, 1e-05 against 1e-5); orjson reads an int past 64 bits as such a float."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind is not float or "e" not in repr(value)
    stack = [value]  # containers only: a scalar is judged where it is found (orjson gives exact types)
    pop, push = stack.pop, stack.append
    while stack:
        container = pop()
        for v in container.values() if type(container) is dict else container:
            kind = type(v)
            if kind is float:
                if "e" in repr(v):
                    return False
            elif kind is dict or kind is list:
                push(v)
    return True


def pretty_json(body: bytes) -> str | None:
    """`json.dumps(json.loads(body), indent=2, ensure_ascii=False)`, or None if the body is not JSON.

    orjson writes the same text ten times faster, except for floats Python writes with an exponent (and ints
    past 64 bits, which orjson reads as such floats) and NaN (which orjson refuses): bodies that hold those take
    Python's path. The values are checked once parsed, so a float written without an exponent but read as one
    (0.00001) is caught too; checking them costs less than a regular expression over the whole body."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = _NOT_JSON
    if value is not _NOT_JSON and _writes_alike(value):
        with contextlib.suppress(TypeError):
            return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def result_text(tool: str, status: int, body: bytes) -> tuple[str, bool]:
    """fastapi-mcp's texts: the JSON body at indent 2 (else the raw text), or `Error calling …` for 4xx/5xx."""
    raw = body.decode("utf-8", errors="replace")
    if 400 <= status < 600:
        return f"Error calling {tool}. Status code: {status}. Response: {raw}", True
    pretty = pretty_json(body)
    return (raw if pretty is None else pretty), False


def unknown_tool_text(tool: str) -> str:
    return f"Unknown tool: {tool}"


def invalid_arguments_text(message: str) -> str:
    return f"Input validation error: {message}"
