"""grpo: TRL prompt-only rows per complete group, and the members' rollouts with advantages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets

from awm_runtime.export import ExportStats, grpo
from tests.awm_runtime.export.conftest import episode, source


def member(gid: str, repeat: int, reward: float, adv: float | None, complete: bool = True,
           outcome: str = "complete") -> dict[str, Any]:
    group = {"step": 0, "size": 2, "expert_members": 1, "with_expert": repeat == 0, "phase": "balanced",
             "complete": complete, "retried": None}
    return episode("native", episode_id=f"{gid}-{repeat}", repeat=repeat, reward=reward, advantage=adv,
                   group_id=gid, group=group, outcome=outcome)


def test_prompt_rows_and_rollouts_load_as_trl_datasets(tmp_path: Path) -> None:
    rows = [member("g1", 1, 2.0, 1.0), member("g1", 0, 1.3, -1.0, outcome="incomplete"),  # out of order
            member("g2", 0, 0.0, None, False), member("g2", 1, 2.0, None, False),  # a member failed twice
            member("g3", 0, 2.0, 0.0),                                            # torn: its partner never landed
            episode("native")]                                                    # not a group run
    stats, rollouts = ExportStats(), []
    prompts = list(grpo(rows, stats, source(), rollouts.append))
    assert stats.skipped == {"incomplete group (member failed twice)": 2, "partial group": 1, "not in a group": 1}
    for name, data in (("prompts", prompts), ("rollouts", rollouts)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "prompts.jsonl"), split="train")
    (row,) = ds
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]  # TRL's conversational prompt-only shape
    assert (row["scenario"], row["task_idx"], row["group_id"]) == ("tiny_notes", 1, "g1")
    assert row["rewards"] == [1.3, 2.0] and row["reward_mean"] == 1.65 and row["completion_rate"] == 0.5
    assert json.loads(row["tools"])[0]["type"] == "function"
    rs = datasets.load_dataset("json", data_files=str(tmp_path / "rollouts.jsonl"), split="train")
    assert [r["repeat"] for r in rs] == [0, 1] and [r["advantage"] for r in rs] == [-1.0, 1.0]
    assert [r["with_expert"] for r in rs] == [True, False]
    first = rs[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["completion"][0]["role"] == "assistant"
    last = first["completion"][-1]
    assert last["token_ids"] == [1, 2] and last["logprobs"] == [-0.1, -0.2]
    assert all(m.get("token_ids") is None for m in first["completion"] if m["role"] != "assistant")
