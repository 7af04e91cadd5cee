"""Typed events emitted by the episode loop and the scheduler. Sinks consume them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from awm_runtime._types import EpisodeRecord


@dataclass(frozen=True, slots=True)
class Event:
    name: ClassVar[str] = "event"
    episode_id: str

    def fields(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class EpisodeStarted(Event):
    name: ClassVar[str] = "episode_started"
    arm: str = ""
    scenario: str = ""
    task_idx: int = 0
    repeat: int = 0


@dataclass(frozen=True, slots=True)
class TurnEnded(Event):
    name: ClassVar[str] = "turn_ended"
    turn: int = 0
    action: str = ""
    format_error: str | None = None
    policy_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ToolCalled(Event):
    name: ClassVar[str] = "tool_called"
    turn: int = 0
    tool: str = ""
    status: int | None = None
    is_error: bool = False
    elapsed_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class ExpertCalled(Event):
    name: ClassVar[str] = "expert_called"
    turn: int = 0
    answered_by: str = ""
    latency_s: float = 0.0
    granted: bool = True
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class NudgeSent(Event):
    name: ClassVar[str] = "nudge_sent"
    turn: int = 0
    rule: str = ""


@dataclass(frozen=True, slots=True)
class EpisodeEnded(Event):
    name: ClassVar[str] = "episode_ended"
    record: EpisodeRecord | None = field(default=None, compare=False)

    def fields(self) -> dict[str, Any]:
        r = self.record
        if r is None:
            return {"episode_id": self.episode_id}
        return {
            "episode_id": self.episode_id,
            "arm": r.arm,
            "scenario": r.scenario,
            "task_idx": r.task_idx,
            "repeat": r.repeat,
            "outcome": r.outcome,
            "verdict": r.verdict,
            "reward": r.reward,
            "turns": r.turns,
            "expert_calls": r.expert_calls,
            "format_errors": r.format_error_count,
            "error": r.error.model_dump(by_alias=True) if r.error else None,
            "wall_s": r.timings.get("wall_s"),
        }
