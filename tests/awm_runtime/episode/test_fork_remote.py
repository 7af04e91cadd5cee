"""Forking a remote OpenEnv world (awm-serve's app on loopback): the prefix's tool calls are replayed on a
fresh session through the reconnect's replay, and a world that answers differently is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awm_runtime import EpisodeRecord, RunConfig, fork_episode, load_checkpoint
from awm_runtime.scheduler import prepare, run
from awm_runtime.worlds import WorldOptions, load_local_worlds
from tests.awm_runtime.serve.conftest import running


@pytest.fixture
async def builtin_world() -> Any:
    world = load_local_worlds("builtin", options=WorldOptions(workers=2))
    yield world
    await world.aclose()


def _config(url: str, out: Path | None) -> RunConfig:
    return RunConfig(worlds=f"openenv+{url}", scenarios="codeforge_devtools", tasks="0-3", concurrency=4,
                     checkpoint="every", out=out, preflight="off")


async def test_a_remote_fork_replays_its_prefix_and_a_divergent_world_is_refused(builtin_world: Any,
                                                                                 tmp_path: Path) -> None:
    async with running(builtin_world) as served:
        out = tmp_path / "run"
        await run(_config(served.url, out))
        originals = [EpisodeRecord.model_validate_json(line)
                     for line in (out / "episodes.jsonl").read_bytes().splitlines()]
        original = next(r for r in originals if r.tool_calls >= 2 and r.turns >= 4)
        path = out / "checkpoints" / original.episode_id / "turn-3.json"
        cp = load_checkpoint(path)
        calls = cp.world["calls"]
        assert cp.world["kind"] == "replay" and len(calls) == cp.counters["tool_calls"] >= 1
        prep = await prepare(_config(served.url, None))
        try:
            harness = prep.harnesses["main"]
            forked = await fork_episode(path, harness, prep.world)
            assert forked.error is None, forked.error
            assert forked.outcome == original.outcome and forked.verdict == original.verdict
            n = len(cp.messages)
            assert [m.model_dump() for m in forked.messages[:n]] == [m.model_dump() for m in original.messages[:n]]
            assert [m.content for m in forked.messages if m.source == "policy"] == [
                m.content for m in original.messages if m.source == "policy"]

            # A world that answers one of the prefix's calls differently: refused, with the turn it diverged at.
            data = json.loads(path.read_text())
            data["world"]["calls"][-1]["is_error"] = not data["world"]["calls"][-1]["is_error"]
            (tmp_path / "diverged.json").write_text(json.dumps(data))
            refused = await fork_episode(tmp_path / "diverged.json", harness, prep.world)
            assert refused.outcome == "error" and refused.end_reason == "world_error"
            assert refused.error is not None
            assert f"diverged at turn {calls[-1]['turn']}" in refused.error.message
            assert "replaying call" in refused.error.message  # the reconnect's replay said where
        finally:
            await prep.world.aclose()
