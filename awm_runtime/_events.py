"""Typed events emitted by the episode loop, the scheduler and the model layer. Sinks consume them.

The model layer does not know the episode it serves: it calls the hooks `model_called`,
`model_retry` and `model_failed`, which reach the current episode's sinks through a context
variable bound by the loop (`bind_emitter`), and do nothing outside an episode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from awm_runtime._types import EpisodeRecord


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in an episode, as a row of events.jsonl: `name` is its kind, `fields()` its
    columns. Sinks receive them as they happen."""

    name: ClassVar[str] = "event"
    episode_id: str

    def fields(self) -> dict[str, Any]:
        """The event's fields, shallow: they are scalars (asdict's deep copy cost ~40 us an event)."""
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in dataclass_fields(self))
        return {name: getattr(self, name) for name in names}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


@dataclass(frozen=True, slots=True)
class EpisodeStarted(Event):
    """An episode began: which arm, scenario, task and repeat it plays."""

    name: ClassVar[str] = "episode_started"
    arm: str = ""
    scenario: str = ""
    task_idx: int = 0
    repeat: int = 0


@dataclass(frozen=True, slots=True)
class TurnEnded(Event):
    """The policy finished one turn: the action it took, any format error, its time and tokens."""

    name: ClassVar[str] = "turn_ended"
    turn: int = 0
    action: str = ""
    format_error: str | None = None
    policy_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ToolCalled(Event):
    """A tool call reached the world: which tool, its status, whether it failed, how long it took."""

    name: ClassVar[str] = "tool_called"
    turn: int = 0
    tool: str = ""
    status: int | None = None
    is_error: bool = False
    elapsed_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class ExpertCalled(Event):
    """The expert was asked: who answered, how long it took, and whether the budget granted it."""

    name: ClassVar[str] = "expert_called"
    turn: int = 0
    answered_by: str = ""
    latency_s: float = 0.0
    granted: bool = True
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class NudgeSent(Event):
    """A nudge rule showed the agent a nudge on this turn."""

    name: ClassVar[str] = "nudge_sent"
    turn: int = 0
    rule: str = ""


@dataclass(frozen=True, slots=True)
class EpisodeEnded(Event):
    """An episode finished; its record carries the outcome, reward and usage."""

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
            "end_reason": r.end_reason,
            "verdict": r.verdict,
            "reward": r.reward,
            "turns": r.turns,
            "expert_calls": r.expert_calls,
            "format_errors": r.format_error_count,
            "error": r.error.model_dump(by_alias=True) if r.error else None,
            "wall_s": r.timings.get("wall_s"),
        }


@dataclass(frozen=True, slots=True)
class _ModelEvent(Event):
    role: str = ""
    alias: str = ""
    endpoint: str = ""
    kind: str = ""  # the error class, for retries and failures


@dataclass(frozen=True, slots=True)
class ModelCalled(_ModelEvent):
    name: ClassVar[str] = "model_called"
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class ModelRetry(_ModelEvent):
    name: ClassVar[str] = "model_retry"
    attempt: int = 1
    wait_s: float = 0.0
    error: str = ""


@dataclass(frozen=True, slots=True)
class ModelFailed(_ModelEvent):
    name: ClassVar[str] = "model_failed"
    attempts: int = 1
    elapsed_s: float = 0.0
    error: str = ""


@dataclass(frozen=True, slots=True)
class ModelQueued(_ModelEvent):
    """A call waits for a free slot (or rate budget) on its endpoint (`waiting`), or got one. Seen by
    the episode (a deadline that fires while queued is the endpoint's, not the agent's), not logged."""

    name: ClassVar[str] = "model_queued"
    waiting: bool = True


_EMITTER: ContextVar[tuple[str, Callable[[Event], None]] | None] = ContextVar("awm_event_emitter", default=None)


@contextmanager
def bind_emitter(episode_id: str, emit: Callable[[Event], None]) -> Iterator[None]:
    """Within this block (and tasks started in it), model-layer hooks emit to `emit`."""
    token = _EMITTER.set((episode_id, emit))
    try:
        yield
    finally:
        _EMITTER.reset(token)


def _hook(cls: type[Event], fields: dict[str, Any]) -> None:
    """To the current episode's sinks; outside an episode (e.g. preflight), straight to the log."""
    bound = _EMITTER.get()
    if bound is not None:
        episode_id, emit = bound
        emit(cls(episode_id, **fields))
    else:
        from awm_runtime._log import get_logger

        get_logger("awm_runtime.models").info(cls.name, **fields)


def model_called(*, role: str, alias: str, endpoint: str, latency_s: float, prompt_tokens: int = 0,
                 completion_tokens: int = 0, attempt: int = 1) -> None:
    """Model-layer hook: one call answered (after `attempt` tries)."""
    _hook(ModelCalled, {"role": role, "alias": alias, "endpoint": endpoint, "latency_s": round(latency_s, 6),
                        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                        "attempt": attempt})


def model_retry(*, role: str, alias: str, endpoint: str, kind: str, attempt: int, wait_s: float,
                error: str = "") -> None:
    """Model-layer hook: a failed attempt that will be retried after `wait_s` seconds."""
    _hook(ModelRetry, {"role": role, "alias": alias, "endpoint": endpoint, "kind": kind, "attempt": attempt,
                       "wait_s": round(wait_s, 3), "error": error[:300]})


def model_queued(*, endpoint: str, waiting: bool) -> None:
    """Model-layer hook: a call starts waiting for admission on its endpoint, or is admitted after waiting."""
    bound = _EMITTER.get()
    if bound is not None:
        episode_id, emit = bound
        emit(ModelQueued(episode_id, endpoint=endpoint, waiting=waiting))


def model_failed(*, role: str, alias: str, endpoint: str, kind: str, attempts: int, elapsed_s: float,
                 error: str = "") -> None:
    """Model-layer hook: a call given up on (its error ends the episode as an infrastructure error)."""
    _hook(ModelFailed, {"role": role, "alias": alias, "endpoint": endpoint, "kind": kind, "attempts": attempts,
                        "elapsed_s": round(elapsed_s, 3), "error": error[:300]})
