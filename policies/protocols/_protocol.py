"""ToolProtocol: one tool-call protocol end to end — opening messages, parsing, result rendering.

The chat, replay and human policies all speak through it, so a transcript looks the same
whoever produced it, and a reply is parsed the same way whoever reads it back.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection, Sequence
from typing import Any

from awm_runtime._encodable import encodable, encodable_text
from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import CallTool, ListTools, Malformed, PolicyTurn
from awm_runtime._prompts import render
from awm_runtime._types import Message, Source, Task, ToolSpec
from awm_runtime.policies.protocols._carry import DEFAULT_LIMITS, ArgumentLimits
from awm_runtime.policies.protocols._json import loads_lenient
from awm_runtime.policies.protocols._parse import Parsed, parse_awm, parse_hermes, parse_native, unexecuted_problem

PROTOCOLS: tuple[str, ...] = ("native", "awm", "hermes")


def truncate(text: str, limit: int) -> str:
    """Cut a tool result to `limit` characters (0 = no limit), saying how much was cut."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"\n…[truncated {len(text) - limit} chars]"


def parse_reply(protocol: str, content: str | None, tool_calls: list[dict[str, Any]] | None,
                tool_names: Collection[str], *, call_id: str = "call_0", finish_reason: str | None = None,
                reasoning: str | None = None, limits: ArgumentLimits = DEFAULT_LIMITS) -> Parsed:
    """Parse one model reply in `protocol`. The single entry point for episodes and exports.

    `call_id` names the call for text protocols (native calls carry their own id); the chat
    policy uses `call_<number of earlier assistant messages>`. `finish_reason` decides one thing:
    a reply cut off at max_tokens (`length`) that is not a complete call is `truncated`. Policy
    messages record it, so an export re-parsing a recorded message (content, tool_calls and
    finish_reason) gets the same action the episode got. `reasoning` (what the server already
    separated from the content) only sharpens an error's detail. `limits` bound each call's arguments
    (size, depth); `tool_names` may map names to input schemas, whose integer bounds then apply.
    """
    kw: dict[str, Any] = {"call_id": call_id, "finish_reason": finish_reason, "reasoning": reasoning,
                          "limits": limits}
    if protocol == "native":
        return parse_native(content, tool_calls or [], tool_names, **kw)
    if protocol == "awm":
        return parse_awm(content, tool_names, tool_calls=tool_calls, **kw)
    if protocol == "hermes":
        return parse_hermes(content, tool_names, tool_calls=tool_calls, **kw)
    raise ConfigError(f"unknown tool-call protocol {protocol!r}; choose one of: {', '.join(PROTOCOLS)}")


def system_prompt(protocol: str, tools: Sequence[ToolSpec], *, scenario: str, kind: str = "app") -> str:
    """The policy's system prompt: an AWM app used for its current user, or (kind `mcp`) an MCP server's tools."""
    prefix = "policy_mcp_" if kind == "mcp" else "policy_"
    if protocol == "hermes":
        listed = "\n".join(json.dumps(t.to_openai(), ensure_ascii=False) for t in tools)
        return render(f"{prefix}hermes.md", scenario=scenario, tools=listed)
    if protocol == "awm":
        hint = render("awm_expert_hint.md") if any(t.name == "ask_expert" for t in tools) else ""
        return render(f"{prefix}awm.md", scenario=scenario, expert_hint=hint)
    return render(f"{prefix}native.md", scenario=scenario)


UNPARSED_CHARS = 2000  # what goes back on the wire of arguments that could not be used


def _wire_call(call: dict[str, Any], limits: ArgumentLimits = DEFAULT_LIMITS) -> dict[str, Any]:
    """A recorded call made safe to send back: `arguments` a JSON-object string. vLLM json.loads
    every earlier call's arguments and fails the whole request on one bad string, which would
    turn the model's format error into an infrastructure error on the next turn. Inside that string
    depth and number sizes do not matter; arguments over the size limit go back clipped, and a lone
    surrogate as U+FFFD (checks that cost nothing on plain ASCII: this runs for every call, every turn)."""
    fn = dict(call.get("function") or {})
    raw = fn.get("arguments")
    cached = isinstance(raw, str) and len(raw) <= _CACHED_CHARS
    fn["arguments"] = (_wire_arguments if cached else _arguments)(raw, limits.max_bytes)
    fn["name"] = fn.get("name") or ""
    return {**call, "type": "function", "function": fn}


def _arguments(raw: Any, max_bytes: int) -> str:
    try:
        value = loads_lenient(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
    except ValueError:
        value = None
    text = raw if isinstance(raw, str) else str(raw)
    if not isinstance(value, dict) or len(text) > max_bytes:
        value = {"unparsed_arguments": truncate(encodable_text(text)[0], UNPARSED_CHARS)}
    return encodable_text(json.dumps(value, ensure_ascii=False))[0]


# Every turn sends every earlier call back: the same argument strings, turn after turn (a string keeps its hash).
# Those of up to 2,048 characters are remembered, 4,096 of them at most (each string in and out: 64 MiB at the
# very worst, four bytes a character; a real call's arguments take a few hundred bytes).
_CACHED_CHARS = 2048
_wire_arguments = functools.lru_cache(maxsize=4096)(_arguments)


class ToolProtocol:
    """How one protocol opens an episode, reads a reply, and shows a result. Holds no episode state."""

    def __init__(self, name: str, *, tool_result_chars: int = 3000, tool_result_role: str | None = None,
                 limits: ArgumentLimits = DEFAULT_LIMITS) -> None:
        if name not in PROTOCOLS:
            raise ConfigError(f"unknown tool-call protocol {name!r}; choose one of: {', '.join(PROTOCOLS)}")
        if tool_result_role not in (None, "tool", "user"):
            raise ConfigError(f"tool_result_role must be 'tool' or 'user', got {tool_result_role!r}")
        self.name = name
        self.tool_result_chars = tool_result_chars
        self.tool_result_role = tool_result_role or ("tool" if name == "native" else "user")
        self.limits = limits
        self._native: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], list[dict[str, Any]]]] = {}
        self._schema_maps: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], dict[str, Any]]] = {}

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        system = system_prompt(self.name, tools, scenario=task.scenario_title or task.scenario, kind=task.kind)
        return [Message(role="system", content=system, source="system"),
                Message(role="user", content=render("task.md", task=task.text), source="system")]

    def native_tools(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]] | None:
        """The OpenAI function tools of `tools`, built once per tool set: episodes of a scenario share
        its ToolSpec objects, and converting 35 tools on every call cost ~0.1 ms. A lone surrogate in a world's
        tool text (a third-party server's description) goes out as U+FFFD, through any transport: it is the
        world's text, and must not fail every call of the scenario as a server error."""
        if self.name != "native":
            return None
        key = tuple(map(id, tools))
        held = self._native.get(key)
        if held is None:  # the value holds the specs, so their ids cannot be reused while cached
            if len(self._native) >= 1024:
                self._native.clear()
            held = self._native[key] = (tuple(tools), encodable([t.to_openai() for t in tools])[0])
        return held[1]

    @staticmethod
    def call_id(messages: Sequence[Message]) -> str:
        return f"call_{sum(1 for m in messages if m.role == 'assistant')}"

    def parse(self, content: str | None, tool_calls: list[dict[str, Any]] | None, tools: Sequence[ToolSpec], *,
              call_id: str, finish_reason: str | None = None, reasoning: str | None = None) -> Parsed:
        return parse_reply(self.name, content, tool_calls, self._schemas(tools), call_id=call_id,
                           finish_reason=finish_reason, reasoning=reasoning, limits=self.limits)

    def _schemas(self, tools: Sequence[ToolSpec]) -> dict[str, Any]:
        """name -> input schema of `tools`, built once per tool set (as `native_tools`)."""
        key = tuple(map(id, tools))
        held = self._schema_maps.get(key)
        if held is None:  # the value holds the specs, so their ids cannot be reused while cached
            if len(self._schema_maps) >= 1024:
                self._schema_maps.clear()
            held = self._schema_maps[key] = (tuple(tools), {t.name: t.input_schema for t in tools})
        return held[1]

    def wire(self, messages: Sequence[Message], model: str | None = None) -> list[dict[str, Any]]:
        """The transcript as the model is sent it (OpenAI chat format); to `model`, with the provider state its
        own replies returned (signed thinking blocks ..., models/_reasoning.py)."""
        out = []
        for m in messages:
            d = m.to_openai(model)
            if d.get("tool_calls"):
                d["tool_calls"] = [_wire_call(c, self.limits) for c in d["tool_calls"]]
            out.append(d)
        return out

    def observe(self, turn: PolicyTurn, text: str, source: Source) -> list[Message]:
        """Render a result in this protocol. Native replies need one tool message per call id."""
        action = turn.action
        if not isinstance(action, ListTools):
            text = truncate(text, self.tool_result_chars)
        calls = turn.message.tool_calls or []
        if calls:  # every call id on the wire must be answered by a tool message, whatever the protocol
            first = Message(role="tool", content=text, source=source, tool_call_id=calls[0].get("id"),
                            name=(calls[0].get("function") or {}).get("name"))
            skipped = [Message(role="tool", content=self._not_executed(c), source="system",
                               tool_call_id=c.get("id"), name=(c.get("function") or {}).get("name"))
                       for c in calls[1:]]
            return [first, *skipped]
        if isinstance(action, Malformed):
            return [Message(role="user", content=text, source=source)]
        if "multiple_calls" in turn.warnings:  # the model must learn that only the first call ran
            text = f"{text}\n\n{render('multiple_calls_note.md')}"
        # A tool message needs a tool_calls id to answer; text-protocol calls have none on the wire.
        if self.tool_result_role == "user" or self.name == "native":
            return [Message(role="user", content=render("tool_response.md", result=text), source=source)]
        name = action.call.name if isinstance(action, CallTool) else "list_tools"
        return [Message(role="tool", content=text, source=source, name=name)]

    def _not_executed(self, call: dict[str, Any]) -> str:
        """The tool result of a further call of a reply: not run, and why its arguments could not be either."""
        text = render("call_not_executed.md")
        problem = unexecuted_problem(call, self.limits)
        if problem is None:
            return text
        return f"{text}\n{render('call_not_carried.md', kind=problem.kind, detail=problem.detail)}"

    def render_call(self, name: str, arguments: dict[str, Any],
                    call_id: str) -> tuple[str | None, list[dict[str, Any]]]:
        """(content, tool_calls) of a reply that calls `name` in this protocol (for scripted policies)."""
        if self.name == "native":
            return None, [{"id": call_id, "type": "function",
                           "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}]
        if self.name == "awm":
            payload: dict[str, Any] = {"name": "call_tool", "arguments": {
                "tool_name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        else:
            payload = {"name": name, "arguments": arguments}
        return f"<tool_call>\n{json.dumps(payload, ensure_ascii=False)}\n</tool_call>", []

    def render_list_tools(self) -> str:
        return '<tool_call>\n{"name": "list_tools", "arguments": {}}\n</tool_call>'
