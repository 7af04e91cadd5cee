"""`pairs`: one DPO row per expert intervention, in TRL's conversational preference format.

`prompt` is the conversation up to the policy's last own action before it asked; `rejected` is that
action; `chosen` is the policy's first action after the advice, moved into the same context. A pair
is written only when the chosen action followed the advice and did better: the rejected action's
result was an error (a failed tool call or a format error) and the chosen one's was not. Both are
the policy's own replies; the advice itself is never in a row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from awm_runtime.export._read import ExportStats, RunSource, action_of
from awm_runtime.export._rows import meta, tools_columns, trl_message, trl_messages


def _result_after(messages: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    """What the policy saw right after its reply at `index`, and whether it was an error."""
    for m in messages[index + 1:]:
        if m.get("source") == "policy":
            return None
        if m.get("source") in ("world", "system", "expert"):
            error = bool(m.get("tool_error")) or bool(messages[index].get("format_error"))
            return {"text": m.get("content"), "error": error}
    return None


def _advised_tools(advice: str) -> set[str] | None:
    """The tools an expert's plan names ({"plan": [{"tool": ...}]}); None when the advice is free text."""
    try:
        plan = json.loads(advice)
    except ValueError:
        return None
    steps = plan.get("plan") if isinstance(plan, dict) else None
    if not isinstance(steps, list):
        return None
    return {str(s.get("tool")) for s in steps if isinstance(s, dict) and s.get("tool")}


def followed(action: dict[str, Any], advice: str) -> bool:
    """Whether an action follows the advice: a tool the plan names, or (free-text advice) a tool it mentions."""
    if action["kind"] == "list_tools":
        return "list_tools" in advice
    if action["kind"] != "call":
        return False
    tools = _advised_tools(advice)
    return action["tool"] in tools if tools is not None else action["tool"] in advice


def _interventions(record: dict[str, Any], source: RunSource, stats: ExportStats) -> Iterator[dict[str, Any]]:
    messages = record.get("messages") or []
    protocol = source.protocol(record)
    answers = {a.get("turn"): a for a in record.get("expert_answers") or []}
    tools = tools_columns(record, source) or {"tools": "[]", "tool_schemas": "[]"}
    for i, advice in enumerate(messages):
        if advice.get("source") != "expert":
            continue
        before = None
        for j in range(i - 1, -1, -1):  # the last policy action before the ask that was not the ask itself
            if messages[j].get("source") == "policy":
                action = action_of(messages[j], protocol)
                if not (action["kind"] == "call" and action["tool"] == "ask_expert"):
                    before = (j, action)
                    break
        after = next(((k, action_of(messages[k], protocol)) for k in range(i + 1, len(messages))
                      if messages[k].get("source") == "policy"), None)
        if before is None or after is None:
            stats.skipped["advice with no action before or after it"] += 1
            continue
        (b, b_action), (a, a_action) = before, after
        b_result, a_result = _result_after(messages, b), _result_after(messages, a)
        text = advice.get("content") or ""
        if not (b_result and b_result["error"]):
            stats.skipped["the action before the advice did not fail"] += 1
        elif not followed(a_action, text):
            stats.skipped["the action after the advice did not follow it"] += 1
        elif a_result is None or a_result["error"] or messages[a].get("format_error"):
            stats.skipped["the advised action did no better"] += 1
        else:
            answer = answers.get(advice.get("turn"), {})
            yield {
                "prompt": trl_messages(messages[:b]), "chosen": [trl_message(messages[a])],
                "rejected": [trl_message(messages[b])], **tools, **meta(record, source),
                "turn": advice.get("turn"), "answered_by": answer.get("answered_by"),
                "chosen_action": json.dumps(a_action), "rejected_action": json.dumps(b_action),
                "rejected_result": b_result["text"],
            }


def pairs(records: Iterable[dict[str, Any]], stats: ExportStats, source: RunSource) -> Iterator[dict[str, Any]]:
    for record in records:
        stats.records += 1
        for pair in _interventions(record, source, stats):
            stats.lines += 1
            yield pair
