"""awm-serve as OpenEnv's server behaves, seen from OpenEnv's own client: `done` carries a trajectory_path by
default (under a sessions directory named at start), and the MCP serverInfo is ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from openenv.core.env_server.serialization import serialize_observation

import awm_runtime
from tests.awm_runtime.serve.openenv_client import AwmClient, AwmObservation

SERVE = [sys.executable, "-c", "from awm_runtime.cli import serve_main; raise SystemExit(serve_main())"]
# What OpenEnv's own server puts in `done`'s observation (shared contract, docs/openenv.md "The wire contract").
OPENENV_DONE_KEYS = {"done", "metadata", "reward_type", "scenario", "steps_taken", "task", "task_idx",
                     "trajectory_path"}


@contextmanager
def serve(cwd: Path, *args: str) -> Iterator[tuple[str, list[str]]]:
    """awm-serve started in `cwd`: its URL, and (filled when it stops) its stderr lines."""
    proc = subprocess.Popen([*SERVE, "--port", "0", "--max-lifetime", "300", "--world-workers", "1", *args],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    stderr: list[str] = []
    try:
        if not url.startswith("http://"):
            raise AssertionError(f"awm-serve did not start: {proc.communicate(timeout=30)[1][-2000:]}")
        yield url, stderr
    finally:
        proc.terminate()
        stderr.extend(proc.communicate(timeout=30)[1].splitlines())


async def one_episode(url: str, kept: bool = True) -> dict[str, Any]:
    """reset, one tool call, done, with OpenEnv's client: the `done` payload as received, after checking that
    the client sees OpenEnv's `done` keys and that OpenEnv's server would send the same bytes for it."""
    async with AwmClient(url) as env:
        reset = await env.reset(scenario="homehub_smart_home", task_idx=0)
        assert reset.observation.reward_type == "reset_ok"
        await env.call("list_devices")
        done = await env.call("done")
        assert done.done is True
        payload = env.payloads[-1]
    if not kept:  # --no-trajectories: trajectory_path is null, which the client's model drops
        assert set(done.observation.model_dump()) == OPENENV_DONE_KEYS - {"trajectory_path"}
        return payload
    assert set(done.observation.model_dump()) == OPENENV_DONE_KEYS  # as OpenEnv's client sees OpenEnv's server
    model = AwmObservation(**payload["observation"], reward=payload["reward"], done=payload["done"])
    assert serialize_observation(model) == payload  # what OpenEnv's server serializer makes of it
    return payload


def read_trajectory(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def listing(folder: Path) -> list[Path]:
    return list(folder.iterdir())


async def test_done_carries_a_trajectory_path_by_default(tmp_path: Path) -> None:
    with serve(tmp_path) as (url, stderr):
        payload = await one_episode(url)
    observation = payload["observation"]
    path = Path(str(observation["trajectory_path"]))
    assert path.is_relative_to(tmp_path / "awm-serve-sessions")
    kept = read_trajectory(path)
    assert kept["scenario"] == "homehub_smart_home" and [s["tool_name"] for s in kept["trajectory"]] == [
        "list_devices"]
    named = [line for line in stderr if "awm-serve: trajectories:" in line]
    assert len(named) == 1 and str(path.parents[1]) in named[0]  # the directory was named at start


async def test_sessions_dir_chooses_and_no_trajectories_turns_off(tmp_path: Path) -> None:
    chosen = tmp_path / "kept"
    with serve(tmp_path, "--sessions-dir", str(chosen)) as (url, _):
        payload = await one_episode(url)
    assert Path(payload["observation"]["trajectory_path"]).parent.parent == chosen
    with serve(tmp_path, "--no-trajectories") as (url, stderr):
        payload = await one_episode(url, kept=False)
    assert "trajectory_path" not in payload["observation"] or payload["observation"]["trajectory_path"] is None
    assert not (tmp_path / "awm-serve-sessions").exists() and not any("trajectories:" in s for s in stderr)


async def test_mcp_server_info_names_us_at_our_version(tmp_path: Path) -> None:
    params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], "--stdio", "homehub_smart_home",
                                                           "--world-workers", "1"], cwd=tmp_path,
                                   env=dict(os.environ))  # the SDK passes on only a few variables by default
    with open("/dev/null", "w") as errlog:  # noqa: ASYNC230 - a test's log sink
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
    assert (init.serverInfo.name, init.serverInfo.version) == ("awm-serve", awm_runtime.__version__)
    assert listing(tmp_path) == []  # an MCP episode has no `done`: nothing is written
