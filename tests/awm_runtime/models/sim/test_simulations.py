"""The simulated models themselves: the expert's plans and criteria, and how the oracle reads its own past
text-protocol calls back (call_tool wrappers, think blocks, broken blocks) to pick the next step."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awm_runtime.episode import reference_plan
from awm_runtime.models.sim import CRITERIA_MARKER, EXPERT_MARKER, KnownTask, simulate, teach
from awm_runtime.models.sim._transcript import past_calls

TASK = KnownTask("sim_test", 0, "File the quarterly report for the sim test.",
                 (("open_report", {"quarter": 3}), ("submit_report", {"id": 7})), final_answer="Filed.")
AWM_SYSTEM = "Use call_tool to act; list_tools lists the tools."


@pytest.fixture(autouse=True)
def _taught() -> None:
    teach([TASK])


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tagged(payload: Any) -> str:
    return f"<tool_call>\n{json.dumps(payload)}\n</tool_call>"


def call_tool(name: str, arguments: Any) -> str:
    return tagged({"name": "call_tool", "arguments": {"tool_name": name, "arguments": arguments}})


def expert(*system: str, task: str = TASK.text) -> str:
    reply = simulate("sim/oracle", [{"role": "system", "content": " ".join((EXPERT_MARKER, *system))}, user(task)], {})
    assert reply["role"] == "assistant"
    return str(reply["content"])


def test_the_expert_answers_a_known_task_with_its_reference_plan() -> None:
    assert json.loads(expert()) == reference_plan(TASK.steps, TASK.final_answer)


def test_the_expert_asked_for_criteria_lists_each_saved_effect_and_the_answer() -> None:
    assert expert(CRITERIA_MARKER) == ('The task is done when:\n- the effect of open_report({"quarter": 3}) is saved\n'
                                       '- the effect of submit_report({"id": 7}) is saved\n'
                                       "- the final message says: Filed.")


def test_the_expert_says_when_it_does_not_know_the_task() -> None:
    assert json.loads(expert(task="Something nobody taught it.")) == {
        "plan": [], "tips": "I do not know this task.", "success_state": ""}
    assert expert(CRITERIA_MARKER, task="Something nobody taught it.") == (
        "I cannot tell what done looks like for this task.")


def next_call(*history: dict[str, Any]) -> Any:
    messages = [{"role": "system", "content": AWM_SYSTEM}, user(TASK.text), *history]
    reply = simulate("sim/oracle", messages, {"seed": 1})
    return json.loads(reply["content"].split("<tool_call>")[1].split("</tool_call>")[0])


def test_the_oracle_in_the_awm_protocol_lists_tools_then_follows_the_steps() -> None:
    assert next_call() == {"name": "list_tools", "arguments": {}}
    listed = (said(tagged({"name": "list_tools", "arguments": {}})), user("open_report, submit_report"))
    assert next_call(*listed) == {"name": "call_tool", "arguments": {
        "tool_name": "open_report", "arguments": json.dumps({"quarter": 3})}}
    # arguments as a string or as an object; a think block before the call is not read as one
    for arguments in (json.dumps({"quarter": 3}), {"quarter": 3}):
        step_one = said("<think>" + tagged({"name": "submit_report", "arguments": {}}) + "</think>"
                        + call_tool("open_report", arguments))
        assert next_call(*listed, step_one, user("opened"))["arguments"]["tool_name"] == "submit_report"


def test_a_call_that_failed_or_did_not_parse_is_not_progress() -> None:
    listed = (said(tagged({"name": "list_tools", "arguments": {}})), user("open_report, submit_report"))
    for reply, result in ((call_tool("open_report", json.dumps({"quarter": 3})), "Error calling open_report: 500"),
                          (call_tool("open_report", "{not json"), "opened"),
                          ("<tool_call>{not json</tool_call>", "opened"),
                          (tagged(["open_report"]), "opened")):
        assert next_call(*listed, said(reply), user(result))["arguments"]["tool_name"] == "open_report", reply


def test_native_calls_are_paired_with_their_results_by_id() -> None:
    messages = [user(TASK.text),
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "open_report", "arguments": "{bad"}},
                    {"id": "b", "type": "function", "function": {"name": "open_report", "arguments": "[1]"}}]},
                {"role": "tool", "tool_call_id": "b", "content": "opened"},
                {"role": "tool", "tool_call_id": "zz", "content": "stray"}]
    calls = past_calls(messages)
    assert [(c.name, c.arguments, c.result) for c in calls] == [("open_report", {}, ""), ("open_report", {}, "opened")]


@given(st.text(max_size=60), st.dictionaries(st.text(max_size=8), st.integers(), max_size=3))
def test_one_text_call_is_read_back_whatever_surrounds_it(noise: str, args: dict[str, Any]) -> None:
    noise = noise.replace("<tool_call>", "").replace("<think>", "")
    calls = past_calls([said(noise + call_tool("open_report", json.dumps(args)) + noise), user("done")])
    assert [(c.name, c.arguments, c.result) for c in calls] == [("open_report", args, "done")]
