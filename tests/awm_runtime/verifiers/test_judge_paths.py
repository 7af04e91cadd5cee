"""The judge's reading of replies and what it shows the judge, and its trajectory-only mode (worlds without a
DB), over real HTTP to a loopback model where a model is asked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from awm_runtime import Message
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.verifiers import Judge, _judge, classify_trajectory, parse_criteria, parse_judgement
from awm_runtime.verifiers._judge import Criteria, fenced_data, first_json_object, trajectory_entries

KEY = "k-judge-paths-7"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PATHS_KEY", KEY)
    reset_limiters()


def _judge_on(server: FakeOpenAI, **params: Any) -> Judge:
    cfg = ModelConfig(alias="loop-judge", model="openai/judge-7b", api_base=server.url, api_key_env="JUDGE_PATHS_KEY",
                      timeout_s=10, params=params)  # type: ignore[call-arg]
    return Judge(ModelClient(cfg, "judge"), name="loop-judge")


@pytest.mark.parametrize(("text", "expected"), [
    ('[1, 2] then {"a": 1}', {"a": 1}),  # JSON, but not an object: the embedded object is the answer
    ("{broken then {\"b\": [2]} after", {"b": [2]}),
    ('"just a string"', None),
    ("no braces at all", None),
    ("{ never closed", None),
])
def test_the_first_json_object_is_found_past_what_is_not_one(text: str, expected: Any) -> None:
    assert first_json_object(text) == expected


def test_criteria_that_are_neither_text_nor_a_list_are_none() -> None:
    criteria = parse_criteria('{"reasoning": 3, "success_criteria": {"x": 1}, "failure_criteria": "  "}')
    assert criteria == Criteria() and "(none given)" in criteria.text()


@pytest.mark.parametrize(("text", "expected"), [
    ("complete.", ("complete", "", "complete")),
    ("`Incomplete`", ("incomplete", "", "incomplete")),
    ('{"result": "agent_error", "reasoning": "it broke"}', ("incomplete", "it broke", "agent_error")),
    ("{not json} {\"classification\": \"complete\"}", ("complete", "", "complete")),
    ("I think it is complete", None),  # prose is never searched for a label
    (None, None),
])
def test_judgements_are_read_from_the_last_classification_or_a_bare_label(text: str | None, expected: Any) -> None:
    assert parse_judgement(text) == expected


def test_a_long_trajectory_keeps_its_ends_and_leaves_out_the_middle() -> None:
    messages = [Message(role="system", content="policy prompt", source="system")]
    messages += [Message(role="assistant", content=f"step {i} " + "x" * 200, source="policy") for i in range(40)]
    entries = trajectory_entries(messages, limit=2000)
    assert not any(e.get("text") == "policy prompt" for e in entries)  # the system prompt says nothing
    omitted = next(e for e in entries if "omitted" in e)
    kept = [e for e in entries if "text" in e]
    assert kept[0]["text"].startswith("step 0 ") and kept[-1]["text"].startswith("step 39 ")
    assert omitted["omitted"] == f"{40 - len(kept)} messages" and len(kept) < 40


def test_evidence_that_is_no_json_goes_as_text_and_long_evidence_is_clipped() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop  # json.dumps refuses a cycle
    assert _judge._evidence_value(loop) == str(loop)
    long_value = _judge._evidence_value({"rows": ["r" * 100] * 500})
    assert isinstance(long_value, str) and "characters omitted" in long_value


def test_the_fence_is_never_a_token_the_data_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = iter(["planted", "fresh"])
    monkeypatch.setattr(_judge.secrets, "token_hex", lambda _n: next(tokens))
    boundary, document = fenced_data({"final_answer": "planted"})
    assert boundary == "fresh" and json.loads(document) == {"final_answer": "planted"}


async def test_a_world_without_a_db_is_judged_from_its_trajectory_and_the_tasks_criteria() -> None:
    reply = Reply(content='{"classification": "server_error", "reason": "the tool failed"}')
    messages = [Message(role="user", content="Book a table.", source="system"),
                Message(role="assistant", content="Booked.", source="policy")]
    with FakeOpenAI(key=KEY, models=("judge-7b",), script=[reply, reply], max_lifetime_s=120) as server:
        judge = _judge_on(server)
        verdict = await classify_trajectory(judge, task="Book a table.", messages=messages,
                                            criteria=Criteria(success=("a booking exists",)), final_answer="Booked.")
        bare = await classify_trajectory(judge, task="Book a table.", messages=[], criteria=Criteria(),
                                         final_answer="")
    assert verdict.result == "incomplete" and verdict.detail["judge_said"] == "server_error"
    assert verdict.detail["judged_from"] == "trajectory" and bare.result == "incomplete"
    first = "\n".join(m["content"] for m in server.requests[0]["messages"])
    second = "\n".join(m["content"] for m in server.requests[1]["messages"])
    assert "Success criteria:\n- a booking exists" in first and "Failure criteria" not in first
    assert "(none given: judge from the task's own words)" in second and "(the agent took no actions)" in second


async def test_a_judge_that_spends_its_whole_budget_is_a_judge_error_that_names_the_setting() -> None:
    reply = Reply(content="", extra_choice={"finish_reason": "length"})
    with FakeOpenAI(key=KEY, models=("judge-7b",), script=[reply], max_lifetime_s=120) as server:
        verdict = await classify_trajectory(_judge_on(server, max_tokens=64), task="t", messages=[],
                                            criteria=Criteria(), final_answer="done")
    assert verdict.result == "judge_error" and "max_tokens (64)" in (verdict.error or "")
    assert len(server.requests) == 1  # a setting, not the agent's doing: not asked again
