"""The plug points: Policy, Expert, World/WorldSession, NudgeRule, RewardShaper and Sink.

Each is a small `typing.Protocol` with one main method. Built-ins and third-party plug-ins
register the same way, through entry points (see `_plugins.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from awm_runtime._events import Event
from awm_runtime._types import (
    EpisodeRecord,
    FormatErrorKind,
    Message,
    ModelRef,
    Source,
    Task,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    Verdict,
)

# --- actions: what one policy reply asks the loop to do -------------------------------------


@dataclass(frozen=True, slots=True)
class CallTool:
    """Call a tool: a world tool, or the client-side `ask_expert`."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ListTools:
    """AWM protocol meta-call: show the tool list (answered client-side)."""


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """A reply with no tool call: the episode's final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """A reply that meant to act but cannot be executed (a format error)."""

    kind: FormatErrorKind
    detail: str


Action = CallTool | ListTools | FinalAnswer | Malformed


@dataclass(slots=True)
class PolicyTurn:
    """One policy reply: the message to record, the action it asks for, and its cost.

    `warnings` are format-error kinds that are counted but do not stop the action
    (e.g. `multiple_calls`: the first call is executed).
    """

    message: Message
    action: Action
    warnings: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    elapsed_s: float = 0.0


class Policy(Protocol):
    """The agent: turns the transcript into the next action."""

    @property
    def ref(self) -> ModelRef: ...

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        """The opening messages (system prompt and task) in this policy's protocol."""
        ...

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        """The next reply. `seed` is the episode's, for reproducible sampling."""
        ...

    def observe(self, turn: PolicyTurn, text: str, source: Source) -> list[Message]:
        """Render the outcome of `turn.action` (tool result, advice, format feedback)."""
        ...


# --- expert -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdviceRequest:
    """What an expert is shown when the agent calls `ask_expert`."""

    task: Task
    tools: Sequence[ToolSpec]
    question: str
    context: str
    trajectory: str
    episode_id: str
    turn: int
    success_criteria: str | None = None


@dataclass(slots=True)
class Advice:
    text: str
    answered_by: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    fallback: bool = False


class Expert(Protocol):
    @property
    def ref(self) -> ModelRef: ...

    async def advise(self, request: AdviceRequest) -> Advice: ...


@runtime_checkable
class Advisor(Protocol):
    """An expert that speaks first: one piece of advice before turn 1 (the static advisor).

    The loop calls `opening_advice` once, before the policy's first act, and shows the result
    tagged `source: expert`. `askable` False means it is not also offered as `ask_expert`.
    """

    @property
    def askable(self) -> bool: ...

    async def opening_advice(self, request: AdviceRequest) -> Advice | None: ...


# --- world --------------------------------------------------------------------------------


class WorldSession(Protocol):
    """One episode's private world: its own DB copy, its tools, and its verifier."""

    @property
    def tools(self) -> Sequence[ToolSpec]: ...

    async def call_tool(self, call: ToolCall) -> ToolResult: ...

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        """Judge the final state. Called by the loop after the episode ends, never by the agent."""
        ...

    async def close(self) -> None: ...


class World(Protocol):
    """A set of scenarios and their tasks, able to open a fresh session per episode."""

    @property
    def name(self) -> str: ...

    def tasks(self) -> Sequence[Task]: ...

    async def open(self, task: Task, *, episode_id: str) -> WorldSession: ...


# --- nudges, rewards, sinks ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """A read-only view of an episode in progress, for nudge rules."""

    turn: int
    tool_calls: int
    tool_errors: int
    format_errors: int
    expert_calls: int
    nudges: int
    last_action: str  # tool | tool_error | ask_expert | list_tools | format_error | final
    expert_available: bool


@runtime_checkable
class NudgeRule(Protocol):
    """Looks at the last step and may return a nudge text to show the agent."""

    @property
    def name(self) -> str: ...

    def check(self, view: EpisodeView) -> str | None: ...


@runtime_checkable
class RewardShaper(Protocol):
    """Turns a finished record into a reward and its named components."""

    @property
    def name(self) -> str: ...

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]: ...


@runtime_checkable
class Sink(Protocol):
    """Consumes events. Must not block: file sinks hand work to a writer thread."""

    def emit(self, event: Event) -> None: ...


@runtime_checkable
class StoppingRule(Protocol):
    """A sequential test an A/B run asks after each finished pair (`awm-run --until-decided`).

    `pair` holds the pair's records as summary dicts (`report.summary_fields`), in the run's arm
    order. The scheduler knows nothing of statistics: it stops the run when this returns a reason,
    and writes `state()` into summary.json."""

    def pair_finished(self, pair: Sequence[dict[str, Any]]) -> str | None: ...

    def state(self) -> dict[str, Any]: ...
