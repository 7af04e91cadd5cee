"""Property: whatever argument text a model writes, the episode is the agent's and exactly one record is written.

Generated replies (JSON of any shape, lone surrogates raw and escaped, 64-bit-busting integers, NaN, nesting
hundreds deep, megabytes, garbage; in the executed call, in a second unexecuted call, and in the final
answer) go over real HTTP from the loopback model, through the one parser, the built-in world's worker,
its verifier and the record writer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awm_runtime._build import build_shaper
from awm_runtime._types import EpisodeSpec
from awm_runtime.episode import EpisodeLimits, Harness, run_episode
from awm_runtime.logs import record_line
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.models._http import close_sessions
from awm_runtime.policies import ChatPolicy
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.testing._server import completion_body
from awm_runtime.worlds import WorldOptions, load_worlds

KEY = "prop-key-25"
SCRIPT: list[dict[str, Any]] = []  # the current example's replies, in order (the server thread reads it)
_LOCK = threading.Lock()

text = st.text(alphabet=st.characters(categories=["Cs", "Ll", "Nd", "Po", "Zs", "So"]), max_size=12)
scalars = (st.none() | st.booleans() | st.integers(min_value=-(10**25), max_value=10**25)
           | st.floats(allow_nan=True, allow_infinity=True) | text)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                      max_leaves=8)
arguments = st.one_of(
    st.dictionaries(text, values, max_size=4).map(lambda v: json.dumps(v, ensure_ascii=False)),
    st.dictionaries(text, values, max_size=4).map(json.dumps),  # surrogates as \\uXXXX escapes
    st.integers(min_value=1, max_value=400).map(lambda n: '{"a": ' * n + "1" + "}" * n),
    st.integers(min_value=2**63, max_value=10**30).map(lambda v: f'{{"limit": {v}}}'),
    st.sampled_from([0, 1]).map(lambda k: json.dumps({"q": "x" * (k * (1 << 20) + 10)})),
    st.text(max_size=40),
)
tool_names = st.sampled_from(["list_devices", "list_rooms", "no_such_tool"])


def _reply(request: dict[str, Any]) -> Reply:
    with _LOCK:
        message = SCRIPT.pop(0) if SCRIPT else {"role": "assistant", "content": "Done."}
    body = completion_body(request, Reply(content="x"))
    body["choices"] = [{"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                        "message": message}]
    return Reply(body=json.dumps(body))  # ensure_ascii: a lone surrogate travels as its escape, as servers send it


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def stack(loop: asyncio.AbstractEventLoop) -> Iterator[tuple[Any, Any, Harness]]:
    import os

    os.environ["PROP_KEY"] = KEY
    reset_limiters()
    with FakeOpenAI(key=KEY, models=("prop",), responder=_reply, max_lifetime_s=300) as server:
        world = load_worlds("builtin", options=WorldOptions(workers=1))
        task = next(t for t in world.tasks() if t.scenario == "homehub_smart_home" and t.task_idx == 0)
        client = ModelClient(ModelConfig(alias="prop", model="openai/prop", api_base=server.url,  # type: ignore[call-arg]
                                         api_key_env="PROP_KEY", timeout_s=20), "policy")
        harness = Harness(policy=ChatPolicy(client, protocol="native"), shaper=build_shaper("awm"),
                          limits=EpisodeLimits(max_turns=3, timeout_s=60))
        try:
            yield world, task, harness
        finally:
            loop.run_until_complete(world.aclose())
            loop.run_until_complete(close_sessions())


def _call(name: str, args: str, i: int) -> dict[str, Any]:
    return {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}


@settings(max_examples=20, deadline=20_000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(first=arguments, second=st.none() | arguments, name=tool_names, answer=text)
def test_any_argument_text_is_the_agents_and_gets_exactly_one_record(
        loop: asyncio.AbstractEventLoop, stack: tuple[Any, Any, Harness], first: str, second: str | None, name: str,
        answer: str) -> None:
    world, task, harness = stack
    calls = [_call(name, first, 0)] + ([_call("list_rooms", second, 1)] if second is not None else [])
    with _LOCK:
        SCRIPT[:] = [{"role": "assistant", "content": None, "tool_calls": calls},
                     {"role": "assistant", "content": f"Done {answer}"}]

    async def episode() -> Any:
        episode_id = uuid.uuid4().hex[:16]
        session = await world.open(task, episode_id=episode_id)
        try:
            return await run_episode(EpisodeSpec(arm="main", scenario=task.scenario, task_idx=task.task_idx, repeat=0,
                                                 seed=0), task, session, harness, episode_id=episode_id)
        finally:
            await session.close()

    record = loop.run_until_complete(episode())
    assert record.outcome != "error", (record.end_reason, record.error)
    lines = record_line(record).splitlines()
    assert len(lines) == 1
    back = json.loads(lines[0])
    assert back["episode_id"] == record.episode_id and back["outcome"] == record.outcome
