"""The mid-turn checkpoint: the turn in flight's policy reply (and expert answer), saved before its calls run.

A full checkpoint is the state after `k` turns. The reply of turn `k + 1` arrives next, then its tool
call or expert question runs. A kill -9 in between would make `--resume` sample that reply again, so
as soon as it arrives it is written, durably (fsync'd, then atomically renamed), to
`<run>/checkpoints/<episode_id>/reply.json`, tied to checkpoint `k` (`after_turn`). The expert's answer is
added the same way when it returns. `--resume` from checkpoint `k` then uses the saved reply instead of
calling the model again. A kill after a reply arrives and before it is saved still repeats that call.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from awm_runtime._interfaces import Action, Advice, CallTool, FinalAnswer, ListTools, Malformed, PolicyTurn
from awm_runtime._types import FormatErrorKind, Message, ToolCall, Usage

REPLY = "reply.json"  # one per episode, replaced each turn


class SavedPolicyTurn(BaseModel):
    """A policy reply as it arrived: the message, the parsed action, its warnings and usage."""

    model_config = ConfigDict(extra="forbid")

    message: Message
    action: dict[str, Any]
    warnings: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    elapsed_s: float = 0.0


class SavedAdvice(BaseModel):
    """An expert's answer as it arrived."""

    model_config = ConfigDict(extra="forbid")

    text: str
    answered_by: str
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    fallback: bool = False


class SavedReply(BaseModel):
    """Turn `after_turn + 1`'s replies so far, for the episode whose full checkpoint is at `after_turn`."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str
    after_turn: int
    policy: SavedPolicyTurn
    advice: SavedAdvice | None = None
    saved_at: float = 0.0


def _encode_action(action: Action) -> dict[str, Any]:
    if isinstance(action, CallTool):
        return {"type": "call_tool", "call": action.call.model_dump(mode="json")}
    if isinstance(action, ListTools):
        return {"type": "list_tools"}
    if isinstance(action, FinalAnswer):
        return {"type": "final_answer", "text": action.text}
    return {"type": "malformed", "kind": action.kind, "detail": action.detail}


def _decode_action(data: dict[str, Any]) -> Action:
    kind = data.get("type")
    if kind == "call_tool":
        return CallTool(ToolCall.model_validate(data["call"]))
    if kind == "list_tools":
        return ListTools()
    if kind == "final_answer":
        return FinalAnswer(str(data.get("text", "")))
    return Malformed(cast(FormatErrorKind, str(data.get("kind", ""))), str(data.get("detail", "")))


def saved_policy_turn(pt: PolicyTurn) -> SavedPolicyTurn:
    """`pt` as plain data."""
    return SavedPolicyTurn(message=pt.message.model_copy(deep=True), action=_encode_action(pt.action),
                           warnings=list(pt.warnings), usage=pt.usage.model_copy(deep=True), elapsed_s=pt.elapsed_s)


def policy_turn_of(saved: SavedPolicyTurn) -> PolicyTurn:
    """The PolicyTurn a saved reply stands for, as the policy returned it."""
    return PolicyTurn(message=saved.message.model_copy(deep=True), action=_decode_action(saved.action),
                      warnings=tuple(saved.warnings), usage=saved.usage.model_copy(deep=True),
                      elapsed_s=saved.elapsed_s)


def saved_advice(advice: Advice) -> SavedAdvice:
    """`advice` as plain data."""
    return SavedAdvice(text=advice.text, answered_by=advice.answered_by, usage=advice.usage.model_copy(deep=True),
                       latency_s=advice.latency_s, fallback=advice.fallback)


def advice_of(saved: SavedAdvice) -> Advice:
    """The Advice a saved answer stands for."""
    return Advice(text=saved.text, answered_by=saved.answered_by, usage=saved.usage.model_copy(deep=True),
                  latency_s=saved.latency_s, fallback=saved.fallback)


def write_durably(path: Path, body: bytes) -> int:
    """Write `body` to `path` so that a crash leaves the old file or the new one, never half of either:
    a temporary file, fsync'd, renamed over `path`, then the directory fsync'd. Returns the bytes written."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # as the run's other files (umask)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself
    finally:
        os.close(directory)
    return len(body)


def load_saved_reply(directory: Path, episode_id: str, after_turn: int) -> SavedReply | None:
    """The reply saved in `directory` for the turn after checkpoint `after_turn` of `episode_id`, if any.

    A missing or unreadable file, or one tied to another checkpoint, is no saved reply: the turn is played."""
    try:
        saved = SavedReply.model_validate_json((directory / REPLY).read_bytes())
    except (OSError, ValueError):
        return None
    return saved if saved.episode_id == episode_id and saved.after_turn == after_turn else None
