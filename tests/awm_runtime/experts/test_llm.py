"""LLMExpert over the wire: what it is shown, JSON-plan repair, and success criteria distilled once per task."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import AdviceRequest
from awm_runtime.experts import CriteriaStore, LLMExpert, repair_plan
from awm_runtime.models.sim import CRITERIA_MARKER, EXPERT_MARKER
from awm_runtime.testing import FakeOpenAI, Reply
from tests.awm_runtime.experts.conftest import loopback_client
from tests.conftest import task_of

PLAN = {"plan": [{"tool": "create_note", "args": {"title": "Groceries"}, "purpose": "create it"}],
        "tips": "look ids up", "success_state": "one new note"}


def request(world: Any, idx: int = 0, **changes: Any) -> AdviceRequest:
    fields: dict[str, Any] = {
        "task": task_of(world, idx), "tools": [], "question": "Which id should I use?",
        "context": "list_notes returned two notes", "trajectory": "turn 1: called list_notes({})\n  -> world: [...]",
        "episode_id": "ep1", "turn": 2}
    fields.update(changes)
    return AdviceRequest(**fields)


async def world_tools(world: Any) -> list[Any]:
    session = await world.open(task_of(world, 0), episode_id="tools")
    try:
        return list(session.tools)
    finally:
        await session.close()


async def test_expert_sees_task_full_tool_schemas_question_context_and_trajectory(
        tiny_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    tools = await world_tools(tiny_world)
    with FakeOpenAI(key="ek", default=Reply(content=json.dumps(PLAN)), max_lifetime_s=60) as server:
        expert = LLMExpert(loopback_client(server, monkeypatch, alias="exp", role="expert"))
        advice = await expert.advise(request(tiny_world, tools=tools))
        sent = server.requests
    assert len(sent) == 1 and sent[0]["_auth"] == "Bearer ek"
    system, user = sent[0]["messages"][0]["content"], sent[0]["messages"][1]["content"]
    assert system.startswith(EXPERT_MARKER) and "Tiny Notes" in system
    assert task_of(tiny_world, 0).text in user
    for tool in tools:  # every tool, with its whole description and schema
        assert json.dumps({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema},
                          ensure_ascii=False) in user
    assert "Which id should I use?" in user and "list_notes returned two notes" in user
    assert "turn 1: called list_notes" in user and "Success criteria" not in user
    assert json.loads(advice.text) == PLAN and advice.answered_by == "llm:exp" and advice.usage.calls == 1


async def test_malformed_plan_is_repaired_with_one_more_call(tiny_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [Reply(content="Sure! First create the note, then report."), Reply(content=json.dumps(PLAN))]
    with FakeOpenAI(key="ek", script=script, max_lifetime_s=60) as server:
        expert = LLMExpert(loopback_client(server, monkeypatch, alias="exp", role="expert"))
        advice = await expert.advise(request(tiny_world))
        sent = server.requests
    assert json.loads(advice.text) == PLAN and advice.usage.calls == 2
    assert sent[1]["messages"][-2] == {"role": "assistant", "content": "Sure! First create the note, then report."}
    assert "only that JSON object" in sent[1]["messages"][-1]["content"]


async def test_unrepairable_prose_is_passed_on_not_lost(tiny_world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAI(key="ek", default=Reply(content="Just call create_note."), max_lifetime_s=60) as server:
        expert = LLMExpert(loopback_client(server, monkeypatch, alias="exp", role="expert"))
        advice = await expert.advise(request(tiny_world))
    assert advice.text == "Just call create_note." and advice.usage.calls == 2


@pytest.mark.parametrize(("text", "plan"), [
    ('```json\n{"plan": [{"tool": "a", "args": "{\\"x\\": 1}"}], "tips": "t",}\n```',
     {"plan": [{"tool": "a", "args": {"x": 1}, "purpose": ""}], "tips": "t", "success_state": ""}),
    ("Here you go: {'plan': ['look it up'], 'success_state': 'done'} good luck",
     {"plan": [{"tool": "", "args": {}, "purpose": "look it up"}], "tips": "", "success_state": "done"}),
    ('{"plan": {"name": "b", "arguments": {"y": 2}, "why": "w"}}',
     {"plan": [{"tool": "b", "args": {"y": 2}, "purpose": "w"}], "tips": "", "success_state": ""}),
    ("no json here", None), ('{"answer": 42}', None), ("{not json at all}", None),
])
def test_repair_plan(text: str, plan: dict[str, Any] | None) -> None:
    assert repair_plan(text) == plan


def _criteria_responder(calls: list[str]) -> Any:
    def respond(req: dict[str, Any]) -> Reply:
        system = req["messages"][0]["content"]
        if CRITERIA_MARKER in system:
            calls.append("criteria")
            return Reply(content="A note titled Groceries exists with body 'milk, eggs'.", delay_s=0.3)
        calls.append("plan")
        return Reply(content=json.dumps(PLAN))
    return respond


async def test_criteria_are_distilled_once_per_task_and_cached_on_disk(
        tiny_world: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWM_CACHE_DIR", str(tmp_path))
    calls: list[str] = []

    def verifier(task: Any) -> Any:
        return tiny_world.dataset.verifier(task.scenario, task.task_idx, "code")

    with FakeOpenAI(key="ek", responder=_criteria_responder(calls), max_lifetime_s=60) as server:
        client = loopback_client(server, monkeypatch, alias="exp", role="expert")
        expert = LLMExpert(client, criteria=CriteriaStore(client, verifier))
        advices = await asyncio.gather(*(expert.advise(request(tiny_world)) for _ in range(8)))
        distil = next(r for r in server.requests if CRITERIA_MARKER in r["messages"][0]["content"])
        asks = [r for r in server.requests if CRITERIA_MARKER not in r["messages"][0]["content"]]
        # a new store (a later run) reads the file instead of asking the model again
        again = LLMExpert(client, criteria=CriteriaStore(client, verifier))
        await again.advise(request(tiny_world))
    assert calls.count("criteria") == 1 and calls.count("plan") == 9
    assert "def verify_" in distil["messages"][1]["content"]  # distilled from the verifier's code
    assert all("Success criteria:\nA note titled Groceries" in r["messages"][1]["content"] for r in asks)
    assert sum(a.usage.calls for a in advices) == 9  # the distillation is billed once, to the first ask
    files = list((tmp_path / "criteria").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["task_idx"] == 0
