"""Simulated models (sim/oracle, sim/novice): answered in-process (sim/_transport.py), or through litellm's custom
provider `sim` (sim/_provider.py) for an alias with transport = "litellm"."""

from __future__ import annotations

from typing import Any

from awm_runtime.models.sim._agent import Knobs, decide, render
from awm_runtime.models.sim._expert import CRITERIA_MARKER, EXPERT_MARKER, advise, is_expert_prompt, plan_for
from awm_runtime.models.sim._knowledge import KnownTask, find_task, teach


def _protocol(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    if tools:
        return "native"
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    return "awm" if "call_tool" in system else "hermes"


def simulate(model: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """One simulated chat completion as an OpenAI-shaped message dict."""
    name = model.split("/", 1)[-1]
    if is_expert_prompt(messages):
        return {"role": "assistant", "content": advise(messages)}
    tools = params.get("tools")
    protocol = _protocol(messages, tools)
    knobs = Knobs.of(name, params.get("sim"))
    tool_names = {t["function"]["name"] for t in tools or ()}
    act = decide(name, messages, tool_names, protocol, int(params.get("seed") or 0), knobs)
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    content, tool_calls = render(act, protocol, turn, knobs)
    return {"role": "assistant", "content": content, "tool_calls": tool_calls or None}


__all__ = ["CRITERIA_MARKER", "EXPERT_MARKER", "KnownTask", "find_task", "plan_for", "simulate", "teach"]
