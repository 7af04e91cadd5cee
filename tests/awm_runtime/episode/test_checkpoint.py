"""Checkpoints and forks on the built-in worlds: a fork at turn 0 is a fresh episode, a fork at turn k keeps
the prefix byte for byte and the world DB hash for hash, and the ask / solo arms do what they say."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from awm_runtime import EpisodeRecord, RunConfig, fork_episode, load_checkpoint, run_episode
from awm_runtime._events import Event, ModelCalled
from awm_runtime.episode import Checkpointer
from awm_runtime.episode._checkpoint import sha256_file
from awm_runtime.episode._midturn import REPLY, SavedReply
from awm_runtime.scheduler import PreparedRun, prepare, run

SCENARIO = "codeforge_devtools"


def _config(out: Path | None, **changes: Any) -> RunConfig:
    return RunConfig(**{"scenarios": SCENARIO, "tasks": "0-4", "repeats": 2, "concurrency": 4,
                        "checkpoint": "every", "out": out, "preflight": "off", **changes})


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the novice with the oracle expert, checkpointed before every turn."""
    import asyncio

    out = tmp_path_factory.mktemp("ckpt") / "run"
    asyncio.run(run(_config(out)))
    return out


@pytest.fixture
async def prep() -> AsyncIterator[PreparedRun]:
    prepared = await prepare(_config(None))
    yield prepared
    await prepared.world.aclose()


def records(out: Path) -> list[EpisodeRecord]:
    return [EpisodeRecord.model_validate_json(line) for line in (out / "episodes.jsonl").read_bytes().splitlines()]


def dumped(messages: list[Any]) -> bytes:
    return orjson.dumps([m.model_dump(mode="json") for m in messages])


CLOCK = re.compile(rb"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?")


def replayed(messages: list[Any]) -> bytes:
    """The transcript with the times the world stamps from its clock (created_at = now) blanked: the only
    bytes a replay of the same seed may change."""
    return CLOCK.sub(b"<now>", dumped(messages))


SAME = ("outcome", "verdict", "reward", "turns", "tool_calls", "tool_errors", "format_errors", "expert_calls",
        "nudges", "final_answer", "ask_style")


def test_checkpoints_are_stored_and_reported(source: Path) -> None:
    for r in records(source):
        turns = sum(1 for m in r.messages if m.source == "policy")
        assert r.checkpoints is not None and r.checkpoints["mode"] == "every"
        assert r.checkpoints["count"] == turns  # one before every turn
        files = sorted((source / "checkpoints" / r.episode_id).glob("turn-*.json"))
        assert len(files) == turns
        on_disk = {f.stat().st_ino: f.stat().st_size for f in (source / "checkpoints" / r.episode_id).iterdir()
                   if f.name != REPLY}
        assert r.checkpoints["bytes"] == sum(on_disk.values())  # an unchanged DB is a hard link: counted once
        # the mid-turn saves: each policy reply, and each expert answer, as it arrived (one file, replaced)
        assert r.checkpoints["replies"] == turns + r.expert_calls
        saved = SavedReply.model_validate_json((source / "checkpoints" / r.episode_id / REPLY).read_bytes())
        last = [m for m in r.messages if m.source == "policy"][-1]
        assert saved.after_turn == turns - 1 and saved.policy.message == last
    index = [json.loads(line) for line in (source / "checkpoints" / "index.jsonl").read_text().splitlines()]
    assert len(index) == sum(r.checkpoints["count"] for r in records(source) if r.checkpoints)


async def test_a_fork_at_turn_zero_is_a_fresh_episode(source: Path, prep: PreparedRun) -> None:
    harness = prep.harnesses["main"]
    for original in records(source)[:6]:
        path = source / "checkpoints" / original.episode_id / "turn-0.json"
        forked = await fork_episode(path, harness, prep.world)
        assert replayed(forked.messages) == replayed(original.messages)
        assert [m for m in forked.messages if m.source == "policy"] == [
            m for m in original.messages if m.source == "policy"]  # the sim's replies, byte for byte
        assert {k: getattr(forked, k) for k in SAME} == {k: getattr(original, k) for k in SAME}
        assert forked.fork is not None and forked.fork["turn"] == 0 and forked.fork["episode_id"] == original.episode_id
        # and a fresh episode with the same seed plays the same sim transcript
        task = next(t for t in prep.world.tasks() if t.key == (original.scenario, original.task_idx))
        session = await prep.world.open(task, episode_id="fresh")
        spec = load_checkpoint(path).spec
        try:
            fresh = await run_episode(spec, task, session, harness)
        finally:
            await session.close()
        assert replayed(fresh.messages) == replayed(original.messages)


async def test_a_fork_at_turn_k_keeps_the_prefix_and_the_world_db(source: Path, prep: PreparedRun,
                                                                  tmp_path: Path) -> None:
    harness = prep.harnesses["main"]
    tried = 0
    for original in records(source):
        if original.turns < 4 or original.tool_calls < 2:
            continue
        k = 2
        path = source / "checkpoints" / original.episode_id / f"turn-{k}.json"
        cp = load_checkpoint(path)
        assert cp.turn == k and cp.world["kind"] == "db"
        n = len(cp.messages)
        assert dumped(original.messages[:n]) == dumped(cp.messages)
        writer = Checkpointer(tmp_path / "forks", "every", {})
        forked = await fork_episode(path, harness, prep.world, checkpointer=writer)
        assert dumped(forked.messages[:n]) == dumped(original.messages[:n])  # byte-identical prefix
        assert forked.fork is not None and forked.fork["db_sha256"] == cp.world["sha256"]
        assert forked.fork["prefix_messages"] == n
        # the fork's own first checkpoint (before its first turn, no call made yet) holds the original's DB at k
        first = load_checkpoint(tmp_path / "forks" / forked.episode_id / f"turn-{k}.json")
        assert first.world["sha256"] == cp.world["sha256"] == sha256_file(path.with_suffix(".db"))
        assert dumped(first.messages) == dumped(cp.messages)
        assert replayed(forked.messages) == replayed(original.messages)  # same arm, same seed: the same episode
        # not re-sampled, not re-billed: the record's usage covers the continuation only
        continuation = sum(1 for m in forked.messages[n:] if m.source == "policy")
        assert forked.usage["policy"].calls == continuation
        tried += 1
    assert tried >= 2


async def test_ask_and_solo_arms(source: Path, prep: PreparedRun) -> None:
    harness = prep.harnesses["main"]
    index = [json.loads(line) for line in (source / "checkpoints" / "index.jsonl").read_text().splitlines()]
    # a state whose prefix already asked the expert: its calls are the source episode's, not the fork arm's
    path = next(p for e in index if e["turn"] >= 1
                if load_checkpoint(p := source / "checkpoints" / e["path"]).counters.get("expert_calls"))
    cp = load_checkpoint(path)
    n = len(cp.messages)
    asked = await fork_episode(path, harness, prep.world, mode="ask", repeat=1)
    assert asked.messages[n].source == "expert" and asked.messages[n].role == "user"
    assert asked.fork is not None and asked.fork["advice_given"] and asked.fork["mode"] == "ask"
    assert asked.expert_calls >= 1 and asked.ask_style in ("recovery", "blind")  # the continuation's own
    prefix = {"turns": cp.turn, "messages": n, "expert_calls": cp.counters["expert_calls"],
              "nudges": len(cp.counters.get("nudge_log") or [])}
    assert {k: asked.fork["prefix"][k] for k in prefix} == prefix
    assert asked.fork["prefix"]["ask_style"] in ("recovery", "blind")
    solo = await fork_episode(path, harness, prep.world, mode="solo", repeat=1)
    assert all(m.source != "expert" for m in solo.messages[n:])
    assert solo.expert_calls == 0 and solo.ask_style == "solo" and solo.nudges == 0  # the prefix's are apart
    assert solo.fork is not None and solo.fork["prefix"]["expert_calls"] == cp.counters["expert_calls"] > 0
    assert solo.nudge_log == [e for e in solo.nudge_log if e.turn <= cp.turn]  # no nudge while ask_expert is withheld
    assert asked.seed == solo.seed != cp.seed  # continuation 1: a seed of its own, shared by the arms


async def test_an_unreadable_or_mismatched_checkpoint_is_refused(source: Path, prep: PreparedRun,
                                                                 tmp_path: Path) -> None:
    original = records(source)[0]
    path = source / "checkpoints" / original.episode_id / "turn-1.json"
    data = json.loads(path.read_text())
    data["world"]["sha256"] = "0" * 64  # the DB on disk is not the one the checkpoint names
    (tmp_path / "turn-1.db").write_bytes((path.parent / "turn-1.db").read_bytes())
    (tmp_path / "turn-1.json").write_text(json.dumps(data))
    bad = await fork_episode(tmp_path / "turn-1.json", prep.harnesses["main"], prep.world)
    assert bad.outcome == "error" and bad.end_reason == "world_error"
    assert bad.error is not None and "hash" in bad.error.message
    (tmp_path / "broken.json").write_text("{not json")
    from awm_runtime._errors import WorldError

    with pytest.raises(WorldError, match="unreadable"):
        load_checkpoint(tmp_path / "broken.json")


class Seen:
    """A sink that keeps the events."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def policy_calls(self) -> int:
        return sum(1 for e in self.events if isinstance(e, ModelCalled) and e.role == "policy")


async def test_a_resume_uses_the_reply_saved_mid_turn_and_no_other(source: Path, prep: PreparedRun,
                                                                   tmp_path: Path) -> None:
    harness = prep.harnesses["main"]
    for original in records(source)[:3]:
        directory = source / "checkpoints" / original.episode_id
        k = original.turns - 1  # the reply saved last is the last turn's, tied to the checkpoint before it
        seen, writer = Seen(), Checkpointer(tmp_path / "resumed", "every", {})
        resumed = await fork_episode(directory / f"turn-{k}.json", harness, prep.world, mode="resume",
                                     sinks=[seen], checkpointer=writer)
        assert resumed.resumed_from is not None and resumed.resumed_from["reused_replies"]["policy"] == 1
        assert seen.policy_calls() == 0  # the reply that had arrived is not sampled again
        assert dumped([m for m in resumed.messages if m.source == "policy"]) == dumped(
            [m for m in original.messages if m.source == "policy"])
        assert resumed.usage["policy"].calls == original.usage["policy"].calls  # billed once, not twice
        assert resumed.outcome == original.outcome and resumed.fork is None
        # the resumed episode saves the reply it reused too: a second kill reuses it again
        again = SavedReply.model_validate_json((tmp_path / "resumed" / resumed.episode_id / REPLY).read_bytes())
        last = [m for m in original.messages if m.source == "policy"][-1]
        assert again.after_turn == k and again.policy.message == last
        # from an earlier checkpoint, the saved reply (tied to turn k) is not used: those turns are played
        if k >= 1:
            seen = Seen()
            earlier = await fork_episode(directory / f"turn-{k - 1}.json", harness, prep.world, mode="resume",
                                         sinks=[seen])
            assert earlier.resumed_from is not None and earlier.resumed_from["reused_replies"]["policy"] == 0
            assert seen.policy_calls() == 2
