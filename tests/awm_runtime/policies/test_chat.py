"""ChatPolicy over the loopback server: request params, token data, and transcript rendering."""

from __future__ import annotations

import json

import pytest

from awm_runtime import CallTool, FinalAnswer, ListTools, Malformed, Message, PolicyTurn, ToolCall
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.policies import ChatPolicy
from awm_runtime.policies.protocols import ToolProtocol
from awm_runtime.testing import FakeOpenAI, Reply
from tests.awm_runtime.policies.test_wire_corpus import KEY, SPECS, TASK

LOGPROBS = {"content": [{"token": "token_id:151657", "logprob": -0.25, "bytes": None, "top_logprobs": []},
                        {"token": "token_id:42", "logprob": -1.5, "bytes": None, "top_logprobs": []}]}


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_KEY", KEY)
    reset_limiters()


def policy(server: FakeOpenAI, *, model: str = "openai/fake-model", protocol: str = "hermes",
           params: dict[str, object] | None = None, logprobs: bool = False, **kw: object) -> ChatPolicy:
    config = ModelConfig(alias="loop", model=model, api_base=server.url, api_key_env="LOOP_KEY",  # type: ignore[arg-type]
                         protocol=protocol, params=params or {}, logprobs=logprobs, timeout_s=20)
    return ChatPolicy(ModelClient(config, "policy"), **kw)  # type: ignore[arg-type]


async def test_enable_thinking_is_sent_as_chat_template_kwargs_merged_over_the_alias() -> None:
    params = {"chat_template_kwargs": {"enable_thinking": True, "other": 1}, "temperature": 0.6}
    with FakeOpenAI(key=KEY, models=("fake-model",)) as server:
        await policy(server, params=params, enable_thinking=False).act(
            policy(server).begin(TASK, SPECS), SPECS, seed=3)
        await policy(server, params=params).act(policy(server).begin(TASK, SPECS), SPECS)
    first, second = server.requests
    assert first["chat_template_kwargs"] == {"enable_thinking": False, "other": 1}
    assert first["temperature"] == 0.6 and first["seed"] == 3
    assert second["chat_template_kwargs"] == {"enable_thinking": True, "other": 1}  # the alias's own, untouched


async def test_token_level_data_lands_on_the_policy_message() -> None:
    reply = Reply(content="Done.", extra_choice={"logprobs": LOGPROBS, "token_ids": [151657, 42]})
    with FakeOpenAI(key=KEY, script=[reply, Reply(content="Done.", extra_choice={"logprobs": LOGPROBS})]) as server:
        vllm = policy(server, model="hosted_vllm/fake-model", logprobs=True)
        turn = await vllm.act(vllm.begin(TASK, SPECS), SPECS)
        plain = policy(server, logprobs=True)
        spelled = await plain.act(plain.begin(TASK, SPECS), SPECS)
    assert turn.message.logprobs == [-0.25, -1.5] and turn.message.token_ids == [151657, 42]
    assert spelled.message.token_ids == [151657, 42]  # from return_tokens_as_token_ids spellings
    asked_vllm, asked_plain = server.requests
    assert asked_vllm["logprobs"] is True and asked_vllm["return_token_ids"] is True
    assert asked_plain["logprobs"] is True and "return_token_ids" not in asked_plain
    record = json.loads(turn.message.model_dump_json())
    assert record["logprobs"] == [-0.25, -1.5] and record["token_ids"] == [151657, 42]


async def test_no_token_data_unless_asked() -> None:
    with FakeOpenAI(key=KEY) as server:
        p = policy(server)
        turn = await p.act(p.begin(TASK, SPECS), SPECS)
    assert "logprobs" not in server.requests[0] and turn.message.logprobs is None and turn.message.token_ids is None


async def test_a_bad_native_call_goes_back_to_the_server_as_valid_json() -> None:
    bad = {"id": "call_x", "type": "function", "function": {"name": "get_item", "arguments": '{"item_id": 3,'}}
    with FakeOpenAI(key=KEY, script=[Reply(content=None, tool_calls=[bad]), Reply(content="Done.")]) as server:
        p = policy(server, protocol="native")
        messages = p.begin(TASK, SPECS)
        turn = await p.act(messages, SPECS)
        assert isinstance(turn.action, Malformed) and turn.action.kind == "invalid_json"
        messages = [*messages, turn.message, *p.observe(turn, "Your last reply could not be executed", "system")]
        await p.act(messages, SPECS)
    assert turn.message.tool_calls == [bad]  # the record keeps what the model wrote
    sent = server.requests[1]["messages"]
    call = sent[2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"unparsed_arguments": '{"item_id": 3,'}
    assert sent[3]["role"] == "tool" and sent[3]["tool_call_id"] == "call_x"


def turn_of(action: object, *, tool_calls: list[dict[str, object]] | None = None,
            warnings: tuple[str, ...] = ()) -> PolicyTurn:
    return PolicyTurn(message=Message(role="assistant", content="x", source="policy", tool_calls=tool_calls),
                      action=action, warnings=warnings)  # type: ignore[arg-type]


GET = CallTool(ToolCall(id="call_1", name="get_item", arguments={"item_id": 3}))


def test_results_are_cut_to_the_limit_but_the_tool_list_is_not() -> None:
    speaker = ToolProtocol("awm", tool_result_chars=10)
    cut = speaker.observe(turn_of(GET), "x" * 25, "world")[0].content or ""
    assert cut.startswith("Tool response:\nxxxxxxxxxx\n") and "[truncated 15 chars]" in cut
    listing = speaker.observe(turn_of(ListTools()), "y" * 25, "world")[0].content or ""
    assert "y" * 25 in listing
    assert ToolProtocol("awm", tool_result_chars=0).observe(turn_of(GET), "x" * 5000, "world")[0].content.count(
        "x") == 5000  # type: ignore[union-attr]


def test_native_answers_every_call_id_and_text_protocols_say_only_the_first_ran() -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "get_item", "arguments": "{}"}} for i in (1, 2)]
    native = ToolProtocol("native").observe(turn_of(GET, tool_calls=calls, warnings=("multiple_calls",)), "ok", "world")
    assert [(m.role, m.tool_call_id, m.source) for m in native] == [("tool", "c1", "world"), ("tool", "c2", "system")]
    hermes = ToolProtocol("hermes").observe(turn_of(GET, warnings=("multiple_calls",)), "ok", "world")
    assert len(hermes) == 1 and "Only the first tool call" in (hermes[0].content or "")
    as_tool = ToolProtocol("hermes", tool_result_role="tool").observe(turn_of(GET), "ok", "world")
    assert as_tool[0].role == "tool" and as_tool[0].name == "get_item"


def test_format_feedback_and_final_rendering() -> None:
    feedback = ToolProtocol("hermes").observe(turn_of(Malformed("invalid_json", "bad")), "fix it", "system")
    assert feedback[0].role == "user" and feedback[0].content == "fix it"
    # a native reply with no tool_calls (tags in content) cannot be answered by a tool message
    native_text = ToolProtocol("native").observe(turn_of(GET), "ok", "world")
    assert native_text[0].role == "user" and native_text[0].content == "Tool response:\nok"
    assert isinstance(FinalAnswer("x"), FinalAnswer)


@pytest.mark.parametrize("protocol", ["native", "hermes", "awm"])
def test_rendered_calls_parse_back_to_the_same_call(protocol: str) -> None:
    speaker = ToolProtocol(protocol)
    content, tool_calls = speaker.render_call("get_item", {"item_id": 3}, "call_9")
    parsed = speaker.parse(content, tool_calls, SPECS, call_id="call_9")
    assert isinstance(parsed.action, CallTool) and parsed.action.call.arguments == {"item_id": 3}


def test_bad_protocol_and_role_are_config_errors() -> None:
    from awm_runtime import ConfigError

    with pytest.raises(ConfigError, match="unknown tool-call protocol"):
        ToolProtocol("xml")
    with pytest.raises(ConfigError, match="tool_result_role"):
        ToolProtocol("hermes", tool_result_role="assistant")


async def test_call_inside_think_is_explained_even_when_litellm_lifted_the_think_block() -> None:
    content = '<think>I will call <tool_call>{"name": "get_item", "arguments": {}}</tool_call></think>'
    with FakeOpenAI(key=KEY, script=[Reply(content=content)]) as server:
        p = policy(server)
        turn = await p.act(p.begin(TASK, SPECS), SPECS)
    assert isinstance(turn.action, Malformed) and turn.action.kind == "empty_reply"
    assert "inside <think>" in turn.action.detail and "I will call" in (turn.message.reasoning or "")


def test_ref_names_the_protocol() -> None:
    config = ModelConfig(alias="a", model="openai/m", protocol="awm")
    assert ChatPolicy(ModelClient(config, "policy")).ref.protocol == "awm"
    assert ChatPolicy(ModelClient(config, "policy"), protocol="hermes").ref.protocol == "hermes"


def test_an_arm_s_reasoning_goes_over_the_alias_s() -> None:
    from awm_runtime.models import ModelClient, ModelConfig
    from awm_runtime.policies import ChatPolicy

    alias = ModelConfig(alias="c", model="anthropic/claude-x", params={
        "thinking": {"type": "enabled", "budget_tokens": 1024}, "reasoning_effort": "low"})
    client = ModelClient(alias, "policy")
    assert ChatPolicy(client, reasoning_effort="high").request_params(0) == {
        "seed": 0, "reasoning_effort": "high", "thinking": None}
    assert ChatPolicy(client, thinking_budget=4096).request_params(0) == {
        "seed": 0, "thinking": {"type": "enabled", "budget_tokens": 4096}, "reasoning_effort": None}
    assert ChatPolicy(client).request_params(0) == {"seed": 0}
