"""The one tool-call parser, shared by the episode loop and the training export.

Every reply becomes exactly one `Parsed`: an action (a call, list_tools, a final answer)
or a typed format error, plus warnings that are counted but do not stop the action.
Nothing is dropped silently. The rules, and why, are in docs/policies.md.

A reply the server cut off at `max_tokens` (`finish_reason: length`) that is not a complete call is
`truncated`: neither a final answer nor a malformed call, since what it would have said is unknown.

Envelope first, leniency inside it: a call must sit in its protocol's envelope (`tool_calls`
for native; `<tool_call>` tags for hermes and awm, which native accepts as a fallback). Inside
the envelope the parser is lenient (list unwrap, arguments as string or object, `mcp_tool_`
prefix, `parameters` for `arguments`, near-JSON). A recognisable call outside its envelope is
a `schema_violation`, never a silent final answer.
"""

from __future__ import annotations

import contextlib
import difflib
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from awm_runtime._encodable import encodable_text
from awm_runtime._interfaces import Action, CallTool, FinalAnswer, ListTools, Malformed
from awm_runtime._types import ToolCall
from awm_runtime.policies.protocols._carry import DEFAULT_LIMITS, ArgumentLimits, argument_problem
from awm_runtime.policies.protocols._json import loads_call, loads_lenient, unfence

_OPEN_THINK, _CLOSE_THINK = "<think>", "</think>"
_OPEN = re.compile(r"<tool_call\s*>", re.I)
_CLOSE = re.compile(r"</tool_call\s*>", re.I)
_END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end|>")
MCP_PREFIX = "mcp_tool_"
_CALL_KEYS = {"name", "arguments", "parameters"}

# unwrap(name, arguments) -> (name, arguments) to check, or a finished Action.
Unwrap = Callable[[str, Any], "tuple[Any, Any] | Action"]


@dataclass(frozen=True, slots=True)
class Parsed:
    """One reply, parsed: the action, counted warnings, and the reasoning taken out of it."""

    action: Action
    warnings: tuple[str, ...] = ()
    reasoning: str | None = None

    @property
    def format_error(self) -> str | None:
        return self.action.kind if isinstance(self.action, Malformed) else None

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every format-error kind this reply adds to an episode's counts."""
        return ((self.format_error,) if self.format_error else ()) + self.warnings


@dataclass(frozen=True, slots=True)
class _Think:
    visible: str
    reasoning: str | None
    cut_off: bool  # an opened <think> never closed: the reply ended mid-thought
    hid_call: bool  # a <tool_call> appeared inside the reasoning


def _split_think(text: str) -> _Think:
    """One linear pass (replies can be huge and degenerate): closed blocks, an unclosed block at
    the end, and text before a lone </think> are reasoning; the rest is visible."""
    low = text.lower()
    parts: list[str] = []
    shown: list[str] = []
    pos, cut_off = 0, False
    while True:
        opened = low.find(_OPEN_THINK, pos)
        if opened < 0:
            shown.append(text[pos:])
            break
        shown.append(text[pos:opened])
        closed = low.find(_CLOSE_THINK, opened)
        if closed < 0:
            parts.append(text[opened + len(_OPEN_THINK):])
            cut_off = True
            break
        parts.append(text[opened + len(_OPEN_THINK):closed])
        pos = closed + len(_CLOSE_THINK)
    visible = "".join(shown)
    lone = visible.lower().rfind(_CLOSE_THINK)
    if lone >= 0:  # Qwen3/R1 templates put the opening <think> in the prompt: only the close is generated
        parts.insert(0, visible[:lone])
        visible = visible[lone + len(_CLOSE_THINK):]
    reasoning = "\n\n".join(p.strip() for p in parts if p.strip()) or None
    visible = visible.strip()
    while visible.endswith(_END_TOKENS):  # end-of-turn tokens left in by skip_special_tokens=False
        visible = visible[:visible.rindex("<|")].rstrip()
    return _Think(visible, reasoning, cut_off, bool(reasoning and _OPEN.search(reasoning)))


def strip_think(text: str) -> tuple[str, str | None]:
    """(visible text, reasoning): every <think> block taken out, including an unclosed one."""
    think = _split_think(text)
    return think.visible, think.reasoning


def _empty(think: _Think, finish_reason: str | None, separated: str | None) -> Malformed:
    """Why a reply is empty. `separated` is reasoning a server or litellm already took out of the
    content (vLLM's reasoning parser; litellm lifts a leading <think> block into reasoning_content)."""
    if think.hid_call or (separated and _OPEN.search(separated)):
        return Malformed("empty_reply", "the only tool call is inside <think>…</think>, where it is not "
                                        "executed; write the call after </think>")
    if finish_reason == "length":
        return Malformed("truncated", "the reply hit max_tokens before it answered or called a tool")
    if think.reasoning or separated:
        return Malformed("empty_reply", "the reply holds only <think> reasoning and no answer or tool call")
    return Malformed("empty_reply", "the reply was empty")


def _cut(finish_reason: str | None) -> str:
    return " (the reply hit max_tokens)" if finish_reason == "length" else ""


def decode_arguments(raw: Any, where: str) -> dict[str, Any] | Malformed:
    """Arguments as an object (a JSON string is accepted), or the format error they amount to."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = loads_lenient(raw)
        except ValueError:
            return Malformed("invalid_json", f"{where}: the arguments are not valid JSON")
        if isinstance(raw, str):  # double-encoded: a JSON string holding the JSON object
            with contextlib.suppress(ValueError):
                raw = loads_lenient(raw)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        return Malformed("schema_violation",
                         f"{where}: the arguments must be a JSON object, not {type(raw).__name__}")
    return raw


def check_call(call_id: str, name: Any, raw_args: Any, tool_names: Collection[str],
               limits: ArgumentLimits = DEFAULT_LIMITS) -> Action:
    """Validate one decoded call against the offered tools. Argument *values* are the world's
    business (a missing or mistyped argument comes back from the world as a tool error), except what
    no wire can carry (policies/protocols/_carry.py). `tool_names` may map each name to its input
    schema, whose integer bounds then apply."""
    if not isinstance(name, str) or not name.strip():
        return Malformed("missing_name", "the tool call has no tool name")
    name = name.strip()
    if name not in tool_names and name.startswith(MCP_PREFIX) and name[len(MCP_PREFIX):] in tool_names:
        name = name[len(MCP_PREFIX):]
    if name not in tool_names:
        close = difflib.get_close_matches(name, list(tool_names), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return Malformed("unknown_tool", f"there is no tool named {name!r}{hint}")
    args = decode_arguments(raw_args, name)
    if isinstance(args, Malformed):
        return args
    schema = tool_names.get(name) if isinstance(tool_names, Mapping) else None
    problem = argument_problem(args, name, limits, schema)
    if problem is not None:
        return problem
    return CallTool(ToolCall(id=call_id, name=name, arguments=args))


def unexecuted_problem(call: dict[str, Any], limits: ArgumentLimits = DEFAULT_LIMITS) -> Malformed | None:
    """Why a further (never executed) native call of a reply could not be carried either, if it could not."""
    held = call.get("function")
    fn: dict[str, Any] = held if isinstance(held, dict) else {}
    name = encodable_text(fn["name"])[0] if isinstance(fn.get("name"), str) else "the next call"
    args = decode_arguments(fn.get("arguments"), name)
    if isinstance(args, Malformed):
        return None  # malformed but plain text: carried as it is, and never run
    return argument_problem(args, name, limits)


def _call_parts(data: Any) -> tuple[Any, Any] | None:
    """(name, arguments) of a call object, accepting OpenAI's {"function": {...}} shape."""
    if not isinstance(data, dict):
        return None
    if "name" not in data and isinstance(data.get("function"), dict):
        data = data["function"]
    return data.get("name"), data["arguments"] if "arguments" in data else data.get("parameters")


def _decide(data: Any, warnings: tuple[str, ...], tool_names: Collection[str], call_id: str,
            unwrap: Unwrap | None, limits: ArgumentLimits) -> tuple[Action, tuple[str, ...]]:
    if isinstance(data, list):
        if not data:
            return Malformed("missing_name", "the tool call is an empty list"), warnings
        if len(data) > 1 and "multiple_calls" not in warnings:
            warnings = (*warnings, "multiple_calls")
        data = data[0]
    parts = _call_parts(data)
    if parts is None:
        return Malformed("schema_violation",
                         f"a tool call must be a JSON object, not {type(data).__name__}"), warnings
    name, args = parts
    if unwrap is not None and isinstance(name, str):
        mapped = unwrap(name.strip(), args)
        if not isinstance(mapped, tuple):
            return mapped, warnings
        name, args = mapped
    return check_call(call_id, name, args, tool_names, limits), warnings


def _bare_call(visible: str, tool_names: Collection[str], meta: Collection[str]) -> bool:
    """Is the whole visible reply a call written without its envelope (e.g. vllm#22337's
    `[{"name": "get_weather", "parameters": {...}}]` in content)? Only exact call objects naming
    an offered tool count, so a final answer that happens to be JSON stays a final answer."""
    text = unfence(visible)
    if not text.startswith(("{", "[")):
        return False
    try:
        data = loads_lenient(text)
    except ValueError:
        return False
    items = data if isinstance(data, list) and data else [data]
    for item in items:
        if isinstance(item, dict) and "name" not in item and isinstance(item.get("function"), dict):
            item = item["function"]
        if not (isinstance(item, dict) and isinstance(item.get("name"), str) and set(item) <= _CALL_KEYS):
            return False
        name = item["name"].strip().removeprefix(MCP_PREFIX)
        if name not in tool_names and name not in meta and item["name"].strip() not in tool_names:
            return False
    return True


def _from_tags(visible: str, think: _Think, tool_names: Collection[str], call_id: str, unwrap: Unwrap | None,
               finish_reason: str | None, limits: ArgumentLimits) -> Parsed:
    """The first <tool_call>…</tool_call> of the visible reply is the action."""
    opens = list(_OPEN.finditer(visible))
    if not opens:
        return Parsed(Malformed("unclosed_tag", "</tool_call> closes a call that was never opened with <tool_call>"),
                      reasoning=think.reasoning)
    warnings: tuple[str, ...] = ("multiple_calls",) if len(opens) > 1 else ()
    start = opens[0].end()
    close = _CLOSE.search(visible, start)
    if close is None and finish_reason == "length":
        return Parsed(Malformed("truncated", "the reply hit max_tokens inside <tool_call>, before the call was "
                                             "complete"), warnings, think.reasoning)
    if close is None or (len(opens) > 1 and opens[1].start() < close.start()):
        return Parsed(Malformed("unclosed_tag", "<tool_call> was opened but never closed"), warnings, think.reasoning)
    body = visible[start:close.start()]
    if not body.strip():
        return Parsed(Malformed("invalid_json", "the <tool_call> tags are empty"), warnings, think.reasoning)
    try:
        data, more = loads_call(body)
    except ValueError:
        return Parsed(Malformed("invalid_json", "the <tool_call> body is not valid JSON" + _cut(finish_reason)),
                      warnings, think.reasoning)
    if more and "multiple_calls" not in warnings:
        warnings = (*warnings, "multiple_calls")
    action, warnings = _decide(data, warnings, tool_names, call_id, unwrap, limits)
    return Parsed(action, warnings, think.reasoning)


def _from_calls(calls: list[dict[str, Any]], think: _Think, tool_names: Collection[str], call_id: str,
                unwrap: Unwrap | None, finish_reason: str | None, limits: ArgumentLimits) -> Parsed:
    """The first entry of OpenAI `tool_calls` is the action. The others are not run, but go back on
    the wire with the reply: arguments no wire can carry are counted there too (the agent is told
    in that call's tool result)."""
    fn = calls[0].get("function") or {}
    warnings: tuple[str, ...] = ("multiple_calls",) if len(calls) > 1 else ()
    for extra in calls[1:]:
        problem = unexecuted_problem(extra, limits)
        if problem is not None:
            warnings = (*warnings, problem.kind)
    data = {"name": fn.get("name"), "arguments": fn.get("arguments")}
    action, warnings = _decide(data, warnings, tool_names, calls[0].get("id") or call_id, unwrap, limits)
    if finish_reason == "length" and isinstance(action, Malformed) and action.kind == "invalid_json":
        action = Malformed("truncated", "the reply hit max_tokens inside the call's arguments")
    return Parsed(action, warnings, think.reasoning)


@dataclass(frozen=True, slots=True)
class _Rules:
    """What distinguishes the protocols: where a call lives, and how meta-calls unwrap."""

    prefer_calls: bool  # tool_calls win over tags in content
    envelope: str  # where a call belongs, for the schema_violation hint
    unwrap: Unwrap | None = None
    meta: tuple[str, ...] = ()


def _parse(rules: _Rules, content: str | None, tool_calls: list[dict[str, Any]] | None,
           tool_names: Collection[str], call_id: str, finish_reason: str | None, separated: str | None,
           limits: ArgumentLimits = DEFAULT_LIMITS) -> Parsed:
    think = _split_think(content or "")
    visible = think.visible
    calls = [c for c in tool_calls or [] if isinstance(c, dict)]
    tagged = bool(_OPEN.search(visible) or _CLOSE.search(visible))
    if calls and (rules.prefer_calls or not tagged):
        return _from_calls(calls, think, tool_names, call_id, rules.unwrap, finish_reason, limits)
    if not visible:
        return Parsed(_empty(think, finish_reason, separated), reasoning=think.reasoning)
    if tagged:
        return _from_tags(visible, think, tool_names, call_id, rules.unwrap, finish_reason, limits)
    if _bare_call(visible, tool_names, rules.meta):
        return Parsed(Malformed("schema_violation", f"the tool call is bare JSON; put it {rules.envelope}"),
                      reasoning=think.reasoning)
    if finish_reason == "length":  # a cut-off answer is not the answer the model meant to give
        return Parsed(Malformed("truncated", "the reply hit max_tokens before it ended, so it is neither a "
                                             "complete answer nor a tool call"), reasoning=think.reasoning)
    # The answer goes to the verifier, a judge and the record: a lone surrogate in it is written as U+FFFD.
    return Parsed(FinalAnswer(encodable_text(visible)[0]), reasoning=think.reasoning)


# Native: `tool_calls` hold the action. Hermes tags in content are accepted too: an open model
# served without a server-side tool parser writes its calls that way.
_NATIVE = _Rules(prefer_calls=True, envelope="in the tool_calls field (function calling)")
# Hermes: `<tool_call>{"name": <real tool>, "arguments": {...}}</tool_call>`. `tool_calls` are
# accepted when the content has no tags: a server-side parser (vLLM's hermes) lifted them out.
_HERMES = _Rules(prefer_calls=False, envelope="inside <tool_call></tool_call> tags")


def parse_native(content: str | None, tool_calls: list[dict[str, Any]] | None, tool_names: Collection[str], *,
                 call_id: str = "call_0", finish_reason: str | None = None, reasoning: str | None = None,
                 limits: ArgumentLimits = DEFAULT_LIMITS) -> Parsed:
    return _parse(_NATIVE, content, tool_calls, tool_names, call_id, finish_reason, reasoning, limits)


def parse_hermes(content: str | None, tool_names: Collection[str], *, call_id: str,
                 tool_calls: list[dict[str, Any]] | None = None, finish_reason: str | None = None,
                 reasoning: str | None = None, limits: ArgumentLimits = DEFAULT_LIMITS) -> Parsed:
    return _parse(_HERMES, content, tool_calls, tool_names, call_id, finish_reason, reasoning, limits)


AWM_META = ("list_tools", "call_tool")


def _awm_unwrap(name: str, args: Any) -> tuple[Any, Any] | Action:
    name = name.removeprefix(MCP_PREFIX) if name.removeprefix(MCP_PREFIX) in AWM_META else name
    if name == "list_tools":
        return ListTools()
    if name != "call_tool":
        return name, args  # the real tool name called directly (MCP habit): accepted
    decoded = decode_arguments(args, "call_tool")
    if isinstance(decoded, Malformed):
        return decoded
    inner = decoded.get("tool_name") or decoded.get("name")
    if not inner:
        return Malformed("missing_name", "call_tool needs a tool_name")
    if inner == "list_tools":
        return ListTools()
    return inner, decoded["arguments"] if "arguments" in decoded else decoded.get("parameters")


# AWM: list_tools() and call_tool(tool_name, arguments as a JSON string), in hermes tags.
_AWM = _Rules(prefer_calls=False, envelope="inside <tool_call></tool_call> tags", unwrap=_awm_unwrap, meta=AWM_META)


def parse_awm(content: str | None, tool_names: Collection[str], *, call_id: str,
              tool_calls: list[dict[str, Any]] | None = None, finish_reason: str | None = None,
              reasoning: str | None = None, limits: ArgumentLimits = DEFAULT_LIMITS) -> Parsed:
    return _parse(_AWM, content, tool_calls, tool_names, call_id, finish_reason, reasoning, limits)
