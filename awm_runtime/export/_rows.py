"""Rows in TRL's conversational format: chat messages, the two tools columns, and episode metadata.

Targets follow TRL's convention: every `assistant` message is the policy's own reply (expert,
nudge, world and system text only ever appear as `system`, `user` or `tool` messages). TRL has
no per-message loss switch, so a malformed policy reply cannot be kept as mere context: the
formats that train on whole conversations leave such episodes out (see `has_malformed`).
"""

from __future__ import annotations

import json
from typing import Any

from awm_runtime.export._read import RunSource

META = ("episode_id", "arm", "scenario", "task_idx", "repeat", "outcome", "end_reason", "verdict", "reward",
        "ask_style")


def meta(record: dict[str, Any], source: RunSource) -> dict[str, Any]:
    out = {k: record.get(k) for k in META}
    out["policy"] = (record.get("policy") or {}).get("alias")
    out["expert"] = (record.get("expert") or {}).get("alias")
    out["protocol"] = source.protocol(record)
    return out


def _arguments(raw: Any) -> str:
    """A call's arguments as a JSON string, as TRL and Arrow want them: the model's own text when it wrote one."""
    if isinstance(raw, str):
        return raw
    return json.dumps(raw if raw is not None else {}, ensure_ascii=False)


def trl_message(m: dict[str, Any]) -> dict[str, Any]:
    """One recorded message as a chat message for a chat template (our bookkeeping fields dropped)."""
    role = m["role"]
    out: dict[str, Any] = {"role": role, "content": m.get("content") or ""}
    if role == "assistant":
        calls = m.get("tool_calls") or []
        if calls:
            out["tool_calls"] = [{"id": c.get("id"), "type": "function",
                                  "function": {"name": (c.get("function") or {}).get("name") or "",
                                               "arguments": _arguments((c.get("function") or {}).get("arguments"))}}
                                 for c in calls]
        reasoning = m.get("reasoning")
        if reasoning and reasoning not in out["content"]:  # the server split it off: it is still model text
            out["reasoning_content"] = reasoning
    elif role == "tool":
        if m.get("name") is not None:
            out["name"] = m["name"]
        if m.get("tool_call_id") is not None:
            out["tool_call_id"] = m["tool_call_id"]
    return out


def drop_reasoning(row: Any) -> Any:
    """`row` without any message's `reasoning_content` (awm-export --drop-reasoning), at any depth: the
    conversational columns (messages, prompt, completion, chosen, rejected) and ATIF steps alike."""
    if isinstance(row, dict):
        return {k: drop_reasoning(v) for k, v in row.items() if k != "reasoning_content"}
    if isinstance(row, list):
        return [drop_reasoning(v) for v in row]
    return row


def trl_messages(messages: list[dict[str, Any]], *, tokens: bool = False) -> list[dict[str, Any]]:
    """`tokens`: keep the serving engine's completion token ids and logprobs on the policy's replies, and with
    tito the prompt tokens each turn added (`prompt_delta_ids`): every reply's delta then its ids, in order,
    is the episode's exact token sequence."""
    out = []
    for m in messages:
        msg = trl_message(m)
        if tokens and m.get("source") == "policy":
            msg["token_ids"] = m.get("token_ids")
            msg["logprobs"] = m.get("logprobs")
            if m.get("prompt_delta_ids") is not None:  # token in, token out: the exact sequence, turn by turn
                msg["prompt_delta_ids"] = m["prompt_delta_ids"]
        out.append(msg)
    return out


def tools_columns(record: dict[str, Any], source: RunSource) -> dict[str, str] | None:
    """`tools`: what a chat template must render to rebuild the prompts the policy was sent (the function
    tools for the native protocol; none for awm and hermes, whose system prompt already spells the tools
    out in the protocol's own words). `tool_schemas`: the offered tools whatever the protocol. None when
    the run predates tools.jsonl."""
    schemas = source.tools(record)
    if schemas is None:
        return None
    rendered = schemas if source.protocol(record) == "native" else []
    return {"tools": json.dumps(rendered, ensure_ascii=False), "tool_schemas": json.dumps(schemas, ensure_ascii=False)}


def has_malformed(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("source") == "policy" and m.get("format_error") for m in messages)


def first_policy_index(messages: list[dict[str, Any]]) -> int:
    """Where the policy's first reply is: everything before it is the episode's prompt."""
    return next((i for i, m in enumerate(messages) if m.get("source") == "policy"), len(messages))
