"""Saving checkpoints as episodes play: a cancelled episode leaves no stray state, and the mid-turn reply of
an `asks` run is saved only beside a checkpoint it continues."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from awm_runtime import EpisodeRecord, RunConfig, fork_episode
from awm_runtime.episode._midturn import REPLY, SavedReply
from awm_runtime.scheduler import prepare, run

SLOW = '[models.slow]\nmodel = "sim/novice"\nprotocol = "native"\nmax_concurrency = 64\n' \
       "params = { sim = { latency_s = 0.4 } }\n"


def _config(tmp_path: Path, mode: str, **changes: object) -> RunConfig:
    config = tmp_path / "awm.toml"
    config.write_text(SLOW)
    return RunConfig(**{"scenarios": "codeforge_devtools", "tasks": "0-3", "concurrency": 4, "checkpoint": mode,
                        "out": tmp_path / "run", "preflight": "off", "config_path": config, "policy": "slow",
                        **changes})


@pytest.mark.parametrize("mode", ["asks", "every"])
async def test_an_episode_cancelled_mid_turn_leaves_no_stray_checkpoint_db(tmp_path: Path, mode: str) -> None:
    config = _config(tmp_path, mode)
    root = tmp_path / "run" / "checkpoints"
    task = asyncio.create_task(run(config))
    async with asyncio.timeout(60):
        while len(list(root.glob("*/turn-*.db"))) < 4:  # noqa: ASYNC110 - the run's files are what we wait for
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)  # mid-turn: each episode waits on its (slow) policy, its state captured
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)  # a capture that was running in a thread at the cancellation ends, then is tidied
    index = {json.loads(line)["path"] for line in (root / "index.jsonl").read_text().splitlines()} \
        if (root / "index.jsonl").is_file() else set()
    dbs = sorted(root.glob("*/turn-*.db"))
    for db in dbs:  # every DB left belongs to a checkpoint in the index: `--resume` can use it
        assert f"{db.parent.name}/{db.stem}.json" in index, f"stray {db.relative_to(root)}"
    assert not list(root.glob("*/*.tmp"))
    if mode == "every":
        assert dbs  # the written checkpoints stay


async def test_asks_saves_a_reply_only_on_a_turn_that_asks_beside_its_checkpoint(tmp_path: Path) -> None:
    config = _config(tmp_path, "asks", policy="sim/novice")
    result = await run(config)
    root = result.out / "checkpoints"
    recs = [EpisodeRecord.model_validate_json(x) for x in (result.out / "episodes.jsonl").read_bytes().splitlines()]
    asked = [r for r in recs if r.expert_calls]
    assert asked
    for r in recs:
        assert r.checkpoints is not None
        assert r.checkpoints["replies"] == 2 * r.expert_calls  # the asking reply, then the expert's answer
        if not r.expert_calls:
            assert not (root / r.episode_id / REPLY).exists()
            continue
        saved = SavedReply.model_validate_json((root / r.episode_id / REPLY).read_bytes())
        cp = root / r.episode_id / f"turn-{saved.after_turn}.json"
        assert cp.is_file()  # the checkpoint it continues was written, kept because the turn asked
        assert "asked" in json.loads(cp.read_text())["why"]
        assert saved.policy.action["type"] == "call_tool" and saved.policy.action["call"]["name"] == "ask_expert"
        assert saved.advice is not None and saved.advice.text

    # A kill after the answer, before another checkpoint was kept: a resume reuses the reply and the answer.
    prep = await prepare(config.model_copy(update={"out": None}))
    try:
        for r in asked[:2]:
            saved = SavedReply.model_validate_json((root / r.episode_id / REPLY).read_bytes())
            resumed = await fork_episode(root / r.episode_id / f"turn-{saved.after_turn}.json",
                                         prep.harnesses["main"], prep.world, mode="resume")
            assert resumed.resumed_from is not None
            assert resumed.resumed_from["reused_replies"] == {"policy": 1, "expert": 1}
            n = saved.after_turn + 1
            assert [m for m in resumed.messages if m.turn == n] == [m for m in r.messages if m.turn == n]
            assert resumed.expert_calls == r.expert_calls and resumed.usage["expert"].calls == r.usage["expert"].calls
    finally:
        await prep.world.aclose()


async def test_a_full_disk_stops_checkpoints_not_episodes_and_leaves_no_half_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51: ENOSPC injected at the checkpoint writer after a few files: the episodes all finish and are
    recorded, the checkpoint being written leaves nothing behind (no .tmp, no DB copy the index does not
    name, every index line whole), and the records say which episodes lost their checkpoints."""
    import errno
    import os

    from awm_runtime.episode import _checkpoint_store
    from awm_runtime.episode._checkpoint_store import Checkpointer

    calls = [0]
    real = os.write

    def fills_up(fd: int, data: object) -> int:
        calls[0] += 1
        if calls[0] > 6:
            if calls[0] == 7:  # half of this write lands, then the disk is full
                return real(fd, bytes(data)[: max(1, len(bytes(data)) // 2)])  # type: ignore[call-overload]
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)  # type: ignore[call-overload]

    monkeypatch.setattr(Checkpointer, "write", staticmethod(fills_up))
    monkeypatch.setattr(_checkpoint_store, "_full_roots", set())
    result = await run(_config(tmp_path, "every", policy="sim/novice", concurrency=1))
    recs = [EpisodeRecord.model_validate_json(x) for x in (result.out / "episodes.jsonl").read_bytes().splitlines()]
    assert len(recs) == 4 and not result.interrupted and all(r.outcome != "error" for r in recs)
    assert any((r.checkpoints or {}).get("disk_full") for r in recs)
    events = [json.loads(x)["event"] for x in (result.out / "events.jsonl").read_text().splitlines()]
    assert events.count("checkpoints_disk_full") == 1  # said once for the run directory
    root = result.out / "checkpoints"
    raw = (root / "index.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    index = {json.loads(line)["path"] for line in raw.splitlines()}  # every line whole
    assert not list(root.glob("*/*.tmp"))
    for f in root.glob("*/turn-*.*"):  # every file left belongs to a checkpoint in the index
        assert f"{f.parent.name}/{f.stem}.json" in index, f"stray {f.relative_to(root)}"
    for path in index:
        assert (root / path).is_file()
