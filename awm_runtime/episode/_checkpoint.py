"""Checkpoints of an episode between turns, and forks that start from them (docs/forks.md).

A checkpoint is the state before a turn: the messages with their sources, the counters and budgets,
the seed (the simulated policies draw each turn from the seed and the turn, so that is their whole
RNG state), the task, the arm's resolved definition, and the world: a copy of its DB, taken while
no call is in flight, or (remote worlds) the tool calls made so far, which a fork replays on a fresh
session. Files: `<run>/checkpoints/<episode_id>/turn-<k>.json` (+ `.db`), `turn` = turns played.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import os
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import orjson
import structlog
from pydantic import BaseModel, ConfigDict, Field

from awm_runtime._errors import WorldError
from awm_runtime._interfaces import WorldSession
from awm_runtime._prompts import render
from awm_runtime._types import (
    EpisodeRecord,
    EpisodeSpec,
    ExpertAnswer,
    Message,
    ModelRef,
    NudgeEvent,
    Task,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    Verdict,
)
from awm_runtime.episode._state import EpisodeState

log = structlog.get_logger("awm_runtime.episode")
CHECKPOINTS = "checkpoints"
INDEX = "index.jsonl"  # one line per checkpoint saved, appended after its files are in place
CheckpointMode = Literal["none", "asks", "every"]
FORMAT_VERSION = 1


class WorldCall(BaseModel):
    """One tool call of a remote world's prefix: replayed by a fork, whose outcome must match."""

    model_config = ConfigDict(extra="forbid")

    turn: int
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False
    text_sha256: str = ""


class Checkpoint(BaseModel):
    """An episode's state after `turn` turns (before turn `turn + 1`)."""

    model_config = ConfigDict(extra="forbid")

    version: int = FORMAT_VERSION
    run_id: str
    episode_id: str
    spec: EpisodeSpec
    task: Task
    arm: dict[str, Any] = Field(default_factory=dict)  # the arm's resolved definition
    policy: ModelRef
    expert: ModelRef | None = None
    turn: int
    why: list[str] = Field(default_factory=list)  # every | asked | nudged: why it was kept
    preceding: str = "nothing"  # what happened just before: tool_error | format_error | nothing
    messages: list[Message]
    tools: list[str] = Field(default_factory=list)  # the tool names the policy was offered
    counters: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Usage] = Field(default_factory=dict)  # the prefix's, already billed
    seed: int = 0
    rng: dict[str, Any] = Field(default_factory=dict)
    world: dict[str, Any] = Field(default_factory=dict)  # {kind: db, file, sha256, bytes} | {kind: replay, calls}
    saved_at: float = 0.0
    save_ms: float = 0.0
    bytes: int = 0  # this checkpoint's files on disk

    @property
    def path_stem(self) -> str:
        return f"turn-{self.turn}"


def load_checkpoint(path: Path | str) -> Checkpoint:
    """A checkpoint read back from its JSON file; WorldError (one line) if it is unreadable."""
    try:
        return Checkpoint.model_validate_json(Path(path).read_bytes())
    except (OSError, ValueError) as exc:
        raise WorldError(f"checkpoint {path}: unreadable ({str(exc).splitlines()[0]})") from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _preceding(last_action: str) -> str:
    return last_action if last_action in ("tool_error", "format_error") else "nothing"


def _counters(ep: EpisodeState) -> dict[str, Any]:
    return {"tool_calls": ep.tool_calls, "tool_errors": ep.tool_errors, "format_errors": dict(ep.format_errors),
            "expert_calls": ep.expert_calls, "expert_denied": ep.expert_denied,
            "expert_answers": [a.model_dump() for a in ep.expert_answers],
            "nudge_log": [n.model_dump() for n in ep.nudge_log], "last_action": ep.last_action,
            "had_trouble": ep.had_trouble, "trouble_before_first_ask": ep.trouble_before_first_ask}


def restore_state(ep: EpisodeState, cp: Checkpoint) -> None:
    """Put `cp`'s messages and counters into a fresh episode state."""
    c = cp.counters
    ep.messages = [m.model_copy(deep=True) for m in cp.messages]
    ep.turn = cp.turn
    ep.tool_calls, ep.tool_errors = int(c.get("tool_calls", 0)), int(c.get("tool_errors", 0))
    ep.format_errors = Counter(c.get("format_errors") or {})
    ep.expert_calls, ep.expert_denied = int(c.get("expert_calls", 0)), int(c.get("expert_denied", 0))
    ep.expert_answers = [ExpertAnswer(**a) for a in c.get("expert_answers") or []]
    ep.nudge_log = [NudgeEvent(**n) for n in c.get("nudge_log") or []]
    ep.last_action = str(c.get("last_action", "none"))
    ep.had_trouble = bool(c.get("had_trouble", False))
    ep.trouble_before_first_ask = c.get("trouble_before_first_ask")
    for role, u in cp.usage.items():
        ep.usage[role] = u.model_copy()


class RecordingSession:
    """A remote world's session that remembers its tool calls, so that a checkpoint can list them."""

    def __init__(self, inner: WorldSession) -> None:
        self.inner = inner
        self.calls: list[WorldCall] = []
        self.turn = 0

    @property
    def tools(self) -> Sequence[ToolSpec]:
        return self.inner.tools

    async def call_tool(self, call: ToolCall) -> ToolResult:
        result = await self.inner.call_tool(call)
        self.calls.append(WorldCall(turn=self.turn, name=call.name, arguments=call.arguments,
                                    is_error=result.is_error,
                                    text_sha256=hashlib.sha256(result.text.encode()).hexdigest()))
        return result

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        return await self.inner.verify(final_answer, messages)

    async def close(self) -> None:
        await self.inner.close()


def _db_of(session: Any) -> Path | None:
    db = getattr(session, "db", None)
    return db if isinstance(db, Path) else None


class Checkpointer:
    """Saves an episode's checkpoints: before every turn (`every`), or before each turn in which the agent
    asked the expert or was nudged (`asks`: taken before every turn, kept only if the turn asked or nudged)."""

    def __init__(self, root: Path, mode: CheckpointMode, arm: dict[str, Any]) -> None:
        self.root = root
        self.mode = mode
        self.arm = arm
        self.count = 0
        self.bytes = 0
        self.seconds = 0.0  # time spent capturing and writing (in worker threads; queueing excluded)
        self.captures = 0  # states captured: every turn; `asks` keeps only some of them
        self._last_capture_ms = 0.0
        self._last_db: tuple[Path, str] | None = None  # the latest DB copy and its hash: an unchanged DB is linked
        self._pending: tuple[Checkpoint, Path | None] | None = None

    def _capture(self, ep: EpisodeState, session: Any) -> tuple[Checkpoint, Path | None]:
        started = time.perf_counter()
        try:
            return self._capture_now(ep, session)
        finally:
            self.seconds += time.perf_counter() - started
            self.captures += 1

    def _capture_now(self, ep: EpisodeState, session: Any) -> tuple[Checkpoint, Path | None]:
        directory = self.root / ep.episode_id
        directory.mkdir(parents=True, exist_ok=True)
        cp = Checkpoint(run_id=ep.run_id, episode_id=ep.episode_id, spec=ep.spec, task=ep.task, arm=self.arm,
                        policy=ep.policy, expert=ep.expert, turn=ep.turn - 1, preceding=_preceding(ep.last_action),
                        messages=list(ep.messages), tools=[t.name for t in ep.tools or ()],
                        counters=copy.deepcopy(_counters(ep)),
                        usage={k: v.model_copy() for k, v in ep.usage.items()}, seed=ep.spec.seed,
                        rng={"kind": "seed_and_turn", "seed": ep.spec.seed, "turn": ep.turn - 1})
        db = _db_of(session)
        if db is not None:
            target = directory / f"turn-{cp.turn}.db"
            target.unlink(missing_ok=True)
            digest = sha256_file(db)  # no call in flight: the file is consistent
            if self._last_db is not None and self._last_db[1] == digest and self._last_db[0].exists():
                os.link(self._last_db[0], target)  # unchanged since the last checkpoint: no new bytes
                new = 0
            else:
                shutil.copyfile(db, target)  # in-kernel (sendfile) on Linux
                new = target.stat().st_size
            self._last_db = (target, digest)
            cp.world = {"kind": "db", "file": target.name, "sha256": digest, "bytes": target.stat().st_size,
                        "new_bytes": new}
            return cp, target
        if isinstance(session, RecordingSession):
            cp.world = {"kind": "replay", "calls": [c.model_dump() for c in session.calls]}
        else:
            cp.world = {"kind": "none"}
        return cp, None

    def _write(self, cp: Checkpoint, db: Path | None) -> None:
        started = time.perf_counter()
        path = self.root / cp.episode_id / f"{cp.path_stem}.json"
        cp.saved_at = time.time()
        cp.save_ms = round((time.perf_counter() - started) * 1000 + self._last_capture_ms, 3)
        db_bytes = int(cp.world.get("new_bytes", 0))  # a DB linked to the previous checkpoint's costs nothing
        body = b""
        for _ in range(3):  # the file states its own size: settle the number of digits
            body = cp.model_dump_json().encode()
            if cp.bytes == len(body) + db_bytes:
                break
            cp.bytes = len(body) + db_bytes
        tmp = path.with_suffix(".json.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, path)  # a reader never sees half a checkpoint
        entry = {"episode_id": cp.episode_id, "turn": cp.turn, "path": f"{cp.episode_id}/{path.name}",
                 "why": cp.why, "preceding": cp.preceding, "arm": cp.spec.arm, "scenario": cp.task.scenario,
                 "task_idx": cp.task.task_idx, "repeat": cp.spec.repeat, "seed": cp.seed, "bytes": cp.bytes,
                 "saved_at": cp.saved_at, "resumed": cp.spec.fork is not None}
        with (self.root / INDEX).open("ab") as f:  # one short write in append mode: shards may share the file
            f.write(orjson.dumps(entry) + b"\n")
        self.count += 1
        self.bytes += cp.bytes
        self.seconds += time.perf_counter() - started

    async def before_turn(self, ep: EpisodeState, session: Any) -> None:
        if isinstance(session, RecordingSession):
            session.turn = ep.turn
        before = self.seconds
        cp, db = await asyncio.to_thread(self._capture, ep, session)
        self._last_capture_ms = (self.seconds - before) * 1000
        if self.mode == "every":
            cp.why = ["every"]
            await asyncio.to_thread(self._write, cp, db)
            self._pending = None
        else:
            self._pending = (cp, db)

    async def after_turn(self, ep: EpisodeState) -> None:
        if self._pending is None:
            return
        cp, db = self._pending
        self._pending = None
        why = ["asked"] if ep.last_action == "ask_expert" else []
        if ep.nudge_log and ep.nudge_log[-1].turn == ep.turn:
            why.append("nudged")
        if why:
            cp.why = why
            await asyncio.to_thread(self._write, cp, db)
        elif db is not None:
            db.unlink(missing_ok=True)

    def discard(self) -> None:
        if self._pending is not None and self._pending[1] is not None:
            self._pending[1].unlink(missing_ok=True)
        self._pending = None

    def summary(self) -> dict[str, Any]:
        return {"mode": self.mode, "count": self.count, "captures": self.captures, "bytes": self.bytes,
                "seconds": round(self.seconds, 6)}


async def restore_world(cp: Checkpoint, cp_path: Path, session: Any) -> str | None:
    """Bring a fresh session to the checkpoint's world state: copy its DB, or replay its tool calls.

    Returns the restored DB's sha256 (None for a replayed world); WorldError when it cannot be done."""
    kind = cp.world.get("kind")
    if kind == "db":
        db = _db_of(session)
        if db is None:
            raise WorldError(f"checkpoint {cp_path}: it holds a world DB, but this world ({type(session).__name__}) "
                             "has no DB file to restore it into")
        source = cp_path.parent / str(cp.world["file"])

        def copy_db() -> str:
            db.unlink(missing_ok=True)
            shutil.copyfile(source, db)  # in-kernel (sendfile) on Linux
            return sha256_file(db)

        digest = await asyncio.to_thread(copy_db)
        if digest != cp.world.get("sha256"):
            raise WorldError(f"checkpoint {cp_path}: the restored world DB's hash {digest[:12]} is not the "
                             f"checkpoint's {str(cp.world.get('sha256'))[:12]}")
        return digest
    if kind == "replay":
        await replay_calls([WorldCall(**c) for c in cp.world.get("calls") or []], session, cp_path)
        return None
    if cp.world.get("kind") == "none" and cp.counters.get("tool_calls"):
        raise WorldError(f"checkpoint {cp_path}: the world's state was not saved, and the prefix called tools")
    return None


async def replay_calls(calls: list[WorldCall], session: Any, where: Path | str) -> None:
    """Replay a prefix's tool calls on a fresh remote session; each must succeed or fail as it did.

    An OpenEnv session replays through its own reconnect path (`replay`); others call tool by tool."""
    inner = session.inner if isinstance(session, RecordingSession) else session
    replay = getattr(inner, "replay", None)
    if replay is not None:
        try:
            await replay([(c.name, c.arguments, c.is_error) for c in calls])
        except WorldError as exc:
            index = getattr(exc, "index", None)
            turn = calls[index - 1].turn if isinstance(index, int) and 0 < index <= len(calls) else "?"
            raise WorldError(f"fork refused: the world diverged at turn {turn} of checkpoint {where}: {exc}") from None
    else:
        for c in calls:
            result = await inner.call_tool(ToolCall(id=f"replay-{c.turn}", name=c.name, arguments=c.arguments))
            if result.is_error != c.is_error:
                raise WorldError(f"fork refused: the world diverged at turn {c.turn} of checkpoint {where}: "
                                 f"{c.name} {'failed' if result.is_error else 'succeeded'} on replay, and "
                                 f"{'failed' if c.is_error else 'succeeded'} in the original")
    if isinstance(session, RecordingSession):
        session.calls = list(calls)


def prefix_usage_removed(record: EpisodeRecord, prefix: dict[str, Usage]) -> dict[str, Any]:
    """Take the prefix's (already billed) usage out of a fork's record; returns it as plain data."""
    out: dict[str, Any] = {}
    for role, before in prefix.items():
        now = record.usage.get(role)
        if now is None:
            continue
        now.calls -= before.calls
        now.prompt_tokens -= before.prompt_tokens
        now.completion_tokens -= before.completion_tokens
        now.cost_usd = round(now.cost_usd - before.cost_usd, 9)
        out[role] = before.model_dump()
    return out


def render_fork_question(turn: int) -> str:
    """The question an `ask` fork puts to the expert at the start of turn `turn`."""
    return render("expert_fork_question.md", turns=turn - 1)
