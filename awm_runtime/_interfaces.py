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
    def ref(self) -> ModelRef:
        """The model (or plug-in) that plays the agent, as recorded in the episode's record."""
        ...

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
    """An expert's answer to one request: the text shown to the agent, who answered, and what it cost.

    `fallback` is True when a stand-in answered instead (a human expert's deadline passed)."""

    text: str
    answered_by: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    fallback: bool = False


class Expert(Protocol):
    """The helper an agent may ask (`ask_expert`): turns one AdviceRequest into Advice, whose usage and
    latency the episode charges to its expert role."""

    @property
    def ref(self) -> ModelRef:
        """The model (or plug-in) behind the advice, as recorded in the episode's record."""
        ...

    async def advise(self, request: AdviceRequest) -> Advice:
        """Advice for `request`; safe to call concurrently for different episodes."""
        ...


@runtime_checkable
class Advisor(Protocol):
    """An expert that speaks first: one piece of advice before turn 1 (the static advisor).

    The loop calls `opening_advice` once, before the policy's first act, and shows the result
    tagged `source: expert`. `askable` False means it is not also offered as `ask_expert`.
    """

    @property
    def askable(self) -> bool:
        """Whether the agent may also ask this expert (`ask_expert`) after its opening advice."""
        ...

    async def opening_advice(self, request: AdviceRequest) -> Advice | None:
        """The advice shown before turn 1, or None for nothing to say on this task."""
        ...


# --- world --------------------------------------------------------------------------------


class WorldSession(Protocol):
    """One episode's private world: its own DB copy, its tools, and its verifier."""

    @property
    def tools(self) -> Sequence[ToolSpec]:
        """The tools this episode may call, as offered to the policy."""
        ...

    async def call_tool(self, call: ToolCall) -> ToolResult:
        """Run one tool call against this episode's own state; a tool that fails answers with an error result."""
        ...

    async def verify(self, final_answer: str, messages: Sequence[Message]) -> Verdict:
        """Judge the final state. Called by the loop after the episode ends, never by the agent."""
        ...

    async def close(self) -> None:
        """Release what the episode holds (its DB copy, a connection); the session is not used after."""
        ...


class World(Protocol):
    """A set of scenarios and their tasks, able to open a fresh session per episode."""

    @property
    def name(self) -> str:
        """The worlds' name as runs record it (e.g. `builtin`, a directory's name, a server spec)."""
        ...

    def tasks(self) -> Sequence[Task]:
        """Every task the worlds offer."""
        ...

    async def open(self, task: Task, *, episode_id: str) -> WorldSession:
        """A fresh session for one episode of `task`, isolated from every other episode's."""
        ...


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
    def name(self) -> str:
        """The rule's name, as recorded in nudge events (`on_error`, `on_stall`)."""
        ...

    def check(self, view: EpisodeView) -> str | None:
        """The nudge text to show the agent after this step, or None for no nudge."""
        ...


@runtime_checkable
class RewardShaper(Protocol):
    """Turns a finished record into a reward and its named components."""

    @property
    def name(self) -> str:
        """The shaper's name, as recorded with each reward."""
        ...

    def shape(self, record: EpisodeRecord) -> tuple[float, dict[str, Any]]:
        """The reward of a finished episode's record, and its named components."""
        ...


@runtime_checkable
class Sink(Protocol):
    """Consumes events. Must not block: file sinks hand work to a writer thread."""

    def emit(self, event: Event) -> None:
        """Take one event without blocking the episode (slow work goes to a thread of its own)."""
        ...


@runtime_checkable
class StoppingRule(Protocol):
    """A sequential test an A/B run asks after each finished pair (`awm-run --until-decided`).

    `pair` holds the pair's records as summary dicts (`report.summary_fields`), in the run's arm
    order. The scheduler knows nothing of statistics: it stops the run when this returns a reason,
    and writes `state()` into summary.json."""

    def pair_finished(self, pair: Sequence[dict[str, Any]]) -> str | None:
        """After one more finished pair: the reason to stop the run now, or None to go on."""
        ...

    def state(self) -> dict[str, Any]:
        """The test's state so far, as summary.json records it."""
        ...
