"""sft: TRL tool-calling conversations that load with datasets; only the policy's own replies are targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from awm_runtime.export import ExportStats, sft
from tests.awm_runtime.export.conftest import ADVICE, NUDGE, TOOL_SCHEMAS, episode, malformed, source


def load(tmp_path: Path, rows: list[dict[str, Any]]) -> datasets.Dataset:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return datasets.load_dataset("json", data_files=str(path), split="train")


def policy_texts(record: dict[str, Any]) -> list[Any]:
    return [(m.get("content") or "", m.get("tool_calls")) for m in record["messages"] if m["source"] == "policy"]


@pytest.mark.parametrize("protocol", ["native", "awm", "hermes"])
def test_rows_are_trl_conversations_whose_targets_are_the_policys_replies(tmp_path: Path, protocol: str) -> None:
    record = episode(protocol)
    stats = ExportStats()
    ds = load(tmp_path, list(sft([record], stats, source(), outcomes={"complete"})))
    assert len(ds) == 1 and {"messages", "tools", "tool_schemas", "scenario", "task_idx", "reward"} <= set(ds[0])
    row = ds[0]
    assistants = [m for m in row["messages"] if m["role"] == "assistant"]
    recorded = [m for m in record["messages"] if m["source"] == "policy"]
    assert len(assistants) == len(recorded) == 4
    for got, want in zip(assistants, recorded, strict=True):
        assert got["content"] == (want["content"] or "")  # awm/hermes: the exact text the model produced
        if want.get("tool_calls"):
            assert [c["function"]["arguments"] for c in got["tool_calls"]] == \
                   [c["function"]["arguments"] for c in want["tool_calls"]]
            assert all(isinstance(c["function"]["arguments"], str) for c in got["tool_calls"])
    # expert, nudge and world text are never an assistant turn
    for m in row["messages"]:
        if m["role"] == "assistant":
            assert ADVICE not in m["content"] and NUDGE not in m["content"]
    assert any(ADVICE in m["content"] for m in row["messages"] if m["role"] in ("tool", "user"))
    assert json.loads(row["tool_schemas"]) == TOOL_SCHEMAS
    # the chat template renders `tools` only where the model was sent them: the text protocols' system
    # prompt already spells the tools out
    assert json.loads(row["tools"]) == (TOOL_SCHEMAS if protocol == "native" else [])
    assert row["protocol"] == protocol and row["policy"] == f"p-{protocol}"


def test_malformed_replies_incomplete_episodes_and_runs_without_tool_sets_are_left_out() -> None:
    stats = ExportStats()
    rows = [episode("native"), episode("native", outcome="incomplete", episode_id="x"), malformed("hermes"),
            episode("native", episode_id="old", tools_id=None)]
    (line,) = list(sft(rows, stats, source(), outcomes={"complete"}))
    assert line["episode_id"] == "e-native"
    assert stats.records == 4 and stats.lines == 1
    assert stats.skipped == {"outcome incomplete": 1, "malformed policy reply (TRL trains every assistant turn)": 1,
                             "no tool schemas (run predates tools.jsonl)": 1}


def test_reasoning_the_server_split_off_is_kept_as_reasoning_content() -> None:
    record = episode("native")
    record["messages"][-1]["reasoning"] = "The note is gone."
    (line,) = list(sft([record], ExportStats(), source(), outcomes={"complete"}))
    assert line["messages"][-1] == {"role": "assistant", "content": "Deleted.",
                                    "reasoning_content": "The note is gone."}
    hermes = episode("hermes")
    hermes["messages"][2]["reasoning"] = "hmm"  # already inside the content's <think>: not repeated
    (line,) = list(sft([hermes], ExportStats(), source(), outcomes={"complete"}))
    assert "reasoning_content" not in line["messages"][2]
