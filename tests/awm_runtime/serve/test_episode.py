"""OpenEnv's AWM semantics over our engine: SQL-mode verify with a judge, and what `done` keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from awm_runtime.models import ModelClient, ModelConfig
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.verifiers import Judge
from tests.awm_runtime.serve.conftest import running
from tests.awm_runtime.serve.openenv_client import AwmClient


def judge(url: str) -> Judge:
    os.environ["AWM_SERVE_TEST_JUDGE"] = "serve-judge-key"
    return Judge(ModelClient(ModelConfig(alias="loop-judge", model="openai/judge", api_base=url,
                                         api_key_env="AWM_SERVE_TEST_JUDGE"), "judge"), name="loop-judge")


async def test_sql_mode_verify_gathers_evidence_and_asks_the_judge(trap: Any) -> None:
    verdict = Reply(content='{"classification": "complete", "reason": "one apple was added"}')
    with FakeOpenAI(key="serve-judge-key", models=("judge",), default=verdict, max_lifetime_s=120) as server:
        async with running(trap, judge=judge(server.url)) as served, AwmClient(served.url) as env:
            reset = await env.reset(scenario="trap", task_idx=0)
            assert reset.observation.has_verifier == {"sql": True, "code": True}
            await env.call("add_item", name="apple")
            result = await env.call("verify", verifier_mode="sql", final_answer="Added it.")
        prompt = server.requests[-1]["messages"][1]["content"]
    assert (result.observation.reward_type, result.reward) == ("complete", 1.0)
    assert result.observation.verify_result == {"items_before": 2, "items_after": 3, "llm_judge": {
        "classification": "complete", "reasoning": "one apple was added"}}
    assert "Add an item named apple." in prompt and "add_item" in prompt and "Added it." in prompt
    assert "items_after" in prompt  # the evidence reached the judge


async def test_done_keeps_the_trajectory_and_with_keep_session_the_dbs(trap: Any, tmp_path: Path) -> None:
    async with running(trap, sessions_dir=tmp_path) as served, AwmClient(served.url) as env:
        await env.reset(scenario="trap", task_idx=0, episode_id="../../escape")
        await env.call("add_item", name="apple")
        first = await env.call("done")
        await env.reset(scenario="trap", task_idx=0, episode_id="kept")
        await env.call("add_item", name="plum")
        kept = await env.call("done", keep_session=True)
    check_kept(tmp_path, first, kept)


def check_kept(tmp_path: Path, first: Any, kept: Any) -> None:
    path = Path(first.observation.trajectory_path)
    assert path.parent.parent == tmp_path and path.parent.name.startswith("_.._escape-")  # never outside the dir
    assert first.observation.session_dir is None
    saved = json.loads(path.read_text())
    assert saved["scenario"] == "trap" and saved["steps"] == 2
    assert saved["trajectory"][0] == {"action": "call_tool", "tool_name": "add_item", "arguments": {"name": "apple"},
                                      "success": True, "result": '{\n  "count": 3\n}', "error": None}
    folder = Path(kept.observation.session_dir)
    assert sorted(p.name for p in folder.iterdir()) == ["trajectory.json", "trap.db", "trap_initial.db"]
    assert (folder / "trap.db").stat().st_size > 0
