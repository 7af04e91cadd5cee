"""The TRL rollout function against a real HTTP engine on loopback that reports token ids like vLLM.

The engine (`testing.with_token_ids`) answers as the simulated novice would, over HTTP, with a ChatML
template and a byte tokenizer, so every id decodes back to text the test can compare.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import pytest

from awm_runtime import ConfigError, Message
from awm_runtime.export import ExportStats, grpo, run_source
from awm_runtime.integrations.trl import Rollouts, env_reward, make_rollout_func
from awm_runtime.logs import iter_records, read_tool_sets
from awm_runtime.policies.protocols import ToolProtocol
from awm_runtime.testing import ChatML, FakeOpenAI, sim_responder, teach_builtin, with_token_ids

KEY = "loop-key-trl-0001"
G = 4  # num_generations


@pytest.fixture(scope="module")
def engine() -> Iterator[FakeOpenAI]:
    teach_builtin()
    with FakeOpenAI(key=KEY, models=("loop-model",), max_lifetime_s=600,
                    responder=with_token_ids(sim_responder("novice"))) as server:
        yield server


def config(tmp_path: Path, url: str, protocol: str) -> Path:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.loop-vllm]\nmodel = "hosted_vllm/loop-model"\napi_base = "{url}"\n'
                    f'api_key_env = "LOOP_KEY"\nprotocol = "{protocol}"\nmax_concurrency = 16\n')
    return path


@pytest.fixture
def rollouts(request: pytest.FixtureRequest, tmp_path: Path, engine: FakeOpenAI,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Rollouts]:
    monkeypatch.setenv("LOOP_KEY", KEY)
    with make_rollout_func(policy="loop-vllm", expert="sim/oracle", config_path=config(tmp_path, engine.url,
                           request.param), scenarios="shopfront*", tasks="0-1", preflight="quick",
                           reward="try-first", expert_ratio="0.5", out=tmp_path / "rollouts") as r:
        yield r


def transcript(record: dict[str, Any], tools: list[dict[str, Any]] | None) -> str:
    """What the engine saw and generated, up to the policy's last reply, rendered by its own template."""
    messages = [Message(**{k: v for k, v in m.items() if k in Message.model_fields}) for m in record["messages"]]
    last = max(i for i, m in enumerate(messages) if m.source == "policy")
    wire = ToolProtocol(record["policy"]["protocol"]).wire(messages[:last + 1])
    return ChatML.render(wire, tools, generation_prompt=False)[:-1]  # the last <|im_end|> ends the sequence


def segments(ids: list[int], mask: list[int], value: int) -> list[str]:
    out, run = [], []
    for t, m in zip(ids, mask, strict=True):
        if m == value:
            run.append(t)
        elif run:
            out.append(ChatML.decode(run))
            run = []
    return [*out, ChatML.decode(run)] if run else out


@pytest.mark.parametrize("rollouts", ["hermes"], indirect=True)
def test_ids_decode_to_the_transcript_and_the_mask_covers_exactly_the_policys_tokens(rollouts: Rollouts,
                                                                                     tmp_path: Path) -> None:
    rows = rollouts.rows()
    assert [(r["scenario"], r["task_idx"]) for r in rows] == [("shopfront_commerce", 0), ("shopfront_commerce", 1)]
    prompts = [r["prompt"] for r in rows for _ in range(G)]  # as GRPOTrainer's sampler repeats them
    out = rollouts(prompts, None)
    assert {k for k, v in out.items() if len(v) != len(prompts)} == set()
    records = {r["episode_id"]: r for r in iter_records(tmp_path / "rollouts")}
    tool_sets = read_tool_sets(tmp_path / "rollouts")
    assert len(records) == len(prompts)
    for i, eid in enumerate(out["episode_id"]):
        record = records[eid]
        ids = out["prompt_ids"][i] + out["completion_ids"][i]
        mask = [0] * len(out["prompt_ids"][i]) + out["env_mask"][i]
        assert len(out["completion_ids"][i]) == len(out["env_mask"][i]) == len(out["logprobs"][i])
        assert ChatML.decode(ids) == transcript(record, None)
        replies = [m for m in record["messages"] if m["source"] == "policy"]
        assert segments(ids, mask, 1) == [ChatML.render_assistant(m["content"], None) + "<|im_end|>" for m in replies]
        # every non-policy message is in the masked part, and no generated token is
        masked = "".join(segments(ids, mask, 0))
        assert all((m["content"] or "") in masked for m in record["messages"] if m["source"] != "policy")
        assert out["env_reward"][i] == record["reward"] and out["outcome"][i] == record["outcome"]
        assert out["turns"][i] == len(replies) and out["turns_dropped"][i] == 0
        assert ("ask_expert" in json.dumps(tool_sets[record["tools_id"]])) == out["with_expert"][i]
    assert out["with_expert"] == [True, True, False, False] * 2  # half of each group of 4
    assert env_reward(["c"] * len(prompts), out["env_reward"]) == out["env_reward"]
    # the written rollouts are a GRPO run: awm-export reads them as such
    prompts_rows = list(grpo(iter_records(tmp_path / "rollouts"), ExportStats(), run_source(tmp_path / "rollouts")))
    assert len(prompts_rows) == 2 and all(r["size"] == G for r in prompts_rows)


@pytest.mark.parametrize("rollouts", ["native"], indirect=True)
def test_native_rollouts_from_a_thread_and_from_exported_prompt_rows(rollouts: Rollouts, tmp_path: Path) -> None:
    """TRL calls from its own thread; awm-export's grpo rows (system + user prompt) resolve to their tasks."""
    prompt = [{"role": "system", "content": "You are an agent operating the Shopfront Commerce application"},
              {"role": "user", "content": rollouts.rows()[1]["prompt"][0]["content"]}]
    assert rollouts.task_for(prompt).task_idx == 1
    results: list[Any] = []
    t = threading.Thread(target=lambda: results.append(rollouts([prompt] * 2, None)))
    t.start()
    t.join(timeout=300)
    (out,) = results
    assert len(out["completion_ids"]) == 2 and all(sum(m) > 0 for m in out["env_mask"])
    assert all(len(c) == len(m) for c, m in zip(out["completion_ids"], out["env_mask"], strict=True))
    ds = datasets.Dataset.from_list(rollouts.rows())
    assert ds.column_names == ["prompt", "scenario", "task_idx"]
    with pytest.raises(ConfigError, match="matches no selected task"):
        rollouts([[{"role": "user", "content": "Write a poem."}]], None)


def test_a_simulated_policy_or_a_bad_ratio_is_refused_before_any_episode(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="real model policy"):
        make_rollout_func(policy="sim/novice", scenarios="shopfront*", tasks="0", preflight="off")
    with pytest.raises(ConfigError, match="expert-ratio"):
        make_rollout_func(policy="sim/novice", expert_ratio="lots")


def test_a_batch_past_its_timeout_is_cancelled_and_the_next_one_runs(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """TRL's thread gets TimeoutError (or Ctrl-C) and the batch's episodes stop; the loop thread lives on."""
    slow = threading.Event()
    slow.set()
    inner = with_token_ids(sim_responder("novice"))

    def respond(request: dict[str, Any]) -> Any:
        reply = inner(request)
        if slow.is_set():
            reply.delay_s = 30.0
        return reply

    monkeypatch.setenv("LOOP_KEY", KEY)
    teach_builtin()
    with FakeOpenAI(key=KEY, models=("loop-model",), max_lifetime_s=600, responder=respond) as server, \
            make_rollout_func(policy="loop-vllm", expert="none", config_path=config(tmp_path, server.url, "hermes"),
                              scenarios="shopfront*", tasks="0", preflight="off", timeout_s=2.0) as rollouts:
        prompt = rollouts.rows()[0]["prompt"]
        with pytest.raises(TimeoutError):
            rollouts([prompt] * 2, None)
        slow.clear()
        rollouts.timeout_s = 300.0
        out = rollouts([prompt] * 2, None)
        assert len(out["completion_ids"]) == 2 and all(sum(m) > 0 for m in out["env_mask"])
