"""MCP worlds against real MCP servers: awm-serve --mcp, the reference stack (fastapi-mcp), and stdio."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import types
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._errors import ConfigError, WorldError
from awm_runtime._sockets import bound_tcp_socket
from awm_runtime._types import Message, ToolCall
from awm_runtime.testing import FakeOpenAI, Reply
from awm_runtime.verifiers import Judge
from awm_runtime.worlds import (
    BUILTIN_SOURCES,
    RemoteOptions,
    WorldOptions,
    load_local_worlds,
    load_worlds,
    normalize_scenario,
)
from awm_runtime.worlds.remote._mcp import McpWorld
from tests.awm_runtime.serve.conftest import running

OPTIONS = RemoteOptions(attempts=2, backoff_s=0.05, max_backoff_s=0.1, connect_timeout_s=5.0, tool_timeout_s=10.0)


@pytest.fixture
async def builtin_world() -> Any:
    world = load_local_worlds("builtin", options=WorldOptions(workers=2))
    yield world
    await world.aclose()


def tasks_file(tmp_path: Path, world: Any, scenario: str) -> Path:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"task": t.text, "id": f"{t.scenario}/{t.task_idx}"}) + "\n"
                            for t in world.tasks() if t.scenario == scenario), encoding="utf-8")
    return path


async def test_episodes_on_awm_serve_mcp_are_isolated_and_judged_only_with_a_judge(builtin_world: Any,
                                                                                   tmp_path: Path) -> None:
    async with running(builtin_world, mcp=True) as served:
        spec = f"mcp+{served.url}/mcp/shopfront_commerce"
        world = load_worlds(spec, tasks_file=tasks_file(tmp_path, builtin_world, "shopfront_commerce"),
                            options=WorldOptions(tool_timeout_s=10))
        assert isinstance(world, McpWorld) and world.judged_here
        await world.connect()
        assert [t.key for t in world.tasks()] == [("shopfront_commerce", i) for i in range(10)]
        task = world.tasks()[0]
        (tool, arguments), = world.solution(task).steps
        one, two = await world.open(task, episode_id="a"), await world.open(task, episode_id="b")
        try:
            created = await one.call_tool(ToolCall(id="1", name=tool, arguments=arguments))
            assert not created.is_error and arguments["code"] in created.text
            listed = await two.call_tool(ToolCall(id="1", name="list_coupons", arguments={}))
            assert arguments["code"] not in listed.text
            unknown = await two.call_tool(ToolCall(id="2", name="verify", arguments={}))
            assert unknown.is_error and unknown.text == "Unknown tool: verify"
            assert (await one.verify("", [])).result == "no_verifier"
            with FakeOpenAI(key="judge-k", models=("judge",), default=Reply(content='{"classification": '
                                                                                '"complete", "reason": "ok"}'),
                            max_lifetime_s=120) as judge_server:
                world.judge = Judge(_judge_client(judge_server.url), name="loop-judge")
                messages = [Message(role="user", content=task.text, source="system")]
                verdict = await one.verify("done", messages)
                assert verdict.result == "complete" and verdict.mode == "sql"
                prompt = judge_server.requests[-1]["messages"][1]["content"]
                assert task.text in prompt and "(none given: judge from the task's own words)" in prompt
                assert "no database" in judge_server.requests[-1]["messages"][0]["content"]
        finally:
            await one.close()
            await two.close()
        assert served.hub.active == 0 or await _until(lambda: served.hub.active == 0)


def _judge_client(url: str) -> Any:
    from awm_runtime.models import ModelClient, ModelConfig

    os.environ["AWM_TEST_JUDGE_KEY"] = "judge-k"
    return ModelClient(ModelConfig(alias="loop-judge", model="openai/judge", api_base=url,
                                   api_key_env="AWM_TEST_JUDGE_KEY"), "judge")


async def _until(condition: Any, within_s: float = 10.0) -> bool:
    for _ in range(int(within_s / 0.02)):
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


async def reference_stack(db: Path) -> AsyncIterator[str]:
    """A scenario app mounted with fastapi-mcp, as OpenEnv's AWM server runs it, on a port of its own."""
    import uvicorn
    from fastapi_mcp import FastApiMCP

    code = (BUILTIN_SOURCES / "homehub_smart_home" / "app.py").read_text()
    os.environ["DATABASE_PATH"] = f"sqlite:///{db}"
    module = sys.modules["awm_reference_homehub"] = types.ModuleType("awm_reference_homehub")
    exec(compile(code, "<homehub>", "exec"), module.__dict__)
    app = module.app
    FastApiMCP(app).mount_http()
    sock = bound_tcp_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    assert await _until(lambda: server.started, 30)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)


async def test_the_reference_stack_lists_and_answers_as_our_engine_does(builtin_world: Any,
                                                                        tmp_path: Path) -> None:
    prepared = await builtin_world.prepare("homehub_smart_home")
    db = tmp_path / "homehub.db"
    shutil.copyfile(prepared.template, db)
    db.chmod(0o644)
    task = next(t for t in builtin_world.tasks() if t.scenario == "homehub_smart_home")
    local = await builtin_world.open(task, episode_id="local")
    stack = reference_stack(db)
    url = await anext(stack)
    try:
        (tmp_path / "t.jsonl").write_text(json.dumps({"task": task.text, "id": "reference"}) + "\n")
        world = McpWorld(f"mcp+{url}", tmp_path / "t.jsonl", OPTIONS)
        await world.connect()
        assert world.tasks()[0].key == ("homehub_smart_home_api", 0)  # named after serverInfo.name
        session = await world.open(world.tasks()[0], episode_id="ref")
        try:
            assert [(t.name, t.description, t.input_schema) for t in session.tools] == [
                (t.name, t.description, t.input_schema) for t in local.tools]
            for name, arguments in [("list_devices", {}), ("get_device", {"device_id": 1}),
                                    ("get_device", {"device_id": "one"}), ("nope", {})]:
                theirs = await session.call_tool(ToolCall(id="r", name=name, arguments=arguments))
                ours = await local.call_tool(ToolCall(id="o", name=name, arguments=arguments))
                assert (theirs.text, theirs.is_error) == (ours.text, ours.is_error), name
        finally:
            await session.close()
    finally:
        await local.close()
        await stack.aclose()
        os.environ.pop("DATABASE_PATH", None)


async def test_stdio_worlds_start_a_server_per_episode(tmp_path: Path) -> None:
    world = load_local_worlds("builtin")
    path = tasks_file(tmp_path, world, "homehub_smart_home")
    command = f"{sys.executable} -c 'from awm_runtime.cli import serve_main; raise SystemExit(serve_main())' " \
              "--stdio homehub_smart_home --world-workers 1"
    mcp_world = McpWorld(f"mcp+stdio:{command}", path, OPTIONS)
    await mcp_world.connect()
    assert mcp_world.tasks()[3].key == ("homehub_smart_home", 3)
    session = await mcp_world.open(mcp_world.tasks()[0], episode_id="stdio")
    try:
        result = await session.call_tool(ToolCall(id="1", name="list_devices", arguments={}))
        assert not result.is_error and json.loads(result.text)
    finally:
        await session.close()
    await mcp_world.aclose()


async def test_unreachable_servers_are_config_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "anything"}\n')
    sock = bound_tcp_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ConfigError, match="cannot open an MCP session"):
        await McpWorld(f"mcp+http://127.0.0.1:{port}/mcp/x", path, OPTIONS).connect()
    with pytest.raises(ConfigError, match="cannot open an MCP session"):
        await McpWorld("mcp+stdio:/nonexistent/mcp-server --flag", path, OPTIONS).connect()
    with pytest.raises(ConfigError, match="needs --tasks-file"):
        load_worlds("mcp+stdio:server")
    with pytest.raises(ConfigError, match="expected mcp\\+stdio:'COMMAND ARGS'"):
        load_worlds("mcp+stdio:", tasks_file=path)


async def test_a_stdio_server_that_dies_mid_episode_is_a_world_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "anything"}\n')
    script = tmp_path / "server.py"
    script.write_text(
        "import os\nfrom mcp.server.fastmcp import FastMCP\nmcp = FastMCP('dies')\n"
        "@mcp.tool()\ndef die() -> str:\n    os._exit(3)\n"
        "@mcp.tool()\ndef echo(text: str) -> str:\n    return text\n"
        "mcp.run()\n")
    world = McpWorld(f"mcp+stdio:{sys.executable} {script}", path, OPTIONS)
    await world.connect()
    session = await world.open(world.tasks()[0], episode_id="dies")
    try:
        assert (await session.call_tool(ToolCall(id="1", name="echo", arguments={"text": "hi"}))).text == "hi"
        with pytest.raises(WorldError):
            await session.call_tool(ToolCall(id="2", name="die", arguments={}))
        with pytest.raises(WorldError):
            await session.call_tool(ToolCall(id="3", name="echo", arguments={"text": "again"}))
    finally:
        await session.close()
    await world.aclose()


STATEFUL = """
import os, sys
from pathlib import Path
from mcp.server.fastmcp import FastMCP

print("notes server starting", file=sys.stderr, flush=True)
mcp = FastMCP("Notes Keeper")

@mcp.tool()
def remember(note: str) -> str:
    path = Path(os.environ["NOTES_FILE"])
    before = path.read_text() if path.exists() else ""
    path.write_text(before + note + "\\n")
    return f"{os.environ.get('GREETING', '-')} {path} held {len(before.splitlines())} notes"

mcp.run()
"""


async def test_stdio_episodes_get_a_fresh_episode_dir_and_the_world_env(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "Remember milk.", "id": "ticket-9", "success_criteria": "milk is remembered"}\n')
    script = tmp_path / "notes.py"
    script.write_text(STATEFUL)
    monkeypatch.setenv("GREETING", "hello")
    options = RemoteOptions(attempts=1, world_env=("NOTES_FILE={episode_dir}/notes.txt", "GREETING"),
                            log_dir=tmp_path / "run")
    world = McpWorld(f"mcp+stdio:{sys.executable} {script}", path, options)
    await world.connect()
    task, = world.tasks()
    assert (task.scenario, task.scenario_title, task.kind) == ("notes_keeper", "Notes Keeper", "mcp")
    assert world.criteria[task.key].success == ("milk is remembered",)
    texts, dirs = [], []
    for repeat in range(2):
        session = await world.open(task, episode_id=f"ep-{repeat}")
        try:
            texts.append((await session.call_tool(ToolCall(id="1", name="remember", arguments={"note": "milk"}))).text)
            texts.append((await session.call_tool(ToolCall(id="2", name="remember", arguments={"note": "eggs"}))).text)
            dirs.append(session.episode_dir)
        finally:
            await session.close()
    assert [t.split()[0] for t in texts] == ["hello"] * 4
    assert [t.rsplit(" held ", 1)[1] for t in texts] == ["0 notes", "1 notes"] * 2  # each episode from nothing
    assert dirs[0] != dirs[1] and not any(d.exists() for d in dirs)  # removed with their episode
    log = tmp_path / "run" / "worlds" / "notes_keeper.log"
    assert log.read_text().count("notes server starting") >= 3  # the probe, episodes and spares, in one place
    assert [p.name for p in log.parent.iterdir()] == ["notes_keeper.log"]
    await world.aclose()
    renamed = McpWorld(f"mcp+stdio:{sys.executable} {script}", path,
                       RemoteOptions(attempts=1, scenario_name="My Notes", world_env=("NOTES_FILE=/dev/null",)))
    await renamed.connect()
    assert [(t.scenario, t.scenario_title) for t in renamed.tasks()] == [("my_notes", "My Notes")]
    await renamed.aclose()


async def test_a_server_that_fails_to_start_shows_its_last_lines_and_log(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "anything"}\n')
    script = tmp_path / "broken.py"
    script.write_text("import sys\nprint('loading config', file=sys.stderr)\n"
                      "print('KeyError: DATABASE_URL is not set', file=sys.stderr)\nsys.exit(1)\n")
    world = McpWorld(f"mcp+stdio:{sys.executable} {script}", path,
                     RemoteOptions(attempts=1, backoff_s=0.01, log_dir=tmp_path / "run"))
    with pytest.raises(ConfigError) as caught:
        await world.connect()
    await world.aclose()
    log = tmp_path / "run" / "worlds" / f"{normalize_scenario(Path(sys.executable).name)}.log"
    lines = str(caught.value).splitlines()
    assert "cannot open an MCP session" in lines[0]
    assert lines[1] == f"the server's last lines on stderr ({log}):"
    assert lines[-1] == "  KeyError: DATABASE_URL is not set" and "  loading config" in lines
    assert log.is_file() and [p.name for p in log.parent.iterdir()] == [log.name]


async def test_world_env_is_checked_and_load_worlds_keeps_the_judge(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "anything"}\n')
    monkeypatch.delenv("NOT_SET_29", raising=False)
    with pytest.raises(ConfigError, match="--world-env NOT_SET_29: NOT_SET_29 is not set"):
        McpWorld("mcp+stdio:server", path, RemoteOptions(world_env=("NOT_SET_29",)))
    with pytest.raises(ConfigError, match="expected KEY=VALUE or KEY"):
        McpWorld("mcp+stdio:server", path, RemoteOptions(world_env=("1BAD=x",)))
    with pytest.raises(ConfigError, match="--world-env is for mcp\\+stdio worlds"):
        McpWorld("mcp+http://127.0.0.1:9/mcp", path, RemoteOptions(world_env=("A=b",)))
    judge = Judge(_judge_client("http://127.0.0.1:9/v1"), name="j")
    world = load_worlds("mcp+stdio:server", tasks_file=path, judge=judge, remote={"scenario_name": "s"})
    assert world.judge is judge and isinstance(world, McpWorld) and world.scenario == "s"


RESETTABLE = """
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("Counter")
state = {"n": 0, "resets": 0}

@mcp.tool()
def reset() -> str:
    state["n"] = 0
    state["resets"] += 1
    return "reset"

@mcp.tool()
def bump() -> str:
    state["n"] += 1
    return f"n={state['n']} resets={state['resets']}"

mcp.run()
"""


async def test_a_reset_tool_runs_before_each_episode_and_is_hidden(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "Bump it."}\n')
    script = tmp_path / "counter.py"
    script.write_text(RESETTABLE)
    world = McpWorld(f"mcp+stdio:{sys.executable} {script}", path, RemoteOptions(attempts=1, reset_tool="reset"))
    await world.connect()
    session = await world.open(world.tasks()[0], episode_id="e")
    try:
        assert [t.name for t in session.tools] == ["bump"]
        assert (await session.call_tool(ToolCall(id="1", name="bump", arguments={}))).text == "n=1 resets=1"
    finally:
        await session.close()
    await world.aclose()
    missing = McpWorld(f"mcp+stdio:{sys.executable} {script}", path,
                       RemoteOptions(attempts=1, backoff_s=0.01, reset_tool="wipe"))
    await missing.connect()  # the probe does not reset; the first episode says what is wrong
    with pytest.raises(WorldError, match="the server has no tool 'wipe' \\(--world-reset-tool\\)"):
        await missing.open(missing.tasks()[0], episode_id="e")
    await missing.aclose()


def test_repeats_on_one_http_server_are_warned_about_once(tmp_path: Path) -> None:
    from structlog.testing import capture_logs

    from awm_runtime._config import RunConfig
    from awm_runtime.scheduler._prepare import _warn_shared_server

    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "anything"}\n')
    http = McpWorld("mcp+http://127.0.0.1:9/notes/mcp", path)
    stdio = McpWorld("mcp+stdio:server", path)
    with capture_logs() as logs:
        _warn_shared_server(RunConfig(worlds=http.name, repeats=3), http)
        _warn_shared_server(RunConfig(worlds=http.name), http)  # one episode per task: nothing shared
        _warn_shared_server(RunConfig(worlds=http.name, repeats=3, world_reset_tool="reset"), http)
        _warn_shared_server(RunConfig(worlds=stdio.name, repeats=3), stdio)  # a server per episode
    assert [e["event"] for e in logs] == ["mcp_shared_server"] and "--world-reset-tool" in logs[0]["note"]


async def test_spare_servers_wait_started_and_fresh_for_the_next_episodes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"task": "Remember milk."}\n')
    script = tmp_path / "notes.py"
    script.write_text(STATEFUL)
    options = RemoteOptions(attempts=1, spares=2, world_env=("NOTES_FILE={episode_dir}/notes.txt",))
    world = McpWorld(f"mcp+stdio:{sys.executable} {script}", path, options)
    await world.connect()
    task = world.tasks()[0]
    clock = asyncio.get_running_loop().time
    started = clock()
    first = await world.open(task, episode_id="first")  # none ready yet: it starts its own, two start behind it
    cold = clock() - started  # the control: an open that starts its server
    await first.close()
    assert await _until(lambda: len(world._spares._ready) == 2, within_s=60)
    spare_dirs = [s.episode_dir for s in world._spares._ready]
    started = clock()
    second = await world.open(task, episode_id="second")
    took = clock() - started
    try:
        assert second.episode_id == "second" and second.task == task and second.episode_dir in spare_dirs
        text = (await second.call_tool(ToolCall(id="1", name="remember", arguments={"note": "milk"}))).text
        assert text.endswith("held 0 notes")  # as fresh as a new server
    finally:
        await second.close()
    assert took < cold / 2, (took, cold)  # no process start on the episode's path (relative: load slows both)
    await world.aclose()
    assert not any(d.exists() for d in spare_dirs) and world._spares._ready == []
