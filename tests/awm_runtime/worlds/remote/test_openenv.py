"""`openenv+http` worlds against a real OpenEnv AWM server on loopback (awm-serve, over its socket)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from structlog.testing import capture_logs

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._sockets import bound_tcp_socket
from awm_runtime._types import Task, ToolCall
from awm_runtime.worlds import RemoteOptions, WorldOptions, load_local_worlds, load_worlds
from awm_runtime.worlds.remote._openenv import OpenEnvWorld
from tests.awm_runtime.serve.conftest import running


def _retries(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "remote_world_retry"]


FAST = RemoteOptions(attempts=3, backoff_s=0.05, max_backoff_s=0.2, connect_timeout_s=3.0, tool_timeout_s=10.0)


@pytest.fixture
async def builtin_world() -> Any:
    world = load_local_worlds("builtin", options=WorldOptions(workers=2))
    yield world
    await world.aclose()


async def solve(world: Any, task: Task, solution: Any) -> Any:
    session = await world.open(task, episode_id="t")
    try:
        for tool, arguments in solution.steps:
            result = await session.call_tool(ToolCall(id="c", name=tool, arguments=arguments))
            assert not result.is_error, result.text
        return session, await session.verify(solution.final_answer, [])
    finally:
        await session.close()


async def test_tasks_come_from_list_scenarios_and_the_oracle_completes(builtin_world: Any) -> None:
    async with running(builtin_world) as served:
        world = load_worlds(f"openenv+{served.url}", options=WorldOptions())
        assert isinstance(world, OpenEnvWorld)
        with pytest.raises(ConfigError, match="not connected"):
            world.tasks()
        await world.connect()
        assert [(t.key, t.text) for t in world.tasks()] == [(t.key, t.text) for t in builtin_world.tasks()]
        task = world.tasks()[7]
        solution = world.solution(task)  # the built-in reference, matched by the task's text
        assert solution == builtin_world.solution(builtin_world.tasks()[7])
        session, verdict = await solve(world, task, solution)
        local = await builtin_world.open(task, episode_id="local")
        assert [t.model_dump() for t in session.tools] == [t.model_dump() for t in local.tools]
        await local.close()
        assert verdict.result == "complete" and verdict.mode == "code"
        assert verdict.detail["execution_status"] == "success"
        assert await _settled(lambda: served.hub.active == 0)


async def test_a_dropped_socket_is_replaced_and_the_episode_replayed(builtin_world: Any) -> None:
    async with running(builtin_world) as served:
        world = OpenEnvWorld(served.url, FAST)
        await world.connect()
        task = next(t for t in world.tasks() if t.key == ("codeforge_devtools", 0))
        solution = world.solution(task)
        session = await world.open(task, episode_id="drop")
        try:
            (first, first_args), (second, second_args) = solution.steps
            await session.call_tool(ToolCall(id="1", name=first, arguments=first_args))
            session._sock.ws.transport.abort()  # type: ignore[union-attr]  # the socket dies mid-episode
            created = await session.call_tool(ToolCall(id="2", name=second, arguments=second_args))
            assert not created.is_error and session.reconnects == 1
            assert (await session.verify("", [])).result == "complete"  # the replay rebuilt the state, once
        finally:
            await session.close()


async def test_agent_facing_errors_and_world_errors(builtin_world: Any) -> None:
    async with running(builtin_world) as served:
        world = OpenEnvWorld(served.url, FAST)
        await world.connect()
        session = await world.open(next(t for t in world.tasks() if t.scenario == "shopfront_commerce"),
                                   episode_id="errors")
        try:
            unknown = await session.call_tool(ToolCall(id="1", name="teleport", arguments={}))
            assert unknown.is_error and unknown.text == "Unknown tool: teleport"
            bad = await session.call_tool(ToolCall(id="2", name="get_product", arguments={"product_id": "x"}))
            assert bad.is_error and bad.text.startswith("Input validation error")
            missing = await session.call_tool(ToolCall(id="3", name="get_product", arguments={"product_id": 99999}))
            assert missing.is_error and missing.status == 500
            before = await session._sock.request({"type": "state"})  # type: ignore[union-attr]
            for hidden in ("verify", "done", "__list_scenarios__"):  # the agent never reaches them
                refused = await session.call_tool(ToolCall(id="4", name=hidden, arguments={}))
                assert refused.is_error and refused.text == f"Unknown tool: {hidden}"
            assert await session._sock.request({"type": "state"}) == before  # type: ignore[union-attr]
            assert before["step_count"] == 4  # list_tools and the three calls above: nothing else was sent
        finally:
            await session.close()
        with capture_logs() as logs, pytest.raises(WorldError, match="Scenario 'atlantis' not found") as caught:
            await world.open(Task(scenario="atlantis", task_idx=0, text="?"), episode_id="x")
        assert "atlantis" in str(caught.value)
        assert _retries(logs) == []  # not retried: it never will


async def test_sql_mode_asks_the_servers_verify(builtin_world: Any) -> None:
    async with running(builtin_world) as served:
        world = OpenEnvWorld(served.url, RemoteOptions(verifier="sql"))
        await world.connect()
        task = world.tasks()[0]
        _, verdict = await solve(world, task, world.solution(task))
        assert verdict.result == "judge_error" and verdict.mode == "sql"  # this server has no judge
        assert verdict.detail["llm_judge"] == {"error": "LLM endpoint not configured for sql verifier mode"}


async def test_capacity_and_refusals_are_retried_within_bounds(builtin_world: Any) -> None:
    async with running(builtin_world, max_sessions=1) as served:
        world = OpenEnvWorld(served.url, RemoteOptions(attempts=6, backoff_s=0.2, max_backoff_s=0.5))
        await world.connect()
        task = world.tasks()[0]
        holder = await world.open(task, episode_id="holder")
        waiting = asyncio.create_task(world.open(task, episode_id="waiting"))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # at capacity: backing off and retrying
        await holder.close()
        second = await asyncio.wait_for(waiting, 30)
        await second.close()
    sock = bound_tcp_socket("127.0.0.1", 0)  # a port nobody listens on
    port = sock.getsockname()[1]
    sock.close()
    refused = OpenEnvWorld(f"http://127.0.0.1:{port}", FAST)
    with pytest.raises(ConfigError, match=f"--worlds openenv\\+http://127.0.0.1:{port}: cannot connect"):
        await refused.connect()
    refused._tasks = [task]
    with capture_logs() as logs, pytest.raises(WorldError, match="cannot connect"):
        await refused.open(task, episode_id="nobody")
    assert len(_retries(logs)) == FAST.attempts - 1  # within bounds: counted, not timed


async def test_a_server_that_goes_away_mid_episode_is_a_world_error(builtin_world: Any) -> None:
    async with running(builtin_world) as served:
        world = OpenEnvWorld(served.url, FAST)
        await world.connect()
        session = await world.open(world.tasks()[0], episode_id="gone")
    try:
        with pytest.raises(WorldError):
            await asyncio.wait_for(session.call_tool(ToolCall(id="1", name="list_users", arguments={})), 30)
    finally:
        await session.close()


def test_bad_specs_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="expected openenv\\+http://HOST:PORT"):
        load_worlds("openenv+http://")
    with pytest.raises(ConfigError, match="unknown remote world"):
        load_worlds("mcp+ftp://x")
    with pytest.raises(ConfigError, match="--tasks-file is for MCP worlds"):
        load_worlds("openenv+http://h:1", tasks_file=__file__)  # type: ignore[arg-type]


async def _settled(condition: Any, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


@pytest.mark.parametrize(("answer", "said"), [
    ("<html>not an env</html>", r"__list_scenarios__ failed: ws://127\.0\.0\.1:\d+/ws: reply is not JSON: "
                                r"'<html>not an env</html>'$"),
    ('{"type": "error", "data": {"code": "UNKNOWN_TYPE", "message": "what is step?"}}',
     r"__list_scenarios__ failed: ws://127\.0\.0\.1:\d+/ws: server error UNKNOWN_TYPE: what is step\?$"),
    ('{"type": "observation", "data": {"observation": {"reward_type": "unknown_tool", "error": "no such tool"}}}',
     r"__list_scenarios__ answered unknown_tool: no such tool$"),
])
async def test_a_server_that_is_not_an_awm_env_is_one_config_error(answer: str, said: str) -> None:
    """Any websocket server on the port, answering its own way: the connect says what it got, in one line."""
    from websockets.asyncio.server import ServerConnection, serve

    async def handler(ws: ServerConnection) -> None:
        async for _ in ws:
            await ws.send(answer)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        world = OpenEnvWorld(f"http://127.0.0.1:{port}", FAST)
        with pytest.raises(ConfigError, match=rf"^--worlds openenv\+http://127\.0\.0\.1:{port}: " + said) as info:
            await world.connect()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("port", "said"), [("x", "Port could not be cast to integer value as 'x'"),
                                           ("99999", "Port out of range 0-65535")])
def test_a_port_that_is_not_one_is_a_config_error(port: str, said: str) -> None:
    with pytest.raises(ConfigError, match=rf"^--worlds openenv\+http://127\.0\.0\.1:{port}: {said}; expected "
                                          r"openenv\+http://HOST:PORT$"):
        load_worlds(f"openenv+http://127.0.0.1:{port}")
