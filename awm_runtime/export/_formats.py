"""The three export formats, each a generator of JSON lines over a streamed run directory.

- sft:   one conversation per episode; policy replies are targets, everything else is context.
- grpo:  one line per complete group: members with their rewards and group-normalised advantages.
- pairs: one line per intervention: the policy's action before the advice and its action after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from awm_runtime.export._read import action_of, chat_message, is_target


@dataclass(slots=True)
class ExportStats:
    records: int = 0
    lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


def _meta(record: dict[str, Any]) -> dict[str, Any]:
    return {k: record.get(k) for k in ("episode_id", "arm", "scenario", "task_idx", "repeat", "task", "outcome",
                                       "end_reason", "verdict", "reward", "ask_style")}


def _messages(record: dict[str, Any], *, tokens: bool = False) -> list[dict[str, Any]]:
    out = []
    for m in record.get("messages") or []:
        msg = chat_message(m, train=is_target(m))
        if tokens and msg["train"]:
            msg.update({k: m[k] for k in ("token_ids", "logprobs") if m.get(k) is not None})
        out.append(msg)
    return out


def sft(records: Iterable[dict[str, Any]], stats: ExportStats, *, outcomes: set[str]) -> Iterator[dict[str, Any]]:
    for record in records:
        stats.records += 1
        if record.get("outcome") not in outcomes:
            stats.skipped[f"outcome {record.get('outcome')}"] += 1
            continue
        messages = _messages(record)
        if not any(m["train"] for m in messages):
            stats.skipped["no policy target"] += 1
            continue
        stats.lines += 1
        yield {**_meta(record), "messages": messages}


def _group_line(members: list[dict[str, Any]]) -> dict[str, Any]:
    first = members[0]
    info = first.get("group") or {}
    members = sorted(members, key=lambda r: r["repeat"])
    return {
        "group_id": first["group_id"], "arm": first["arm"], "scenario": first["scenario"],
        "task_idx": first["task_idx"], "task": first.get("task"), "step": info.get("step"),
        "phase": info.get("phase"), "size": info.get("size"), "expert_members": info.get("expert_members"),
        "rewards": [m["reward"] for m in members], "advantages": [m.get("advantage") for m in members],
        "members": [{**_meta(m), "with_expert": (m.get("group") or {}).get("with_expert"),
                     "advantage": m.get("advantage"), "reward_components": m.get("reward_components"),
                     "retried": (m.get("group") or {}).get("retried"), "messages": _messages(m, tokens=True)}
                    for m in members],
    }


def grpo(records: Iterable[dict[str, Any]], stats: ExportStats) -> Iterator[dict[str, Any]]:
    """Members of a group are written together, so only a handful of groups is ever held open."""
    open_groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        stats.records += 1
        gid = record.get("group_id")
        if not gid or not record.get("group"):
            stats.skipped["not in a group"] += 1
            continue
        members = open_groups.setdefault(gid, [])
        members.append(record)
        if len(members) < int(record["group"]["size"]):
            continue
        del open_groups[gid]
        if not record["group"].get("complete", True):
            stats.skipped["incomplete group (member failed twice)"] += len(members)
            continue
        stats.lines += 1
        yield _group_line(members)
    for members in open_groups.values():  # a run killed mid-write, then resumed: the group was re-run
        stats.skipped["partial group"] += len(members)


def pairs(records: Iterable[dict[str, Any]], stats: ExportStats,
          protocols: dict[str, str]) -> Iterator[dict[str, Any]]:
    for record in records:
        stats.records += 1
        protocol = protocols.get(record.get("arm", ""))
        for pair in _interventions(record, protocol, stats):
            stats.lines += 1
            yield pair


def _result_after(messages: list[dict[str, Any]], index: int) -> dict[str, Any] | None:
    """What the policy saw right after its reply at `index` (the tool result or feedback), and whether
    it was an error: a failed tool call, or format-error feedback."""
    for m in messages[index + 1:]:
        if m.get("source") == "policy":
            return None
        if m.get("source") in ("world", "system", "expert"):
            error = bool(m.get("tool_error")) or bool(messages[index].get("format_error"))
            return {"text": m.get("content"), "source": m.get("source"), "error": error}
    return None


def _interventions(record: dict[str, Any], protocol: str | None, stats: ExportStats) -> Iterator[dict[str, Any]]:
    messages = record.get("messages") or []
    answers = {a.get("turn"): a for a in record.get("expert_answers") or []}
    for i, advice in enumerate(messages):
        if advice.get("source") != "expert":
            continue
        before = None
        for j in range(i - 1, -1, -1):  # the last policy action before the ask that was not the ask itself
            m = messages[j]
            if m.get("source") == "policy":
                action = action_of(m, protocol)
                if not (action["kind"] == "call" and action["tool"] == "ask_expert"):
                    before = (j, action)
                    break
        after = next(((k, action_of(messages[k], protocol)) for k in range(i + 1, len(messages))
                      if messages[k].get("source") == "policy"), None)
        if before is None or after is None:
            stats.skipped["advice with no action before or after it"] += 1
            continue
        (b, b_action), (a, a_action) = before, after
        answer = answers.get(advice.get("turn"), {})
        yield {
            **_meta(record), "turn": advice.get("turn"),
            "prompt": [chat_message(m, train=False) for m in messages[:b]],
            "before": {"message": chat_message(messages[b], train=False), "action": b_action,
                       "result": _result_after(messages, b)},
            "advice": {"text": advice.get("content"), "answered_by": answer.get("answered_by"),
                       "fallback": answer.get("fallback", False)},
            "after": {"message": chat_message(messages[a], train=is_target(messages[a])), "action": a_action,
                      "result": _result_after(messages, a)},
        }
