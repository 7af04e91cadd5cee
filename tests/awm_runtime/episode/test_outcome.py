"""Whose fault? How each way an episode can end becomes its outcome and end_reason (docs/runs.md).

The policy is the real chat policy over HTTP to the loopback server wherever a model is involved."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import EpisodeSpec, Harness, ModelError, Verdict, WorldError, run_episode
from awm_runtime._types import END_REASONS, INFRA_END_REASONS
from awm_runtime.episode import EpisodeLimits
from awm_runtime.episode._outcome import Ending, ending_for, settle
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.policies import ChatPolicy
from awm_runtime.rewards import awm
from awm_runtime.testing import FakeOpenAI, Reply
from tests.conftest import ScriptedPolicy, task_of

KEY = "k-outcome-0001"
# llama.cpp's answer to a prompt longer than its context (tools/server: ERROR_TYPE_EXCEED_CONTEXT_SIZE, HTTP 400).
LLAMA_CPP_OVERFLOW = json.dumps({"error": {
    "code": 400, "message": "request (15462 tokens) exceeds the available context size (8192 tokens), try "
                            "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 15462,
    "n_ctx": 8192}})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUTCOME_KEY", KEY)
    reset_limiters()


def chat(server: FakeOpenAI, **extra: Any) -> ChatPolicy:
    config = ModelConfig(alias="loop", model="openai/fake-model", api_base=server.url, api_key_env="OUTCOME_KEY",
                         protocol="native", timeout_s=20, backoff_s=0.05, **extra)  # type: ignore[arg-type]
    return ChatPolicy(ModelClient(config, "policy"))


async def play(world: Any, policy: Any, *, idx: int = 0, limits: EpisodeLimits | None = None) -> Any:
    task = task_of(world, idx)
    session = await world.open(task, episode_id=uuid.uuid4().hex)
    try:
        harness = Harness(policy=policy, shaper=awm(), limits=limits or EpisodeLimits())
        return await run_episode(EpisodeSpec(scenario=task.scenario, task_idx=idx), task, session, harness)
    finally:
        await session.close()


async def test_a_deadline_hit_while_waiting_on_the_model_is_the_agents_incomplete(tiny_world: Any) -> None:
    with FakeOpenAI(key=KEY, default=Reply(content="done", delay_s=5), max_lifetime_s=60) as server:
        record = await play(tiny_world, chat(server), limits=EpisodeLimits(timeout_s=0.5))
    assert (record.outcome, record.end_reason, record.verdict, record.error) == ("incomplete", "timeout",
                                                                                  "not_run", None)
    assert "0.5s deadline while waiting on the policy" in (record.end_detail or "")
    assert record.reward == 0.1 and record.reward_components["key"] == "timeout"


async def test_a_deadline_hit_while_the_model_call_is_retrying_is_the_endpoints(tiny_world: Any) -> None:
    with FakeOpenAI(key=KEY, default=Reply.error(503, "upstream overloaded"), max_lifetime_s=60) as server:
        record = await play(tiny_world, chat(server, retries={"server": 50}), limits=EpisodeLimits(timeout_s=1.0))
    assert (record.outcome, record.end_reason) == ("error", "model_error")
    assert record.error and record.error.error_class == "ModelError.server"
    assert "retrying after" in record.error.message and len(server.requests) >= 2


async def test_a_deadline_hit_while_queued_for_the_endpoint_is_the_runs_limits(tiny_world: Any) -> None:
    """Two episodes, an endpoint allowing one call at a time: the one holding the slot waits on its model (the
    agent's timeout); the one queued behind it never reached its model (the run's limits, infrastructure)."""
    import asyncio

    with FakeOpenAI(key=KEY, default=Reply(content="done", delay_s=5), max_lifetime_s=60) as server:
        first = asyncio.create_task(play(tiny_world, chat(server, max_concurrency=1),
                                         limits=EpisodeLimits(timeout_s=1.5)))
        await asyncio.sleep(0.3)
        second = await play(tiny_world, chat(server, max_concurrency=1), limits=EpisodeLimits(timeout_s=1.0))
        first_record = await first
    assert (first_record.outcome, first_record.end_reason) == ("incomplete", "timeout")
    assert (second.outcome, second.end_reason) == ("error", "model_error")
    assert second.error and second.error.error_class == "ModelError.queued" and "free slot" in second.error.message
    assert len(server.requests) == 1


async def test_a_context_overflow_from_a_real_400_is_the_agents_incomplete_and_not_retried(tiny_world: Any) -> None:
    script = [Reply(content=None, tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "list_notes", "arguments": "{}"}}]), Reply(status=400, body=LLAMA_CPP_OVERFLOW)]
    with FakeOpenAI(key=KEY, script=script, max_lifetime_s=60) as server:
        record = await play(tiny_world, chat(server))
    assert (record.outcome, record.end_reason, record.error) == ("incomplete", "context_overflow", None)
    assert "exceeds the available context size" in (record.end_detail or "") and len(server.requests) == 2
    assert record.turns == 1 and record.tool_calls == 1  # what the agent did is kept


async def test_an_endpoint_out_of_retries_is_infrastructure(tiny_world: Any) -> None:
    with FakeOpenAI(key=KEY, default=Reply.error(500, "boom"), max_lifetime_s=60) as server:
        record = await play(tiny_world, chat(server, retries={"server": 1}))
    assert (record.outcome, record.end_reason) == ("error", "model_error") and len(server.requests) == 2


async def test_the_turn_limit_still_gets_a_verdict(tiny_world: Any) -> None:
    record = await play(tiny_world, ScriptedPolicy([("list_notes", {})] * 3), limits=EpisodeLimits(max_turns=2))
    assert (record.outcome, record.end_reason, record.verdict) == ("incomplete", "max_turns", "others")


async def test_a_final_answer_is_judged(tiny_world: Any) -> None:
    record = await play(tiny_world, ScriptedPolicy([("create_note", {"title": "Groceries", "body": "milk, eggs"}),
                                                    "Created."]))
    assert (record.outcome, record.end_reason, record.verdict) == ("complete", "final_answer", "complete")


@pytest.fixture
def trap_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.awm_runtime.worlds.trap_data import write_trap_dataset

    return write_trap_dataset(tmp_path_factory.mktemp("trap_outcome"))


async def test_a_verifier_raising_on_the_final_db_is_incomplete_and_a_dead_world_is_an_error(trap_dir: Path) -> None:
    from awm_runtime.worlds import WorldOptions, load_worlds

    world = load_worlds(trap_dir, options=WorldOptions(workers=1, tool_timeout_s=5))
    trap = [t for t in world.tasks() if t.scenario == "trap"]
    try:
        raised = await play_task(world, trap[2], ScriptedPolicy(["It is 2."]))
        crashed = await play_task(world, trap[4], ScriptedPolicy([("crash", {}), "ok"]))
    finally:
        await world.aclose()
    assert (raised.outcome, raised.end_reason, raised.verdict) == ("incomplete", "verifier_raised", "verifier_raised")
    assert raised.error is None and "ZeroDivisionError" in raised.verdict_detail["error"] and raised.reward == 0.0
    assert (crashed.outcome, crashed.end_reason, crashed.verdict) == ("error", "world_error", "not_run")


async def play_task(world: Any, task: Any, policy: Any) -> Any:
    session = await world.open(task, episode_id=uuid.uuid4().hex)
    try:
        harness = Harness(policy=policy, shaper=awm())
        return await run_episode(EpisodeSpec(scenario=task.scenario, task_idx=task.task_idx), task, session, harness)
    finally:
        await session.close()


@pytest.mark.parametrize(("exc", "reason", "infra"), [
    (ModelError("x", kind="context", role="policy"), "context_overflow", False),
    (ModelError("x", kind="context", role="expert"), "context_overflow", False),
    (ModelError("x", kind="content_filter", role="policy"), "content_filter", False),
    (ModelError("x", kind="context", role="judge"), "model_error", True),
    (ModelError("x", kind="rate_limit", role="policy"), "model_error", True),
    (ModelError("x", kind="bad_request", role="policy"), "model_error", True),
    (WorldError("worker died"), "world_error", True),
    (RuntimeError("plug-in bug"), "runtime_error", True),
])
def test_every_exception_has_one_owner(exc: Exception, reason: str, infra: bool) -> None:
    ending = ending_for(exc)
    assert ending.reason == reason and (ending.error is not None) == infra == (reason in INFRA_END_REASONS)


@pytest.mark.parametrize(("result", "outcome", "reason"), [
    ("complete", "complete", "final_answer"), ("others", "incomplete", "final_answer"),
    ("incomplete", "incomplete", "final_answer"), ("verifier_raised", "incomplete", "verifier_raised"),
    ("verifier_error", "error", "verifier_error"), ("judge_error", "error", "judge_error"),
    ("no_verifier", "unverified", "no_verifier"), ("judge_unclassified", "incomplete", "judge_unclassified"),
])
def test_every_verdict_has_one_owner(result: str, outcome: str, reason: str) -> None:
    got = settle(Ending("final_answer"), Verdict(result=result))  # type: ignore[arg-type]
    assert got[:2] == (outcome, reason) and (got[2] is not None) == (outcome == "error")
    assert set(END_REASONS) >= {reason}
