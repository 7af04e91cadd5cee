"""Arguments no wire can carry are the agent's format errors at parse time, in every protocol."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from awm_runtime import Message
from awm_runtime._interfaces import CallTool, Malformed, PolicyTurn
from awm_runtime._types import FORMAT_ERROR_KINDS, ToolSpec
from awm_runtime.policies.protocols import ToolProtocol, parse_reply
from awm_runtime.policies.protocols._carry import ArgumentLimits, argument_problem

TOOLS = {"set_label": {"type": "object", "properties": {"item_id": {"type": "integer", "minimum": 1,
                                                                    "maximum": 1000}}}, "ask_expert": {}}
SURROGATE = '{"name": "\\ud800"}'  # what a model writes: the JSON escape of a lone surrogate
DEEP = '{"a": ' * 300 + "1" + "}" * 300
WIDE_INT = '{"name": 123456789012345678901}'


def native(arguments: str, *more: str, name: str = "set_label") -> Any:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": a}}
             for i, a in enumerate((arguments, *more))]
    return parse_reply("native", None, calls, TOOLS)


def tagged(protocol: str, arguments: str, name: str = "set_label") -> Any:
    if protocol == "awm":
        body = json.dumps({"name": "call_tool", "arguments": {"tool_name": name, "arguments": arguments}})
    else:
        body = f'{{"name": "{name}", "arguments": {arguments}}}'
    return parse_reply(protocol, f"<tool_call>{body}</tool_call>", None, TOOLS)


@pytest.mark.parametrize(("arguments", "kind"), [
    (SURROGATE, "unencodable_text"),
    ('{"\\udfff": 1}', "unencodable_text"),
    (DEEP, "arguments_too_deep"),
    (WIDE_INT, "number_out_of_range"),
    ('{"x": -99999999999999999999}', "number_out_of_range"),
    ('{"x": NaN}', "number_out_of_range"),
    ('{"x": Infinity}', "number_out_of_range"),
    ('{"item_id": 1001}', "number_out_of_range"),  # the tool's own schema says at most 1000
    ('{"a": ' * 100_000 + "1" + "}" * 100_000, "invalid_json"),  # past Python's own stack
])
@pytest.mark.parametrize("protocol", ["native", "hermes", "awm"])
def test_arguments_no_wire_can_carry_are_format_errors(protocol: str, arguments: str, kind: str) -> None:
    parsed = native(arguments) if protocol == "native" else tagged(protocol, arguments)
    assert isinstance(parsed.action, Malformed), parsed
    assert parsed.action.kind == kind and kind in FORMAT_ERROR_KINDS
    assert parsed.action.detail.encode("utf-8")  # the agent is told why, in text that can be carried


def test_carried_arguments_pass() -> None:
    parsed = native('{"item_id": 7, "note": "caf\\u00e9 \\ud83d\\ude00", "deep": [[[1]]], "big": 18446744073709551615}')
    assert isinstance(parsed.action, CallTool)
    assert parsed.action.call.arguments["note"] == "café 😀"


def test_the_size_cap_is_configurable() -> None:
    args = {"text": "x" * 2000}
    assert argument_problem(args, "t") is None
    problem = argument_problem(args, "t", ArgumentLimits(max_bytes=1000))
    assert problem is not None and problem.kind == "arguments_too_large" and "1,000-byte limit" in problem.detail
    big = json.dumps({"text": "x" * ((1 << 20) + 10)})
    assert native(big).action.kind == "arguments_too_large"  # the default: 1 MiB


def test_the_ask_expert_question_is_checked_like_any_call() -> None:
    parsed = native('{"question": "\\ud800?"}', name="ask_expert")
    assert isinstance(parsed.action, Malformed) and parsed.action.kind == "unencodable_text"


def test_a_second_unexecuted_call_is_counted_and_explained_and_goes_back_carriable() -> None:
    speaker = ToolProtocol("native")
    tools = [ToolSpec(name="set_label", input_schema=TOOLS["set_label"])]
    calls = [{"id": "c0", "type": "function", "function": {"name": "set_label", "arguments": '{"item_id": 1}'}},
             {"id": "c1", "type": "function", "function": {"name": "set_label", "arguments": SURROGATE}},
             {"id": "c2", "type": "function", "function": {"name": "set_label", "arguments": DEEP}}]
    parsed = speaker.parse(None, calls, tools, call_id="call_0")
    assert isinstance(parsed.action, CallTool)
    assert parsed.warnings == ("multiple_calls", "unencodable_text", "arguments_too_deep")
    reply = Message(role="assistant", content=None, source="policy", tool_calls=calls)
    turn = PolicyTurn(message=reply, action=parsed.action, warnings=parsed.warnings)
    results = speaker.observe(turn, "ok", "world")
    assert [m.tool_call_id for m in results] == ["c0", "c1", "c2"]
    assert "unencodable_text" in (results[1].content or "") and "arguments_too_deep" in (results[2].content or "")
    wire = orjson.dumps(speaker.wire([reply, *results]))  # the next request encodes: no lone surrogate, no depth
    sent = orjson.loads(wire)[0]["tool_calls"]
    assert json.loads(sent[1]["function"]["arguments"]) == {"name": "\ufffd"}
    assert json.loads(sent[2]["function"]["arguments"]) == json.loads(DEEP)  # a string on the wire: depth is fine
    huge = {"id": "c3", "type": "function", "function": {"name": "set_label", "arguments": "[" * 2_000_000}}
    wired = speaker.wire([Message(role="assistant", content=None, source="policy", tool_calls=[huge])])
    assert len(wired[0]["tool_calls"][0]["function"]["arguments"]) < 2100  # clipped, not resent whole


def test_a_final_answer_with_a_lone_surrogate_is_kept_encodable() -> None:
    parsed = parse_reply("native", "done \ud800", None, TOOLS)
    assert parsed.action.text == "done \ufffd"  # type: ignore[union-attr]


def test_the_flags_reach_the_run_config_and_the_chat_policy() -> None:
    from awm_runtime._build import BuildContext
    from awm_runtime.cli._run import _config, parser
    from awm_runtime.models import load_registry
    from awm_runtime.policies import build_chat_policy

    config = _config(parser().parse_args(["--max-argument-bytes", "2048", "--group-attempts", "5"]))
    assert (config.max_argument_bytes, config.group_attempts) == (2048, 5)
    ctx = BuildContext(registry=load_registry(), options={"max_argument_bytes": config.max_argument_bytes})
    policy = build_chat_policy("sim/oracle", ctx)
    assert policy.speaker.limits.max_bytes == 2048
