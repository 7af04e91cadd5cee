"""Helpers for expert requests: a compact trajectory summary and the reference-plan shape."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from awm_runtime._types import Message


def summarize_trajectory(messages: Sequence[Message], *, max_lines: int = 30, width: int = 160) -> str:
    """One line per agent action and result, newest last; enough for an expert to orient."""
    lines: list[str] = []
    for m in messages:
        if m.role == "assistant":
            if m.tool_calls:
                fn = m.tool_calls[0].get("function") or {}
                lines.append(f"turn {m.turn}: called {fn.get('name')}({str(fn.get('arguments'))[:width]})")
            elif m.content:
                lines.append(f"turn {m.turn}: said {m.content.strip()[:width]!r}")
        elif m.source in ("world", "expert", "nudge") or (m.source == "system" and m.turn is not None):
            text = (m.content or "").strip().replace("\n", " ")
            lines.append(f"  -> {m.source}: {text[:width]}")
    if len(lines) > max_lines:
        lines = [f"({len(lines) - max_lines} earlier lines omitted)", *lines[-max_lines:]]
    return "\n".join(lines) or "(no actions yet)"


def reference_plan(steps: Sequence[tuple[str, dict[str, Any]]], final_answer: str = "") -> dict[str, Any]:
    """The expert plan shape (BRIEF §3) built from a reference solution."""
    return {
        "plan": [{"tool": tool, "args": args, "purpose": f"step {i + 1} of {len(steps)}"}
                 for i, (tool, args) in enumerate(steps)],
        "tips": "Call the tools in this order with these arguments; skip steps you have already done.",
        "success_state": f"Report this answer: {final_answer}" if final_answer else "All listed changes are saved.",
    }


def plan_text(plan: dict[str, Any]) -> str:
    return json.dumps(plan, ensure_ascii=False)
