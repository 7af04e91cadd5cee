"""SQL mode: verifier evidence plus an LLM judge on the `judge` role, over real HTTP to a loopback model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_runtime import Message, ToolCall
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.verifiers import Judge, parse_criteria, parse_judgement
from awm_runtime.worlds import WorldOptions, load_worlds

KEY = "k-judge-0042"


@pytest.mark.parametrize("raw", [
    '{"reasoning": "r", "success_criteria": ["a", "b"], "failure_criteria": "c"}',
    'Here it is:\n```json\n{"reasoning": "r", "success_criteria": ["a", "b"], "failure_criteria": ["c"]}\n```',
    'Thinking... {"reasoning": "r", "success_criteria": ["a", "b"], "failure_criteria": ["c"], "code": "x"} done',
])
def test_criteria_are_parsed_from_raw_response(raw: str) -> None:
    criteria = parse_criteria(raw)
    assert (criteria.reasoning, criteria.success, criteria.failure) == ("r", ("a", "b"), ("c",))
    assert "- a\n- b" in criteria.text()


def test_unparseable_raw_response_gives_empty_criteria() -> None:
    assert parse_criteria("no json at all").text().count("(none given)") == 3


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"classification": "complete", "reason": "all good"}', ("complete", "all good")),
    ('<think>maybe incomplete?</think>{"classification": "agent_error", "reason": "r"}', ("agent_error", "r")),
    ('```json\n{"classification": "SERVER_ERROR"}\n```', ("server_error", "")),
    ("The task is incomplete.", ("incomplete", "The task is incomplete.")),
    ("complete or incomplete, hard to say", None),
    ('{"classification": "done"}', None),
    ("", None),
])
def test_judgement_parsing(reply: str, expected: Any) -> None:
    assert parse_judgement(reply) == expected


def judge_client(server: FakeOpenAI) -> ModelClient:
    cfg = ModelConfig(alias="loop-judge", model="openai/judge-7b", api_base=server.url, api_key_env="JUDGE_KEY",
                      timeout_s=10)  # type: ignore[call-arg]
    return ModelClient(cfg, "judge")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_KEY", KEY)
    reset_limiters()


async def _sql_episode(trap_dir: Path, server: FakeOpenAI, *, add: bool) -> Any:
    world = load_worlds(trap_dir, options=WorldOptions(verifier="sql", workers=1),
                        judge=Judge(judge_client(server), name="loop-judge"))
    task = next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == 0)
    try:
        session = await world.open(task, episode_id="sql")
        messages = [Message(role="user", content=task.text, source="system")]
        if add:
            result = await session.call_tool(ToolCall(id="c1", name="add_item", arguments={"name": "apple"}))
            messages += [Message(role="assistant", content=None, source="policy", tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "add_item", "arguments": '{"name": "apple"}'}}]),
                Message(role="tool", content=result.text, source="world", tool_call_id="c1")]
        messages.append(Message(role="assistant", content="Added apple.", source="policy"))
        verdict = await session.verify("Added apple.", messages)
        await session.close()
    finally:
        await world.aclose()
    return verdict


@pytest.fixture
def trap_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.awm_runtime.worlds.trap_data import write_trap_dataset

    return write_trap_dataset(tmp_path_factory.mktemp("trap_sql"))


async def test_sql_mode_judge_sees_task_trajectory_evidence_and_criteria(trap_dir: Path) -> None:
    reply = Reply(content='{"classification": "complete", "reason": "items_after is one more"}')
    with FakeOpenAI(key=KEY, models=("judge-7b",), script=[reply], max_lifetime_s=120) as server:
        verdict = await _sql_episode(trap_dir, server, add=True)
    assert verdict.result == "complete" and verdict.mode == "sql"
    assert verdict.detail["reason"] == "items_after is one more" and verdict.detail["judge"] == "loop-judge"
    assert '"items_after": 3' in verdict.detail["evidence"] and verdict.detail["judge_usage"]["calls"] == 1
    request = server.requests[0]
    prompt = "\n".join(m["content"] for m in request["messages"])
    assert request["_auth"] == f"Bearer {KEY}"
    for needle in ("Add an item named apple.", "One item named 'apple' must be added.",
                   "- items_after is items_before + 1", "- no new item", '"items_before": 2', '"items_after": 3',
                   "[calls add_item with {\"name\": \"apple\"}]", "Added apple."):
        assert needle in prompt, needle


@pytest.mark.parametrize(("reply", "error"), [
    (Reply(content="I am not sure what to say."), "judge reply has no usable classification"),
    (Reply.error(400, "bad request"), "judge call failed"),
])
async def test_unusable_judge_is_a_judge_error(trap_dir: Path, reply: Reply, error: str) -> None:
    with FakeOpenAI(key=KEY, models=("judge-7b",), script=[reply], max_lifetime_s=120) as server:
        verdict = await _sql_episode(trap_dir, server, add=False)
    assert verdict.result == "judge_error" and error in (verdict.error or "")


async def test_task_without_sql_verifier_is_no_verifier(trap_dir: Path) -> None:
    world = load_worlds(trap_dir, options=WorldOptions(verifier="sql", workers=1))
    try:
        task = next(t for t in world.tasks() if t.scenario == "trap" and t.task_idx == 1)
        assert not task.has_verifier
        session = await world.open(task, episode_id="nov")
        assert (await session.verify("", [])).result == "no_verifier"
        await session.close()
    finally:
        await world.aclose()
