"""The simulations without litellm answer exactly as litellm's `sim` provider does, and are what sim aliases use."""

from __future__ import annotations

import time

import pytest

from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.models._route import Route
from awm_runtime.models._transport import IN_PROCESS, transport_for
from awm_runtime.models.sim._transport import SIM_TRANSPORT
from awm_runtime.testing import teach_builtin
from awm_runtime.worlds import BUILTIN_DATA, load_dataset

TOOL = {"type": "function", "function": {"name": "list_devices", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture(autouse=True)
def _taught() -> None:
    reset_limiters()
    teach_builtin()


def _prompts() -> list[tuple[str, list[dict[str, object]], dict[str, object]]]:
    dataset = load_dataset(BUILTIN_DATA)
    out = []
    for name, scenario in list(dataset.scenarios.items())[:3]:
        for task in scenario.tasks[:2]:
            messages: list[dict[str, object]] = [{"role": "system", "content": f"You act in {name}."},
                                                 {"role": "user", "content": task}]
            out.append(("sim/oracle", messages, {"tools": [TOOL], "seed": 3}))
            out.append(("sim/novice", messages, {"tools": [TOOL], "seed": 5}))
            out.append(("sim/novice", messages, {"seed": 7}))  # hermes: the tools are in the prompt
    return out


async def test_replies_match_litellms_sim_provider_field_for_field() -> None:
    prompts = _prompts()
    assert len(prompts) >= 9
    for model, messages, params in prompts:
        route = Route("policy", model, model, None, None)
        direct = await SIM_TRANSPORT.attempt(route, messages, params, 10)
        via_litellm = await IN_PROCESS.attempt(route, messages, params, 10)
        for name in ("content", "tool_calls", "finish_reason", "reasoning"):
            assert getattr(direct, name) == getattr(via_litellm, name), (model, name)
        assert direct.usage == via_litellm.usage


async def test_sim_aliases_skip_litellm_unless_their_transport_says_litellm() -> None:
    assert transport_for("sim/oracle", None) is SIM_TRANSPORT
    assert transport_for("sim/oracle", None, "litellm") is IN_PROCESS
    client = ModelClient(ModelConfig(alias="sim/oracle", model="sim/oracle", max_concurrency=100000), "policy")
    assert client.transport is SIM_TRANSPORT


async def test_the_latency_knob_still_delays_the_reply() -> None:
    route = Route("policy", "sim/oracle", "sim/oracle", None, None)
    started = time.monotonic()
    reply = await SIM_TRANSPORT.attempt(route, [{"role": "user", "content": "hi"}], {"sim": {"latency_s": 0.2}}, 10)
    assert time.monotonic() - started >= 0.2 and reply.latency_s >= 0.2 and reply.usage.calls == 1


async def test_a_simulation_bug_is_a_fatal_attempt_error_not_a_crash() -> None:
    from awm_runtime.models._exceptions import AttemptError

    route = Route("policy", "sim/oracle", "sim/oracle", None, None)
    with pytest.raises(AttemptError) as info:
        await SIM_TRANSPORT.attempt(route, [{"role": "user", "content": "hi"}], {"tools": [{"oops": 1}]}, 10)
    assert info.value.kind == "fatal" and "KeyError" in info.value.detail
