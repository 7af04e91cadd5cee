"""Checkpoints of an episode between turns, and forks that start from them (docs/forks.md).

A checkpoint is the state before a turn: the messages with their sources, the counters and budgets,
the seed (the simulated policies draw each turn from the seed and the turn, so that is their whole
RNG state), the task, the arm's resolved definition, and the world: a copy of its DB, taken while
no call is in flight, or (remote worlds) the tool calls made so far, which a fork replays on a fresh
session. Files: `<run>/checkpoints/<episode_id>/turn-<k>.json` (+ `.db`), `turn` = turns played.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from awm_runtime._errors import WorldError
from awm_runtime._interfaces import WorldSession
from awm_runtime._log import get_logger
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

log = get_logger("awm_runtime.episode")
CHECKPOINTS = "checkpoints"
INDEX = "index.jsonl"  # one line per checkpoint saved, appended after its files are in place (_checkpoint_store)
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


def preceding_of(last_action: str) -> str:
    return last_action if last_action in ("tool_error", "format_error") else "nothing"


def counters_of(ep: EpisodeState) -> dict[str, Any]:
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


def db_of(session: Any) -> Path | None:
    db = getattr(session, "db", None)
    return db if isinstance(db, Path) else None


async def restore_world(cp: Checkpoint, cp_path: Path, session: Any) -> str | None:
    """Bring a fresh session to the checkpoint's world state: copy its DB, or replay its tool calls.

    Returns the restored DB's sha256 (None for a replayed world); WorldError when it cannot be done."""
    kind = cp.world.get("kind")
    if kind == "db":
        db = db_of(session)
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
