"""The one tool-call parser, shared by the episode loop and the training export.

Every reply becomes exactly one `Parsed`: an action (a call, list_tools, a final answer)
or a typed format error. Nothing is dropped silently.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from awm_runtime._protocols import Action, CallTool, FinalAnswer, ListTools, Malformed
from awm_runtime._types import ToolCall

_THINK = re.compile(r"<think>(.*?)</think>", re.S | re.I)
_OPEN_THINK = re.compile(r"^(.*?)</think>", re.S | re.I)  # Qwen3 templates may eat the opening tag
_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
MCP_PREFIX = "mcp_tool_"


@dataclass(frozen=True, slots=True)
class Parsed:
    action: Action
    warnings: tuple[str, ...] = ()
    reasoning: str | None = None

    @property
    def format_error(self) -> str | None:
        return self.action.kind if isinstance(self.action, Malformed) else None


def strip_think(text: str) -> tuple[str, str | None]:
    """(visible text, reasoning) with every <think>…</think> block removed."""
    parts = [m.strip() for m in _THINK.findall(text)]
    visible = _THINK.sub("", text)
    if "</think>" in visible.lower():
        m = _OPEN_THINK.match(visible)
        if m:
            parts.insert(0, m.group(1).strip())
            visible = visible[m.end():]
    return visible.strip(), ("\n\n".join(p for p in parts if p) or None)


def loads_lenient(text: str) -> Any:
    """JSON, or the near-JSON small models write: single quotes, trailing commas, Python literals."""
    text = text.strip()
    if text.startswith("```"):
        text = re.sub(r"^```\w*\s*|\s*```$", "", text)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    repaired = _TRAILING_COMMA.sub(r"\1", text)
    try:
        return json.loads(repaired)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(repaired.replace("true", "True").replace("false", "False").replace("null", "None"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not valid JSON") from None


def decode_arguments(raw: Any, where: str) -> dict[str, Any] | Malformed:
    """Arguments as an object (a JSON string is accepted), or the format error they amount to."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = loads_lenient(raw)
        except ValueError:
            return Malformed("invalid_json", f"{where}: arguments are not valid JSON")
    if not isinstance(raw, dict):
        return Malformed("schema_violation", f"{where}: arguments must be a JSON object, not {type(raw).__name__}")
    return raw


def check_call(call_id: str, name: Any, raw_args: Any, tool_names: Collection[str]) -> Action:
    """Validate one decoded call against the offered tools."""
    if not isinstance(name, str) or not name.strip():
        return Malformed("missing_name", "the tool call has no tool name")
    name = name.strip()
    if name.startswith(MCP_PREFIX) and name[len(MCP_PREFIX):] in tool_names:
        name = name[len(MCP_PREFIX):]
    if name not in tool_names:
        return Malformed("unknown_tool", f"there is no tool named {name!r}")
    args = decode_arguments(raw_args, name)
    if isinstance(args, Malformed):
        return args
    return CallTool(ToolCall(id=call_id, name=name, arguments=args))


def parse_tagged(content: str | None, tool_names: Collection[str], *, call_id: str,
                 unwrap: Any = None) -> Parsed:
    """Text protocols: the first <tool_call>…</tool_call> is the action; no tag is a final answer.

    `unwrap(name, arguments)` maps a meta-call (AWM's call_tool/list_tools) to (name, arguments)
    or returns an Action itself.
    """
    visible, reasoning = strip_think(content or "")
    if not visible.strip():
        return Parsed(Malformed("empty_reply", "the reply was empty"), reasoning=reasoning)
    blocks = _TAG.findall(visible)
    if not blocks:
        if "<tool_call>" in visible:
            return Parsed(Malformed("unclosed_tag", "<tool_call> was opened but never closed"), reasoning=reasoning)
        return Parsed(FinalAnswer(visible), reasoning=reasoning)
    warnings = ("multiple_calls",) if len(blocks) > 1 else ()
    try:
        data = loads_lenient(blocks[0])
    except ValueError:
        return Parsed(Malformed("invalid_json", "the <tool_call> body is not valid JSON"), warnings, reasoning)
    if isinstance(data, list):
        if not data:
            return Parsed(Malformed("missing_name", "the <tool_call> holds an empty list"), warnings, reasoning)
        warnings = ("multiple_calls",) if len(data) > 1 else warnings
        data = data[0]
    if not isinstance(data, dict):
        return Parsed(Malformed("schema_violation", "a tool call must be a JSON object"), warnings, reasoning)
    name, args = data.get("name"), data.get("arguments", data.get("parameters"))
    if unwrap is not None and isinstance(name, str):
        mapped = unwrap(name, args)
        if not isinstance(mapped, tuple):
            return Parsed(mapped, warnings, reasoning)
        name, args = mapped
    return Parsed(check_call(call_id, name, args, tool_names), warnings, reasoning)


def parse_native(content: str | None, tool_calls: list[dict[str, Any]], tool_names: Collection[str]) -> Parsed:
    """OpenAI function calling: `tool_calls` hold the action; none means a final answer."""
    visible, reasoning = strip_think(content or "")
    if not tool_calls:
        if not visible:
            return Parsed(Malformed("empty_reply", "the reply was empty"), reasoning=reasoning)
        if "<tool_call>" in visible:  # a native model that fell back to text tags
            return parse_tagged(visible, tool_names, call_id="call_0")
        return Parsed(FinalAnswer(visible), reasoning=reasoning)
    warnings = ("multiple_calls",) if len(tool_calls) > 1 else ()
    first = tool_calls[0]
    fn = first.get("function") or {}
    return Parsed(check_call(first.get("id") or "call_0", fn.get("name"), fn.get("arguments"), tool_names),
                  warnings, reasoning)


def parse_awm(content: str | None, tool_names: Collection[str], *, call_id: str) -> Parsed:
    """AWM protocol: list_tools() and call_tool(tool_name, arguments-as-JSON-string)."""

    def unwrap(name: str, args: Any) -> Any:
        if name == "list_tools":
            return ListTools()
        if name != "call_tool":
            # Models trained on MCP sometimes call the real tool name directly; accept it.
            return name, args
        decoded = decode_arguments(args, "call_tool")
        if isinstance(decoded, Malformed):
            return decoded
        inner = decoded.get("tool_name") or decoded.get("name")
        if not inner:
            return Malformed("missing_name", "call_tool needs a tool_name")
        return inner, decoded.get("arguments")

    return parse_tagged(content, tool_names, call_id=call_id, unwrap=unwrap)


def parse_hermes(content: str | None, tool_names: Collection[str], *, call_id: str) -> Parsed:
    return parse_tagged(content, tool_names, call_id=call_id)
