"""Sharded runs: worker processes, one writer, exactly-once records, stop relayed to every shard."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from awm_runtime import ConfigError, RunConfig
from awm_runtime.models import load_registry
from awm_runtime.scheduler import RunControl, RunProgress, prepare, resolve_shards, run
from awm_runtime.scheduler._plan import EPISODES_PER_SHARD, split
from awm_runtime.scheduler._prepare import share_limits
from tests.awm_runtime.scheduler.test_run import keys
from tests.procs import exists


def test_auto_shards_follow_in_flight_episodes_up_to_one_less_than_the_cpus() -> None:
    assert resolve_shards("auto", 32, cpus=8) == 1
    assert resolve_shards("auto", EPISODES_PER_SHARD + 1, cpus=8) == 2
    assert resolve_shards("auto", 100 * EPISODES_PER_SHARD, cpus=4) == 3  # a core is left to the world workers
    assert resolve_shards("auto", 1000, cpus=2) == 1
    assert resolve_shards(3, 2) == 2  # never more shards than episodes in flight
    assert split(10, 3) == [4, 3, 3] and sum(split(1000, 7)) == 1000


async def test_a_hard_stop_reaches_every_shard_without_waiting_for_the_grace(tiny_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(worlds=str(tiny_dir), policy="slow", expert="none", repeats=6, concurrency=4, shards=2,
                       config_path=slow_config(tmp_path, 1.0), out=tmp_path / "run", grace_s=600)
    control = RunControl(grace_s=600)  # a grace no test waits for: only the hard stop ends the episodes
    progress = RunProgress()
    task = asyncio.create_task(run(await prepare(config), control=control, progress=progress))
    async with asyncio.timeout(60):
        while progress.in_flight < 4:  # noqa: ASYNC110 - the shards' heartbeat updates it
            await asyncio.sleep(0.05)
    control.stop("test", hard=True)
    async with asyncio.timeout(120):
        result = await task
    assert result.interrupted and result.summary["cancelled"] >= 1 and result.ran + result.not_run == 18
    assert not any(exists(s["pid"]) for s in result.summary["shard_stats"])


def test_shards_split_every_endpoint_limit_so_together_they_keep_to_it(tmp_path: Path) -> None:
    toml = tmp_path / "awm.toml"
    toml.write_text('[models.x]\nmodel = "openai/x"\nmax_concurrency = 10\nrpm = 7\n')
    registry = load_registry(toml)
    parts = [share_limits(registry, i, 3).get("x") for i in range(3)]
    assert [p.max_concurrency for p in parts] == [4, 3, 3] and [p.rpm for p in parts] == [3, 2, 2]
    assert all(p.tpm is None for p in parts) and share_limits(registry, 0, 1) is registry


def slow_config(tmp_path: Path, latency_s: float) -> Path:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.slow]\nmodel = "sim/oracle"\nprotocol = "native"\nmax_concurrency = 64\n'
                    f"params = {{ sim = {{ latency_s = {latency_s} }} }}\n")
    return path


async def test_a_sharded_run_records_every_episode_once_from_both_shards(tiny_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(worlds=str(tiny_dir), policy="slow", expert="none", repeats=4, concurrency=6, shards=2,
                       config_path=slow_config(tmp_path, 0.05), out=tmp_path / "run")
    progress = RunProgress()
    result = await run(await prepare(config), progress=progress)
    got = keys(result.out)
    assert len(got) == len(set(got)) == 12
    assert all(json.loads(x)["outcome"] == "complete" for x in (result.out / "episodes.jsonl").read_text().splitlines())
    stats = result.summary["shard_stats"]
    assert [s["exit"] for s in stats] == [0, 0] and not any(exists(s["pid"]) for s in stats)
    events = [json.loads(x) for x in (result.out / "events.jsonl").read_text().splitlines()]
    assert {e.get("shard") for e in events if e["event"] == "episode_started"} == {0, 1}
    assert sum(1 for e in events if e["event"] == "episode_ended") == 12
    said = {p.name: p.read_text() for p in result.out.glob("shard-*.log")}
    assert not said  # stderr logs are kept only when a shard said something
    assert progress.stats.episodes == 12 and result.summary["arms"]["main"]["completion_rate"] == 1.0


async def test_stopping_a_sharded_run_cancels_in_shards_and_resume_completes(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = RunConfig(worlds=str(tiny_dir), policy="slow", expert="none", repeats=6, concurrency=4, shards=2,
                       config_path=slow_config(tmp_path, 1.0), out=out, grace_s=0.2)
    control = RunControl(grace_s=0.2)
    progress = RunProgress()
    task = asyncio.create_task(run(await prepare(config), control=control, progress=progress))
    async with asyncio.timeout(60):
        while progress.in_flight < 4:  # noqa: ASYNC110 - the shards' heartbeat updates it
            await asyncio.sleep(0.05)
    control.stop("test")
    result = await task
    assert result.interrupted and result.summary["cancelled"] >= 1
    assert result.ran + result.not_run == 18
    assert not any(exists(s["pid"]) for s in result.summary["shard_stats"])

    again = config.model_copy(update={"resume": True, "grace_s": 30.0})
    final = await run(await prepare(again))
    got = keys(out)
    assert len(got) == len(set(got)) == 18 and final.not_run == 0


async def test_a_shard_that_cannot_start_fails_the_run_clearly(tmp_path: Path) -> None:
    config = RunConfig(worlds="builtin", policy="sim/oracle", expert="none", scenarios="shop*", tasks="0",
                       concurrency=4, shards=2, out=tmp_path / "run")
    prep = await prepare(config)
    prep.config = prep.config.model_copy(update={"worlds": str(tmp_path / "vanished")})  # gone since prepare
    with pytest.raises(ConfigError, match=r"shard \d failed to start: .*vanished' does not exist"):
        await run(prep)


async def test_a_shard_killed_mid_run_loses_only_its_in_flight_episodes(tiny_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = RunConfig(worlds=str(tiny_dir), policy="slow", expert="none", repeats=8, concurrency=4, shards=2,
                       config_path=slow_config(tmp_path, 0.5), out=out)
    progress = RunProgress()
    task = asyncio.create_task(run(await prepare(config), progress=progress))

    def started() -> list[dict[str, object]]:
        text = (out / "events.jsonl").read_text() if (out / "events.jsonl").is_file() else ""
        return [e for e in map(json.loads, text.splitlines()) if e["event"] == "shard_started"]

    async with asyncio.timeout(60):
        while progress.in_flight < 4 or len(started()) < 2:  # noqa: ASYNC110 - heartbeats and event flushes
            await asyncio.sleep(0.05)
    victim = int(started()[0]["pid"])  # type: ignore[call-overload]
    os.kill(victim, signal.SIGKILL)
    result = await task
    stats = {s["pid"]: s for s in result.summary["shard_stats"]}
    assert stats[victim]["exit"] == -signal.SIGKILL
    assert 1 <= result.not_run <= 3 and result.ran + result.not_run == 24
    events = [json.loads(x)["event"] for x in (out / "events.jsonl").read_text().splitlines()]
    assert "shard_failed" in events
    got = keys(out)  # every line whole, every key once
    assert len(got) == len(set(got)) == result.ran

    again = config.model_copy(update={"resume": True})
    await run(await prepare(again))
    got = keys(out)
    assert len(got) == len(set(got)) == 24


async def test_a_full_disk_ends_a_sharded_run_cleanly_and_resume_completes(tiny_dir: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51, sharded: the one writer (in this process) meets ENOSPC after a few units; the shards are
    stopped, every line written is whole, and --resume records the rest once."""
    import errno

    from awm_runtime.logs import RunDirWriter

    appended = [0]
    real = os.write

    def full_after_two_units(fd: int, data: object) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("episodes.jsonl"):
            appended[0] += 1
            if appended[0] > 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)  # type: ignore[call-overload]

    monkeypatch.setattr(RunDirWriter, "write", staticmethod(full_after_two_units))
    config = RunConfig(worlds=str(tiny_dir), policy="slow", expert="none", repeats=6, concurrency=4, shards=2,
                       config_path=slow_config(tmp_path, 0.05), out=tmp_path / "run", grace_s=5)
    result = await run(await prepare(config))
    raw = (result.out / "episodes.jsonl").read_bytes()
    assert raw.endswith(b"\n") and all(json.loads(x) for x in raw.splitlines())
    assert result.interrupted and result.summary["stop_reason"].startswith("disk full: ")
    assert result.summary["recorded"] == len(raw.splitlines()) < 18
    monkeypatch.undo()  # space freed
    resumed = config.model_copy(update={"resume": True})
    await run(await prepare(resumed))
    got = keys(result.out)
    assert len(got) == len(set(got)) == 18
