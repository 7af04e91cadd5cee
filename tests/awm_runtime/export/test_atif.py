"""atif: one ATIF-v1.6 trajectory per episode; expert consultations are subagent trajectories."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import datasets
import pytest

from awm_runtime.export import ExportStats, atif, validate
from tests.awm_runtime.export.conftest import ADVICE, NUDGE, TOOL_SCHEMAS, episode, malformed, source


@pytest.mark.parametrize("protocol", ["native", "awm", "hermes"])
def test_trajectories_validate_and_map_every_message(tmp_path: Path, protocol: str) -> None:
    stats = ExportStats()
    trajs = list(atif([episode(protocol), malformed(protocol)], stats, source()))
    assert stats.lines == 2 and all(validate(t) == [] for t in trajs)
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trajs))
    t = datasets.load_dataset("json", data_files=str(tmp_path / "a.jsonl"), split="train")[0]
    assert t["schema_version"] == "ATIF-v1.6" and t["session_id"] == f"e-{protocol}"
    assert t["agent"]["tool_definitions"] == TOOL_SCHEMAS and t["agent"]["extra"]["protocol"] == protocol
    steps = t["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert [s["source"] for s in steps] == ["system", "user", "agent", "user", "agent", "agent", "agent"]
    assert steps[3]["message"] == NUDGE and steps[3]["extra"] == {"awm_source": "nudge"}
    first, ask, listed, final = steps[2], steps[4], steps[5], steps[6]
    assert first["tool_calls"][0]["function_name"] == "delete_note"
    assert first["tool_calls"][0]["arguments"] == {"note_id": 999}  # an object, whatever the protocol
    (res,) = first["observation"]["results"]
    assert res["source_call_id"] == first["tool_calls"][0]["tool_call_id"]
    # the consultation: the ask's result points at an embedded subagent trajectory
    (advice,) = ask["observation"]["results"]
    (ref,) = advice["subagent_trajectory_ref"]
    sub = t["extra"]["subagent_trajectories"][0]
    assert ref == {"session_id": f"e-{protocol}-expert-0", "trajectory_path": "#/extra/subagent_trajectories/0"}
    assert sub["session_id"] == ref["session_id"] and [s["source"] for s in sub["steps"]] == ["user", "agent"]
    assert sub["steps"][0]["message"] == "stuck\n\n404" and ADVICE in sub["steps"][1]["message"]
    assert sub["steps"][1]["model_name"] == "oracle"
    # the engine's token ids and logprobs, where recorded
    assert listed["metrics"] == {"completion_tokens": 3, "completion_token_ids": [5, 6, 7],
                                 "logprobs": [-0.5, -0.1, -0.2]}
    assert final["message"] == "Deleted." and "tool_calls" not in final
    assert t["extra"]["outcome"] == "complete" and t["final_metrics"]["total_steps"] == len(steps)
    # the malformed reply: an agent step flagged in extra, its feedback an observation with no call id
    bad = next(s for s in json.loads(json.dumps(trajs[1]))["steps"] if (s.get("extra") or {}).get("format_error"))
    assert "tool_calls" not in bad and "source_call_id" not in bad["observation"]["results"][0]


def test_validate_reports_each_broken_rule() -> None:
    t = next(atif([episode("native")], ExportStats(), source()))
    broken = copy.deepcopy(t)
    broken["steps"][1]["step_id"] = 7
    broken["steps"][2]["observation"]["results"][0]["source_call_id"] = "nope"
    broken["steps"][0]["tool_calls"] = []
    broken["steps"][4]["observation"]["results"][0]["subagent_trajectory_ref"][0]["session_id"] = "other"
    broken["extra"]["subagent_trajectories"][0]["steps"][1]["step_id"] = 3
    problems = validate(broken)
    assert any("steps[1].step_id is 7" in p for p in problems)
    assert any("source_call_id 'nope' matches no tool_call_id" in p for p in problems)
    assert any("tool_calls is only for agent steps" in p for p in problems)
    assert any("does not resolve to session other" in p for p in problems)
    assert any("subagent_trajectories/0: steps[1].step_id is 3" in p for p in problems)
