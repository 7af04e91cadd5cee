"""Turn a FastAPI app's OpenAPI document into tools the way fastapi-mcp does.

One tool per route: the name is the `operation_id`, the input schema is one flat object
merging path, query and body parameters, and results/errors use fastapi-mcp's texts.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from awm_runtime._types import ToolSpec

_METHODS = ("get", "post", "put", "delete", "patch")


@dataclass(frozen=True, slots=True)
class Operation:
    """How to turn a flat argument object back into an HTTP request."""

    path: str
    method: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]


def _resolve(node: Any, root: dict[str, Any], seen: frozenset[str] = frozenset()) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            return _resolve(target, root, seen | {ref})
        return {k: _resolve(v, root, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolve(v, root, seen) for v in node]
    return node


def _param_type(schema: dict[str, Any]) -> str:
    if "type" in schema:
        return str(schema["type"])
    for variant in schema.get("anyOf", ()):
        if isinstance(variant, dict) and variant.get("type") not in (None, "null"):
            return str(variant["type"])
    return "string"


def tools_from_openapi(openapi: dict[str, Any]) -> tuple[list[ToolSpec], dict[str, Operation]]:
    """The tool list and the operation map, in route order."""
    doc = _resolve(openapi, openapi)
    tools: list[ToolSpec] = []
    ops: dict[str, Operation] = {}
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if method not in _METHODS or not op.get("operationId"):
                continue
            name = op["operationId"]
            props: dict[str, Any] = {}
            required: list[str] = []
            path_params: list[str] = []
            query_params: list[str] = []
            for param in op.get("parameters", []):
                where, pname = param.get("in"), param.get("name")
                if where not in ("path", "query"):
                    continue
                schema = copy.deepcopy(param.get("schema", {}))
                schema["title"] = pname
                if param.get("description"):
                    schema["description"] = param["description"]
                schema.setdefault("type", "string" if where == "path" else _param_type(schema))
                props[pname] = schema
                if param.get("required", where == "path"):
                    required.append(pname)
                (path_params if where == "path" else query_params).append(pname)
            content = (op.get("requestBody") or {}).get("content") or {}
            if content:
                body = next(iter(content.values())).get("schema", {})
                for pname, pschema in (body.get("properties") or {}).items():
                    schema = copy.deepcopy(pschema)
                    schema["title"] = pname
                    schema.setdefault("type", _param_type(schema))
                    props[pname] = schema
                    if pname in body.get("required", ()):
                        required.append(pname)
            input_schema: dict[str, Any] = {"type": "object", "properties": props, "title": f"{name}Arguments"}
            if required:
                input_schema["required"] = required
            summary, desc = op.get("summary", ""), op.get("description", "")
            text = summary or f"{method.upper()} {path}"
            if desc:
                text += f"\n\n{desc}"
            tools.append(ToolSpec(name=name, description=text, input_schema=input_schema))
            ops[name] = Operation(path, method, tuple(path_params), tuple(query_params))
    return tools, ops


def split_arguments(op: Operation, arguments: dict[str, Any]) -> tuple[str, dict[str, Any], Any]:
    """(url path, query params, JSON body or None) from a flat argument object, as fastapi-mcp does."""
    args = dict(arguments)
    path = op.path
    for name in op.path_params:
        if name in args:
            path = path.replace("{" + name + "}", str(args.pop(name)))
    query = {name: args.pop(name) for name in op.query_params if name in args}
    body = args if args and op.method in ("post", "put", "patch") else None
    return path, query, body


def result_text(tool: str, status: int, body: bytes) -> tuple[str, bool]:
    """fastapi-mcp's texts: the JSON body at indent 2, or `Error calling …` for status >= 400."""
    raw = body.decode("utf-8", errors="replace")
    if status >= 400:
        return f"Error calling {tool}. Status code: {status}. Response: {raw}", True
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False), False
    except json.JSONDecodeError:
        return raw, False
