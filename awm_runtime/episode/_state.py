"""Mutable bookkeeping for one episode in progress, and its conversion to a record."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from awm_runtime._events import Event, ModelCalled, ModelFailed, ModelQueued, ModelRetry
from awm_runtime._interfaces import EpisodeView
from awm_runtime._types import (
    AskStyle,
    EpisodeRecord,
    EpisodeSpec,
    ErrorInfo,
    ExpertAnswer,
    Message,
    ModelRef,
    NudgeEvent,
    Task,
    ToolSpec,
    Usage,
    Verdict,
    tool_set,
)
from awm_runtime.episode._outcome import Ending, ending_for, settle


@dataclass(slots=True)
class EpisodeState:
    spec: EpisodeSpec
    task: Task
    episode_id: str
    run_id: str
    policy: ModelRef
    expert: ModelRef | None
    messages: list[Message] = field(default_factory=list)
    tools: list[ToolSpec] | None = None  # what the policy was offered (world tools, plus ask_expert)
    turn: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    format_errors: Counter[str] = field(default_factory=Counter)
    expert_calls: int = 0
    expert_denied: int = 0
    expert_answers: list[ExpertAnswer] = field(default_factory=list)
    nudge_log: list[NudgeEvent] = field(default_factory=list)
    usage: dict[str, Usage] = field(default_factory=lambda: {"policy": Usage(), "expert": Usage()})
    timings: dict[str, float] = field(default_factory=lambda: {"policy_s": 0.0, "world_s": 0.0,
                                                                "expert_s": 0.0, "verify_s": 0.0})
    last_action: str = "none"
    final_answer: str = ""
    ending: Ending | None = None  # how play stopped; None while it runs
    waiting_on: str = "start"  # what the episode is awaiting: "policy", "world", "expert" (for a deadline)
    retrying: ModelRetry | None = None  # the last failed attempt of the model call in flight, if any
    queued_on: tuple[str, float] | None = None  # (endpoint, since): the call in flight waits for a free slot
    trouble_before_first_ask: bool | None = None  # None until the first ask
    had_trouble: bool = False
    withhold_expert: bool = False  # a solo fork: ask_expert is refused and no nudge is sent this turn
    started: float = field(default_factory=time.perf_counter)
    started_at: float = field(default_factory=time.time)

    def add(self, messages: list[Message]) -> None:
        for m in messages:
            m.turn = self.turn
        self.messages.extend(messages)

    def count_format_error(self, kind: str) -> None:
        self.format_errors[kind] += 1
        if kind != "multiple_calls":
            self.had_trouble = True

    def note_ask(self) -> None:
        if self.trouble_before_first_ask is None:
            self.trouble_before_first_ask = self.had_trouble
        if self.nudge_log and self.nudge_log[-1].turn == self.turn - 1:
            self.nudge_log[-1].followed_by_ask = True

    def view(self, expert_available: bool) -> EpisodeView:
        return EpisodeView(
            turn=self.turn, tool_calls=self.tool_calls, tool_errors=self.tool_errors,
            format_errors=sum(self.format_errors.values()), expert_calls=self.expert_calls,
            nudges=len(self.nudge_log), last_action=self.last_action, expert_available=expert_available,
        )

    @property
    def ended_by_format_error(self) -> bool:
        return self.ending is not None and self.ending.reason == "format_error"

    @property
    def verifiable(self) -> bool:
        """Play ended the agent's way (an answer or the turn limit): its final DB gets a verdict."""
        return self.ending is not None and self.ending.reason in ("final_answer", "max_turns")

    def observe(self, event: Event) -> None:
        """Model-layer events of this episode: is the call in flight retrying after failures?"""
        if isinstance(event, ModelRetry):
            self.retrying = event
        elif isinstance(event, ModelQueued):
            self.queued_on = (event.endpoint, time.perf_counter()) if event.waiting else None
        elif isinstance(event, ModelCalled | ModelFailed):
            self.retrying = self.queued_on = None

    def fail(self, exc: BaseException) -> None:
        self.ending = ending_for(exc)

    def time_out(self, limit_s: float | None) -> None:
        """The deadline fired. The agent's, unless its model call was retrying after failures or
        waiting for a free slot on its endpoint: then the endpoint (or the run's limits), not the
        agent, spent the time."""
        limit = f"{limit_s:g}s" if limit_s is not None else "its"
        retry = self.retrying
        if self.queued_on is not None:
            endpoint, since = self.queued_on
            self.ending = Ending("model_error", ErrorInfo(
                error_class="ModelError.queued",
                message=f"episode deadline of {limit} hit while a model call had waited "
                        f"{time.perf_counter() - since:.1f}s for a free slot on {endpoint} (its max_concurrency, "
                        "rpm or tpm, shared with the run's other episodes)"))
        elif retry is not None:
            self.ending = Ending("model_error", ErrorInfo(
                error_class=f"ModelError.{retry.kind}",
                message=f"episode deadline of {limit} hit while the {retry.role} model {retry.alias!r} was retrying "
                        f"after {retry.attempt} failed attempt(s) ({retry.kind}): {retry.error}"))
        else:
            self.ending = Ending("timeout", detail=f"episode exceeded its {limit} deadline while waiting on the "
                                                   f"{self.waiting_on}")

    @property
    def ask_style(self) -> AskStyle:
        if self.expert_calls == 0:
            return "solo"
        return "recovery" if self.trouble_before_first_ask else "blind"

    def to_record(self, verdict: Verdict) -> EpisodeRecord:
        self.timings["wall_s"] = time.perf_counter() - self.started
        self.timings["started_at"] = self.started_at
        ending = self.ending or Ending("runtime_error", ErrorInfo(error_class="Unexpected.NoEnding",
                                                                  message="the episode stopped without an ending"))
        outcome, end_reason, error = settle(ending, verdict)
        tools_id, tools = tool_set(self.tools) if self.tools is not None else (None, None)
        judged = verdict.detail.get("judge_usage")
        if isinstance(judged, dict):  # the judge's tokens are the episode's too: usage["judge"]
            judge = self.usage.setdefault("judge", Usage())
            judge.add(Usage.model_validate({**judged, "calls": max(1, int(judged.get("calls") or 0))}))
        return EpisodeRecord(
            episode_id=self.episode_id, run_id=self.run_id, arm=self.spec.arm, scenario=self.spec.scenario,
            task_idx=self.spec.task_idx, repeat=self.spec.repeat, seed=self.spec.seed, task=self.task.text,
            policy=self.policy, expert=self.expert, outcome=outcome, end_reason=end_reason,
            end_detail=ending.detail, verdict=verdict.result,
            verdict_detail=_detail(verdict), ask_style=self.ask_style,
            turns=sum(1 for m in self.messages if m.source == "policy"),
            tool_calls=self.tool_calls, tool_errors=self.tool_errors, format_errors=dict(self.format_errors),
            expert_calls=self.expert_calls, expert_answers=self.expert_answers, nudges=len(self.nudge_log),
            nudge_log=self.nudge_log, final_answer=self.final_answer, messages=self.messages,
            usage={k: v for k, v in self.usage.items() if v.calls or k == "policy"},
            timings={k: round(v, 6) for k, v in self.timings.items()}, error=error, group_id=self.spec.group_id,
            tools_id=tools_id, tools=tools,
        )


def _detail(verdict: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": verdict.mode, "elapsed_ms": round(verdict.elapsed_ms, 3)}
    if verdict.error:
        out["error"] = verdict.error
    if verdict.detail:
        out["returned"] = verdict.detail
    return out

