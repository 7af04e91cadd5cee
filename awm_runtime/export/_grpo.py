"""`grpo`: TRL's prompt-only rows, one per complete GRPO group, and the group's rollouts with advantages.

The prompt rows feed `GRPOTrainer` (with `integrations.trl.rollout_func`, which runs the episodes);
the rollout rows are the recorded episodes themselves, for offline use: prompt, completion, reward,
advantage, and the serving engine's token ids and logprobs on the policy's replies when recorded.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from awm_runtime.export._read import ExportStats, RunSource
from awm_runtime.export._rows import first_policy_index, meta, tools_columns, trl_messages

Rollouts = Callable[[dict[str, Any]], None]


def _prompt(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The opening messages of a solo member (no expert hint in its prompt) when the group has one."""
    solo = [m for m in members if not (m.get("group") or {}).get("with_expert")]
    messages = (solo or members)[0].get("messages") or []
    return trl_messages([m for m in messages[:first_policy_index(messages)] if m.get("source") == "system"])


def _prompt_row(members: list[dict[str, Any]], source: RunSource) -> dict[str, Any]:
    first = members[0]
    info = first.get("group") or {}
    rewards = [float(m.get("reward") or 0.0) for m in members]
    return {
        "prompt": _prompt(members), **(tools_columns(first, source) or {"tools": "[]", "tool_schemas": "[]"}),
        "scenario": first["scenario"], "task_idx": first["task_idx"], "arm": first["arm"],
        "group_id": first["group_id"], "step": info.get("step"), "phase": info.get("phase"),
        "size": info.get("size"), "expert_members": info.get("expert_members"), "rewards": rewards,
        "reward_mean": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
        "completion_rate": sum(m.get("outcome") == "complete" for m in members) / len(members),
    }


def _rollout_row(member: dict[str, Any], source: RunSource) -> dict[str, Any]:
    messages = member.get("messages") or []
    cut = first_policy_index(messages)
    group = member.get("group") or {}
    return {
        "group_id": member["group_id"], **meta(member, source), "with_expert": group.get("with_expert"),
        "advantage": member.get("advantage"), "reward_components": json.dumps(member.get("reward_components") or {}),
        "prompt": trl_messages(messages[:cut]), "completion": trl_messages(messages[cut:], tokens=True),
        **(tools_columns(member, source) or {"tools": "[]", "tool_schemas": "[]"}),
    }


def grpo(records: Iterable[dict[str, Any]], stats: ExportStats, source: RunSource,
         rollouts: Rollouts | None = None) -> Iterator[dict[str, Any]]:
    """Yield prompt rows; hand each member's rollout row to `rollouts`. Members of a group are written
    together, so only a handful of groups is ever held open."""
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
        members.sort(key=lambda r: r["repeat"])
        stats.lines += 1
        yield _prompt_row(members, source)
        if rollouts is not None:
            for m in members:
                rollouts(_rollout_row(m, source))
    for members in open_groups.values():  # a run killed mid-write, then resumed: the group was re-run
        stats.skipped["partial group"] += len(members)
