"""Mutable bookkeeping for one episode in progress, and its conversion to a record."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from awm_runtime._errors import AwmError
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
    Outcome,
    Task,
    ToolSpec,
    Usage,
    Verdict,
    tool_set,
)


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
    ended_by_format_error: bool = False
    trouble_before_first_ask: bool | None = None  # None until the first ask
    had_trouble: bool = False
    error: ErrorInfo | None = None
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

    def fail(self, exc: BaseException) -> None:
        cls = exc.error_class if isinstance(exc, AwmError) else f"Unexpected.{type(exc).__name__}"
        self.error = ErrorInfo(error_class=cls, message=str(exc) or type(exc).__name__)

    @property
    def ask_style(self) -> AskStyle:
        if self.expert_calls == 0:
            return "solo"
        return "recovery" if self.trouble_before_first_ask else "blind"

    def outcome(self, verdict: Verdict) -> Outcome:
        if self.error is not None:
            return "error"
        if self.ended_by_format_error:
            return "format_error"
        if verdict.result in ("judge_error", "server_error"):
            return "error"
        return "complete" if verdict.complete else "incomplete"

    def to_record(self, verdict: Verdict) -> EpisodeRecord:
        self.timings["wall_s"] = time.perf_counter() - self.started
        self.timings["started_at"] = self.started_at
        error = self.error
        if error is None and verdict.result in ("judge_error", "server_error"):
            error = ErrorInfo(error_class=f"VerifierError.{verdict.result}", message=verdict.error or verdict.result)
        tools_id, tools = tool_set(self.tools) if self.tools is not None else (None, None)
        return EpisodeRecord(
            episode_id=self.episode_id, run_id=self.run_id, arm=self.spec.arm, scenario=self.spec.scenario,
            task_idx=self.spec.task_idx, repeat=self.spec.repeat, seed=self.spec.seed, task=self.task.text,
            policy=self.policy, expert=self.expert, outcome=self.outcome(verdict), verdict=verdict.result,
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

