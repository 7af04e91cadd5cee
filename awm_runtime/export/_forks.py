"""Training data from a fork run: `fork-pairs` (DPO rows between branches of one state) and `ask-labels`.

Both read the run twice (streaming): a first pass keeps two numbers per continuation to decide which
branches and states make rows; a second pass writes them, holding only the messages of pairs still open.

- `fork-pairs`: per forked state whose continuations ended differently, one TRL conversational preference
  row: `prompt` is the shared prefix, `chosen` / `rejected` are the better / worse branch's first policy
  reply (`continuation="first"`) or its whole continuation (`"whole"`). Expert text is never a target: it is
  left out of continuations (the prefix may hold earlier advice, as context only), and a branch whose first
  policy reply is malformed is not used.
- `ask-labels`: one row per forked state (and expert) with both an ask and a solo continuation: the state's
  messages and tools, and the measured value of asking (ΔP(complete), Δreward), for a when-to-ask critic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

from awm_runtime.export._read import ExportStats, RunSource
from awm_runtime.export._rows import tools_columns, trl_messages
from awm_runtime.report import ForkStats

StateKey = tuple[str, int]
Records = Callable[[], Iterable[dict[str, Any]]]


def _state(record: dict[str, Any]) -> StateKey | None:
    fork = record.get("fork")
    return (str(fork["episode_id"]), int(fork["turn"])) if fork else None


def _score(record: dict[str, Any]) -> tuple[bool, float]:
    return (record["outcome"] == "complete", float(record.get("reward", 0.0)))


def _continuation(record: dict[str, Any], continuation: str) -> list[dict[str, Any]] | None:
    """The branch's target messages after the shared prefix (None: unusable as a target)."""
    rest = (record.get("messages") or [])[int(record["fork"]["prefix_messages"]):]
    first = next((m for m in rest if m.get("source") == "policy"), None)
    if first is None or first.get("format_error"):
        return None
    if continuation == "first":
        return [first]
    return [m for m in rest if m.get("source") != "expert"]


def fork_pairs(records: Records, stats: ExportStats, source: RunSource,
               continuation: Literal["first", "whole"] = "first") -> Iterator[dict[str, Any]]:
    """DPO rows between the best and the worst continuation of each forked state whose outcomes differ."""
    best: dict[StateKey, tuple[tuple[bool, float], str]] = {}
    worst: dict[StateKey, tuple[tuple[bool, float], str]] = {}
    for r in records():
        key = _state(r)
        if key is None or r["outcome"] == "error":
            continue
        item = (_score(r), str(r["episode_id"]))
        best[key] = max(best.get(key, item), item)
        worst[key] = min(worst.get(key, item), item)
    wanted: dict[str, tuple[StateKey, str]] = {}
    for key, (score, episode_id) in best.items():
        low_score, low_id = worst[key]
        if score == low_score or (score[0] == low_score[0] and abs(score[1] - low_score[1]) < 1e-12):
            stats.skipped["a forked state whose continuations all ended alike"] += 1
            continue
        wanted[episode_id], wanted[low_id] = (key, "chosen"), (key, "rejected")
    pending: dict[StateKey, dict[str, dict[str, Any]]] = {}
    for r in records():
        stats.records += 1
        hit = wanted.get(str(r["episode_id"]))
        if hit is None:
            continue
        key, side = hit
        pending.setdefault(key, {})[side] = r
        if len(pending[key]) < 2:
            continue
        pair = pending.pop(key)
        row = _pair_row(pair["chosen"], pair["rejected"], source, continuation)
        if row is None:
            stats.skipped["a branch whose first policy reply is malformed"] += 1
            continue
        stats.lines += 1
        yield row


def _pair_row(chosen: dict[str, Any], rejected: dict[str, Any], source: RunSource,
              continuation: str) -> dict[str, Any] | None:
    good, bad = _continuation(chosen, continuation), _continuation(rejected, continuation)
    if good is None or bad is None:
        return None
    fork = chosen["fork"]
    prefix = (chosen.get("messages") or [])[:int(fork["prefix_messages"])]
    row: dict[str, Any] = {"prompt": trl_messages(prefix), "chosen": trl_messages(good), "rejected": trl_messages(bad)}
    row.update(tools_columns(chosen, source) or {"tools": "[]", "tool_schemas": "[]"})
    row.update({"scenario": chosen["scenario"], "task_idx": chosen["task_idx"], "fork_run": fork["run"],
                "fork_episode_id": fork["episode_id"], "fork_turn": fork["turn"],
                "preceding": fork.get("preceding"), "continuation": continuation,
                "chosen_arm": chosen["arm"], "rejected_arm": rejected["arm"],
                "chosen_outcome": chosen["outcome"], "rejected_outcome": rejected["outcome"],
                "chosen_reward": chosen.get("reward"), "rejected_reward": rejected.get("reward")})
    return row


def ask_labels(records: Records, stats: ExportStats, source: RunSource) -> Iterator[dict[str, Any]]:
    """One row per forked state with ask and solo continuations: its messages and the value of asking."""
    forks = ForkStats()
    for r in records():
        forks.add(r)
    rows: dict[StateKey, list[dict[str, Any]]] = {}
    for row in forks.rows():
        rows.setdefault((row["episode_id"], row["turn"]), []).append(row)
    stats.skipped["a forked state without both an ask and a solo continuation"] += len(forks.states) - len(rows)
    for r in records():
        stats.records += 1
        key = _state(r)
        if key is None or key not in rows or r["outcome"] == "error":
            continue
        prefix = (r.get("messages") or [])[:int(r["fork"]["prefix_messages"])]
        tools = tools_columns(r, source) or {"tools": "[]", "tool_schemas": "[]"}
        for row in rows.pop(key):
            value = row["delta_complete"]
            stats.lines += 1
            yield {"messages": trl_messages(prefix), **tools, "scenario": row["scenario"],
                   "task_idx": row["task_idx"], "fork_run": r["fork"]["run"], "fork_episode_id": row["episode_id"],
                   "fork_turn": row["turn"], "preceding": row["preceding"], "expert": row["expert"],
                   "n_ask": row["n_ask"], "n_solo": row["n_solo"], "p_complete_ask": row["p_complete_ask"],
                   "p_complete_solo": row["p_complete_solo"], "value_of_asking": value,
                   "value_of_asking_reward": row["delta_reward"],
                   "label": "ask" if value > 0 else "solo" if value < 0 else "either"}
