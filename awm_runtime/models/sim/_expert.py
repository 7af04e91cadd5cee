"""The simulated expert: answers an ask with the reference solution as a plan."""

from __future__ import annotations

import json
from typing import Any

from awm_runtime.episode import reference_plan
from awm_runtime.models.sim._knowledge import KnownTask, find_task

# The expert system prompt (prompts/expert_system.md) opens with this phrase.
EXPERT_MARKER = "You are an expert advisor"
# prompts/expert_criteria_system.md asks for success criteria instead of a plan.
CRITERIA_MARKER = "Distil the success criteria"


def is_expert_prompt(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("role") == "system" and EXPERT_MARKER in (m.get("content") or "") for m in messages)


def plan_for(known: KnownTask) -> dict[str, Any]:
    return reference_plan(known.steps, known.final_answer)


def criteria_for(known: KnownTask) -> str:
    lines = [f"- the effect of {tool}({json.dumps(args, sort_keys=True)}) is saved" for tool, args in known.steps]
    if known.final_answer:
        lines.append(f"- the final message says: {known.final_answer}")
    return "The task is done when:\n" + "\n".join(lines)


def advise(messages: list[dict[str, Any]]) -> str:
    prompt = "\n".join(m.get("content") or "" for m in messages if m.get("role") == "user")
    known = find_task(prompt)
    if any(CRITERIA_MARKER in (m.get("content") or "") for m in messages if m.get("role") == "system"):
        return criteria_for(known) if known is not None else "I cannot tell what done looks like for this task."
    if known is None:
        return json.dumps({"plan": [], "tips": "I do not know this task.", "success_state": ""})
    return json.dumps(plan_for(known))
