"""Tool-call protocols: native function calling, AWM's list_tools/call_tool, and hermes tags."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any, Literal

from awm_runtime._prompts import render
from awm_runtime._types import ToolSpec
from policies.protocols._parse import (
    Parsed,
    decode_arguments,
    loads_lenient,
    parse_awm,
    parse_hermes,
    parse_native,
    strip_think,
)

ProtocolName = Literal["native", "awm", "hermes"]
PROTOCOLS: tuple[str, ...] = ("native", "awm", "hermes")


def parse_reply(protocol: str, content: str | None, tool_calls: list[dict[str, Any]] | None,
                tool_names: Collection[str], *, call_id: str = "call_0") -> Parsed:
    """Parse one model reply in `protocol`. The same function serves episodes and exports."""
    if protocol == "native":
        return parse_native(content, tool_calls or [], tool_names)
    if protocol == "awm":
        return parse_awm(content, tool_names, call_id=call_id)
    if protocol == "hermes":
        return parse_hermes(content, tool_names, call_id=call_id)
    raise ValueError(f"unknown protocol {protocol!r}")


def system_prompt(protocol: str, tools: Sequence[ToolSpec], *, scenario: str) -> str:
    if protocol == "hermes":
        listed = "\n".join(json.dumps(t.to_openai(), ensure_ascii=False) for t in tools)
        return render("policy_hermes.md", scenario=scenario, tools=listed)
    if protocol == "awm":
        hint = render("awm_expert_hint.md") if any(t.name == "ask_expert" for t in tools) else ""
        return render("policy_awm.md", scenario=scenario, expert_hint=hint)
    return render("policy_native.md", scenario=scenario)


__all__ = [
    "PROTOCOLS",
    "Parsed",
    "ProtocolName",
    "decode_arguments",
    "loads_lenient",
    "parse_reply",
    "strip_think",
    "system_prompt",
]
