"""awm-serve's OpenEnv adapter, driven by OpenEnv's own client (openenv 0.3.1) over a real socket."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import httpx
import pytest
from openenv.core.env_server.mcp_types import CallToolAction as OeCallTool
from openenv.core.env_server.mcp_types import ListToolsAction as OeListTools
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import EnvironmentMetadata, State, WSResetMessage, WSStepMessage
from pydantic import Field, TypeAdapter, ValidationError
from websockets.asyncio.client import connect

from awm_runtime.serve import classify_tool_error
from awm_runtime.worlds import check_tasks
from tests.awm_runtime.serve.conftest import running, until
from tests.awm_runtime.serve.openenv_client import AwmClient, AwmObservation

CONTRACT_KEYS = {"reward_type", "scenario", "task", "task_idx", "has_verifier", "num_tools", "tool_name",
                 "tool_result", "error", "warning", "verify_result", "steps_taken", "scenarios", "total",
                 "trajectory_path", "session_dir"}
OPENENV_ACTION = TypeAdapter(Annotated[OeListTools | OeCallTool, Field(discriminator="type")])


def same_as_openenv(payload: dict[str, Any]) -> bool:
    """The payload is what OpenEnv's serialize_observation makes of the same AWM observation."""
    obs = payload["observation"]
    if "tools" in obs:
        return set(obs) == {"tools", "error"} and all(set(t) == {"name", "description", "input_schema"}
                                                      and isinstance(t["description"], str) for t in obs["tools"])
    model = AwmObservation(**obs, reward=payload["reward"], done=payload["done"])
    return serialize_observation(model) == payload and set(obs) <= CONTRACT_KEYS


async def test_every_builtin_reference_solution_verifies_complete(builtin_world: Any) -> None:
    """And before it acts, every no-op verifies as `awm-worlds check` (check_tasks) says: none is trivial."""
    tasks = [t for t in builtin_world.tasks() if builtin_world.solution(t) is not None]
    assert len(tasks) == 60
    noop = {c.scenario + str(c.task_idx): c.noop_passes for c in await check_tasks(builtin_world, tasks,
                                                                                    reference=False)}
    assert set(noop.values()) == {False}
    async with running(builtin_world) as served:
        slots = asyncio.Semaphore(8)

        async def solve(task: Any) -> tuple[Any, list[dict[str, Any]]]:
            solution = builtin_world.solution(task)
            async with slots, AwmClient(served.url) as env:
                reset = await env.reset(scenario=task.scenario, task_idx=task.task_idx)
                assert reset.observation.reward_type == "reset_ok" and reset.observation.task == task.text
                assert reset.observation.has_verifier == {"sql": True, "code": True}
                tools = await env.list_tools()
                assert len(tools) == reset.observation.num_tools
                before = await env.call("verify", verifier_mode="code")
                assert before.observation.reward_type == ("complete" if noop[task.scenario + str(task.task_idx)]
                                                          else "others")
                for tool, arguments in solution.steps:
                    step = await env.call(tool, **arguments)
                    assert step.observation.reward_type == "tool_call_ok", step.observation.error
                verdict = await env.call("verify", verifier_mode="code", final_answer=solution.final_answer)
                return verdict, env.payloads

        results = await asyncio.gather(*(solve(t) for t in tasks))
    for verdict, payloads in results:
        assert verdict.observation.reward_type == "complete" and verdict.reward == 1.0 and verdict.done is False
        assert verdict.observation.verify_result["execution_status"] == "success"
        assert all(same_as_openenv(p) for p in payloads)


async def test_no_ops_verify_as_awm_worlds_check_says(trap: Any) -> None:
    tasks = [t for t in trap.tasks() if t.scenario == "trap" and t.task_idx in (0, 1, 2, 5)]
    checks = {(c.scenario, c.task_idx): c.noop_passes for c in await check_tasks(trap, tasks, reference=False)}
    assert checks[("trap", 1)] is True and checks[("trap", 0)] is False and checks[("trap", 2)] is None
    expected = {True: ("complete", 1.0), False: ("others", 0.0), None: ("judge_error", 0.0)}
    async with running(trap) as served:
        for task in tasks:
            async with AwmClient(served.url) as env:
                await env.reset(scenario="Trap", task_idx=task.task_idx)  # any spelling of the name
                verdict = await env.call("verify")  # code mode by default
                assert (verdict.observation.reward_type, verdict.reward) == expected[checks[task.key]], task.key
                if checks[task.key] is None:  # the verifier itself failed (task 2 divides by zero, 5 writes)
                    result = verdict.observation.verify_result
                    assert result["execution_status"] == "error" and result["result"] == "others"
                    assert f"scenario trap task {task.task_idx}" in result["error_message"]
                assert all(same_as_openenv(p) for p in env.payloads)


async def test_done_ends_the_episode_and_every_later_step_says_so(builtin_world: Any) -> None:
    async with running(builtin_world) as served, AwmClient(served.url) as env:
        await env.reset(scenario="shopfront_commerce", task_idx=2, episode_id="ep-7")
        await env.list_tools()
        verify = await env.call("verify")
        assert verify.observation.reward_type == "others" and verify.observation.steps_taken == 2
        assert await env.state() == State(episode_id="ep-7", step_count=2)
        done = await env.call("done")
        assert done.done is True and done.reward == 0.0
        assert done.observation.model_dump() == {
            "done": False, "metadata": {}, "reward_type": "episode_done", "scenario": "shopfront_commerce",
            "task": verify.observation.task, "task_idx": 2, "steps_taken": 3}  # done/reward travel outside
        # As OpenEnv's `done`, ours always carries trajectory_path: null here, as no --sessions-dir keeps one.
        assert env.payloads[-1]["observation"]["trajectory_path"] is None
        for after in (env.call("list_products"), env.call("verify"), env.step(OeListTools()), env.call("done")):
            step = await after
            assert step.done is True and step.reward is None
            assert step.observation.reward_type == "episode_already_done"
            assert step.observation.error == "Episode has ended. Call reset() to start a new episode."
        assert (await env.state()).step_count == 3
        again = await env.reset(scenario="shopfront_commerce", task_idx=2)
        assert again.observation.reward_type == "reset_ok" and (await env.state()).step_count == 0
        assert (await env.call("verify")).observation.reward_type == "others"
        assert all(same_as_openenv(p) for p in env.payloads if p["observation"].get("reward_type") != "episode_done")


async def test_reset_problems_are_reset_error_observations(trap: Any, builtin_world: Any) -> None:
    async with running(trap) as served, AwmClient(served.url) as env:
        for kwargs, error in [({}, "Parameter 'scenario' is required"),
                              ({"scenario": "atlantis"}, "Scenario 'atlantis' not found"),
                              ({"scenario": "trap", "task_idx": 6}, "task_idx 6 out of range (0..5)"),
                              ({"scenario": "trap", "task_idx": -1}, "task_idx -1 out of range (0..5)")]:
            reset = await env.reset(**kwargs)
            assert (reset.observation.reward_type, reset.observation.error) == ("reset_error", error)
            assert reset.done is False and reset.reward is None
        broken = await env.reset(scenario="broken_import", task_idx=0)
        assert broken.observation.reward_type == "reset_error"
        assert broken.observation.error.startswith("Sub-environment start failed: ")
        assert "nonexistent_module_xyz" in broken.observation.error
        with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):  # as in OpenEnv: a non-integer index raises
            await env.reset(scenario="trap", task_idx="0")
        # A failed reset leaves no episode behind: tools, verify and done say so, as before any reset.
        listing = await env.step(OeListTools())
        assert listing.observation.tools == [] and listing.observation.error.startswith("Sub-environment is not")
        call = await env.call("count_items")
        assert (call.observation.reward_type, call.reward) == ("server_error", 0.0)
        verify = await env.call("verify")
        assert verify.observation.error == "Cannot verify: environment not initialized (reset failed or not called)"
        listed = await env.call("__list_scenarios__")
        assert listed.observation.total == 2 and listed.observation.reward_type == "tool_call_ok"
        assert [s["name"] for s in listed.observation.scenarios] == ["trap", "broken_import"]
        assert listed.observation.scenarios[0]["num_tasks"] == 6 and listed.reward is None
        done = await env.call("done")
        assert done.done is True and done.observation.reward_type == "server_error"
        assert all(same_as_openenv(p) for p in env.payloads)


async def test_tool_errors_get_openenvs_reward_types(builtin_world: Any) -> None:
    async with running(builtin_world) as served, AwmClient(served.url) as env:
        await env.reset(scenario="shopfront_commerce", task_idx=0, reward_config={"format_error": -0.5})
        unknown = await env.call("teleport")
        assert (unknown.observation.reward_type, unknown.reward) == ("tool_not_found", -0.5)
        assert unknown.observation.error == "Unknown tool: teleport" and unknown.observation.tool_name == "teleport"
        bad = await env.call("get_product", product_id="not a number")
        assert (bad.observation.reward_type, bad.reward) == ("invalid_args", -0.5)
        assert bad.observation.error.startswith("Input validation error: ")
        missing = await env.call("get_product", product_id=999999)  # generated code has no 404s: a 500
        assert missing.observation.error == ("Error calling get_product. Status code: 500. "
                                             "Response: Internal Server Error")
        assert (missing.observation.reward_type, missing.reward) == ("server_error", 0.0)
        ok = await env.call("get_product", product_id=1)
        assert (ok.observation.reward_type, ok.reward) == ("tool_call_ok", 0.0)
        assert json.loads(ok.observation.tool_result)["id"] == 1
        mode = await env.call("verify", verifier_mode="vibes")
        assert mode.observation.error == "Invalid verifier_mode 'vibes'. Must be one of: code, sql"
        assert (mode.observation.reward_type, mode.reward) == ("invalid_args", -0.5)
        assert (await env.call("verify", verifier_mode="sql")).observation.reward_type == "judge_error"  # no judge
        custom = await env.reset(scenario="shopfront_commerce", task="Do something nobody planned.")
        assert custom.observation.has_verifier is None and custom.observation.task == "Do something nobody planned."
        verify = await env.call("verify")
        assert verify.observation.reward_type == "no_verifier"
        assert verify.observation.error == "Cannot verify: no task specified at reset"
        assert all(same_as_openenv(p) for p in env.payloads)


def test_keyword_classification_is_openenvs() -> None:
    assert classify_tool_error("Unknown tool: x") == "tool_not_found"
    assert classify_tool_error('Error calling a. Status code: 404. Response: {"detail":"Order not found"}') \
        == "tool_not_found"
    assert classify_tool_error("Input validation error: 'x' is a required property") == "invalid_args"
    assert classify_tool_error("tool 'hang' did not finish: timed out") == "timeout"
    assert classify_tool_error("Error calling a. Status code: 500. Response: Internal Server Error") \
        == "server_error"


async def frames(url: str, *sent: str) -> list[dict[str, Any]]:
    """Send every frame at once (pipelined), then read one reply per frame that gets one."""
    async with connect(url) as ws:
        for frame in sent:
            await ws.send(frame)
        replies = []
        for frame in sent:
            if '"close"' in frame:
                break
            replies.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
        return replies


async def test_each_frame_gets_one_reply_in_order_and_bad_frames_get_openenvs_errors(builtin_world: Any) -> None:
    bad_reset = {"type": "reset", "data": {}, "extra": 1}
    bad_step = {"type": "step", "data": {"type": "call_tool"}}
    bad_action = {"type": "step", "data": {"type": "dance"}}
    async with running(builtin_world) as served:
        replies = await frames(served.ws_url, "{nope", json.dumps({"type": "teleport"}), json.dumps(bad_reset),
                               json.dumps(bad_step), json.dumps(bad_action), json.dumps({"type": "state"}),
                               json.dumps({"type": "reset", "data": {"scenario": "homehub_smart_home",
                                                                     "task_idx": 1}}),
                               json.dumps({"type": "step", "data": {"type": "list_tools"}}),
                               json.dumps({"type": "state"}),
                               json.dumps({"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/list",
                                                                   "id": 3}}),
                               json.dumps({"type": "close"}), json.dumps({"type": "state"}))
    assert len(replies) == 10
    assert replies[0]["data"]["code"] == "INVALID_JSON"
    assert replies[0]["data"]["message"] == f"Invalid JSON: {_json_error('{nope')}"
    assert replies[1]["data"] == {"message": "Unknown message type: teleport", "code": "UNKNOWN_TYPE"}
    for reply, raw in ((replies[2], bad_reset), (replies[3], bad_step), (replies[4], bad_action)):
        assert reply["type"] == "error" and reply["data"]["code"] == "VALIDATION_ERROR"
        assert reply["data"]["message"] == "Invalid message"
        assert _strip(reply["data"]["errors"]) == _strip(_openenv_errors(raw))
    assert replies[5] == {"type": "state", "data": {"episode_id": None, "step_count": 0}}
    assert replies[6]["data"]["observation"]["reward_type"] == "reset_ok"
    assert replies[7]["data"]["observation"]["tools"][0].keys() == {"name", "description", "input_schema"}
    assert replies[8]["data"]["step_count"] == 1
    assert replies[9] == {"type": "mcp", "data": {"jsonrpc": "2.0", "id": 3, "error": {
        "code": -32603, "message": "Environment does not support MCP", "data": None}}}


def _json_error(text: str) -> str:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return str(exc)
    raise AssertionError("valid JSON")


def _openenv_errors(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """The pydantic errors OpenEnv's server puts in a VALIDATION_ERROR frame for this frame."""
    try:
        if frame["type"] == "reset":
            WSResetMessage(**frame)
        else:
            OPENENV_ACTION.validate_python(WSStepMessage(**frame).data)
    except ValidationError as exc:
        return json.loads(json.dumps(exc.errors(), default=str))
    raise AssertionError("valid frame")


def _strip(errors: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["type"], tuple(e["loc"]), e["msg"]) for e in errors]


async def test_http_routes_are_openenvs(builtin_world: Any) -> None:
    async with running(builtin_world) as served, httpx.AsyncClient(base_url=served.url) as http:
        assert (await http.get("/health")).json() == {"status": "healthy"}
        EnvironmentMetadata(**(await http.get("/metadata")).json())
        schema = (await http.get("/schema")).json()
        assert set(schema) == {"action", "observation", "state"}
        assert set(schema["observation"]["properties"]) == CONTRACT_KEYS | {"done", "reward", "metadata"}
        assert {"list_tools", "call_tool"} <= set(schema["action"]["discriminator"]["mapping"])
        for path in ("/reset", "/step"):
            reply = await http.post(path, json={})
            assert reply.status_code == 400 and "WebSocket" in reply.json()["solution"]
        stats = (await http.get("/stats")).json()
        assert stats["total_sessions"] == 0 and stats["max_sessions"] == 10_000


async def test_past_the_cap_a_socket_gets_capacity_reached(builtin_world: Any) -> None:
    async with running(builtin_world, max_sessions=2) as served:
        async with AwmClient(served.url) as one, AwmClient(served.url) as two:
            await one.reset(scenario="zapline_integrations", task_idx=0)
            await two.reset(scenario="zapline_integrations", task_idx=1)
            with pytest.raises(RuntimeError, match=r"Server at capacity: 2/2 sessions active.*CAPACITY_REACHED"):
                async with AwmClient(served.url) as three:
                    await three.reset(scenario="zapline_integrations", task_idx=2)
        assert await until(lambda: served.hub.active == 0)
        async with AwmClient(served.url) as four:  # a freed slot is a slot again
            assert (await four.reset(scenario="zapline_integrations", task_idx=2)).observation.reward_type \
                == "reset_ok"


async def test_an_abandoned_socket_frees_its_session(builtin_world: Any) -> None:
    async with running(builtin_world, ping_s=0.3) as served:
        def episode_files() -> int:
            return len(list(builtin_world.episode_dbs()))

        # 1. The client process dies: the kernel closes its TCP connection without a WebSocket close frame.
        ws = await connect(served.ws_url)
        await ws.send(json.dumps({"type": "reset", "data": {"scenario": "codeforge_devtools", "task_idx": 0}}))
        await ws.recv()
        assert served.hub.active == 1 and episode_files() == 1
        ws.transport.abort()
        assert await until(lambda: served.hub.active == 0 and episode_files() == 0)
        # 2. The peer vanishes without a trace (no FIN): pings go unanswered and the server gives up on it.
        reader, writer = await asyncio.open_connection("127.0.0.1", int(served.url.rsplit(":", 1)[1]))
        writer.write(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        assert b"101" in (await reader.readuntil(b"\r\n\r\n"))
        assert served.hub.active == 1
        assert await until(lambda: served.hub.active == 0, within_s=10)  # ~0.6 s: one ping, one timeout
        writer.close()


async def test_an_idle_session_is_closed_after_the_idle_timeout(builtin_world: Any) -> None:
    async with running(builtin_world, idle_timeout_s=0.5) as served, connect(served.ws_url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"scenario": "codeforge_devtools", "task_idx": 0}}))
        await ws.recv()
        await asyncio.wait_for(ws.wait_closed(), 10)
        assert ws.close_code == 1001
        assert await until(lambda: served.hub.active == 0)


async def test_a_burst_of_concurrent_sessions_all_complete(builtin_world: Any) -> None:
    tasks = builtin_world.tasks()
    async with running(builtin_world) as served:
        async def session(i: int) -> str:
            task = tasks[i % len(tasks)]
            tool, arguments = builtin_world.solution(task).steps[0]
            async with AwmClient(served.url, message_timeout_s=120) as env:
                await env.reset(scenario=task.scenario, task_idx=task.task_idx)
                await env.list_tools()
                return str((await env.call(tool, **arguments)).observation.reward_type)

        outcomes = await asyncio.gather(*(session(i) for i in range(150)))
        assert outcomes == ["tool_call_ok"] * 150
        assert await until(lambda: served.hub.active == 0)
        assert not list(builtin_world.episode_dbs())


async def test_a_client_that_leaves_during_a_hung_call_frees_its_session(trap: Any) -> None:
    async with running(trap) as served:
        ws = await connect(served.ws_url)
        await ws.send(json.dumps({"type": "reset", "data": {"scenario": "trap", "task_idx": 3}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "hang"}}))
        ws.transport.abort()  # gone while its call hangs in a world worker (3 s tool timeout)
        assert await until(lambda: served.hub.active == 0, within_s=20)
        assert not list(trap.episode_dbs())
        async with AwmClient(served.url) as env:  # the world serves the next session as usual
            await env.reset(scenario="trap", task_idx=1)
            assert (await env.call("count_items")).observation.tool_result == '{\n  "count": 2\n}'
