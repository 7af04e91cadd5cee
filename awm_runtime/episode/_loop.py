"""The episode loop: policy acts, world or expert answers, nudges apply, the verifier judges.

`run_episode` runs inside the caller's event loop and never starts its own. However an episode
ends, it becomes the record's `outcome` and `end_reason` (episode/_outcome.py: whose fault?);
a failure never propagates to sibling episodes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import structlog

from awm_runtime._events import (
    EpisodeEnded,
    EpisodeStarted,
    Event,
    ExpertCalled,
    ModelQueued,
    NudgeSent,
    ToolCalled,
    TurnEnded,
    bind_emitter,
)
from awm_runtime._interfaces import (
    Advice,
    AdviceRequest,
    Advisor,
    CallTool,
    Expert,
    FinalAnswer,
    ListTools,
    Malformed,
    NudgeRule,
    Policy,
    PolicyTurn,
    RewardShaper,
    Sink,
    WorldSession,
)
from awm_runtime._log import get_logger
from awm_runtime._prompts import render
from awm_runtime._slices import loop_slice
from awm_runtime._types import (
    EpisodeRecord,
    EpisodeSpec,
    ExpertAnswer,
    Message,
    NudgeEvent,
    Task,
    ToolSpec,
    Verdict,
)
from awm_runtime.episode._advice import summarize_trajectory
from awm_runtime.episode._outcome import Ending
from awm_runtime.episode._state import EpisodeState
from awm_runtime.episode._tools import ASK_EXPERT, ask_expert_spec, tool_listing
from awm_runtime.logs import scrub_secrets

log = get_logger("awm_runtime.episode")


@dataclass(frozen=True, slots=True)
class ExpertBudget:
    """Per-episode limits on expert help. None means unlimited."""

    calls: int | None = 3
    tokens: int | None = None
    usd: float | None = None


@dataclass(frozen=True, slots=True)
class EpisodeLimits:
    """When an episode stops on its own: after `max_turns` policy turns, after `timeout_s` seconds (None: no
    limit), or at the first format error with `on_format_error="end"`; and how often the expert may be asked."""

    max_turns: int = 20
    timeout_s: float | None = 900.0
    on_format_error: Literal["continue", "end"] = "continue"
    expert_budget: ExpertBudget = field(default_factory=ExpertBudget)


@dataclass(frozen=True, slots=True)
class Harness:
    """Everything on the agent's side of an episode (verifiers' env / harness / trace split)."""

    policy: Policy
    shaper: RewardShaper
    expert: Expert | None = None
    nudges: Sequence[NudgeRule] = ()
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)


class TurnHook(Protocol):
    """Checkpoints and forks (episode/_checkpoint.py) see an episode at the edges of its turns."""

    async def start(self, ep: EpisodeState, session: WorldSession) -> bool:
        """Before play: True when `ep` was restored from a checkpoint (no opening messages then)."""
        ...

    async def before_turn(self, ep: EpisodeState, session: WorldSession) -> str | None:
        """At the start of turn `ep.turn`, no call in flight: a question to put to the expert now, or None."""
        ...

    async def policy_turn(self, ep: EpisodeState, act: Callable[[], Awaitable[PolicyTurn]]) -> PolicyTurn:
        """Turn `ep.turn`'s policy reply: `act()`'s, or one saved before a kill. Saved before its calls run."""
        ...

    async def advice(self, ep: EpisodeState, ask: Callable[[], Awaitable[Advice]]) -> Advice:
        """The expert's answer to turn `ep.turn`'s question: `ask()`'s, or one saved before a kill."""
        ...

    async def after_turn(self, ep: EpisodeState, session: WorldSession) -> None:
        """At the end of turn `ep.turn`, after its nudge (if any)."""
        ...

    def cancelled(self) -> None:
        """The episode was cancelled mid-way: tidy what it was saving."""
        ...

    def finish(self, record: EpisodeRecord) -> None:
        """The record, before its reward is shaped."""
        ...


def _emit(sinks: Sequence[Sink], event: Event) -> None:
    for sink in sinks:
        try:
            sink.emit(event)
        except Exception:  # a broken sink must not end the episode; it is reported once per event
            log.exception("sink_failed", sink=type(sink).__name__, event_name=event.name)


async def run_episode(spec: EpisodeSpec, task: Task, session: WorldSession, harness: Harness, *,
                      sinks: Sequence[Sink] = (), run_id: str = "", episode_id: str | None = None,
                      hook: TurnHook | None = None) -> EpisodeRecord:
    """Play one episode to the end and return its record. Never raises except on cancellation.

    `hook` (checkpoints, forks) may restore the episode from a checkpoint and sees every turn's edges."""
    ep = EpisodeState(spec=spec, task=task, episode_id=episode_id or uuid.uuid4().hex[:16], run_id=run_id,
                      policy=harness.policy.ref, expert=harness.expert.ref if harness.expert else None)
    verdict = Verdict(result="not_run", mode="none")
    with structlog.contextvars.bound_contextvars(run_id=run_id, episode_id=ep.episode_id, scenario=spec.scenario,
                                                 task_idx=spec.task_idx, arm=spec.arm), \
            bind_emitter(ep.episode_id, lambda event: _observe(ep, sinks, event)):
        _emit(sinks, EpisodeStarted(ep.episode_id, spec.arm, spec.scenario, spec.task_idx, spec.repeat))
        # The deadline is the agent's time to play. Verification runs after it, under its own timeouts.
        deadline = asyncio.timeout(harness.limits.timeout_s)
        try:
            try:
                async with deadline:
                    await _play(ep, session, harness, sinks, hook)
            except TimeoutError:
                if not deadline.expired():
                    raise
                ep.time_out(harness.limits.timeout_s)
            if ep.verifiable:
                started = time.perf_counter()
                verdict = await session.verify(ep.final_answer, ep.messages)
                ep.timings["verify_s"] += time.perf_counter() - started
                await loop_slice()
        except asyncio.CancelledError:
            if hook is not None:
                hook.cancelled()
            raise
        except Exception as exc:
            ep.fail(exc)
        if ep.ending is not None and (ep.ending.error is not None or ep.ending.detail):
            log.warning("episode_failed", end_reason=ep.ending.reason,
                        error_class=ep.ending.error.error_class if ep.ending.error else "",
                        error=ep.ending.error.message if ep.ending.error else ep.ending.detail)
        record = ep.to_record(verdict)
        if hook is not None:
            hook.finish(record)
        reward, components = harness.shaper.shape(record)
        record.reward, record.reward_components = reward, components
        _emit(sinks, EpisodeEnded(ep.episode_id, record))
    return record


def _observe(ep: EpisodeState, sinks: Sequence[Sink], event: Event) -> None:
    ep.observe(event)
    if not isinstance(event, ModelQueued):  # for the episode's bookkeeping only: not worth a log line per call
        _emit(sinks, event)


def _askable(harness: Harness) -> bool:
    """Whether the agent may call ask_expert: an expert exists and is not a speak-first-only advisor."""
    expert = harness.expert
    return expert is not None and (not isinstance(expert, Advisor) or expert.askable)


def offered_tools(harness: Harness, world_tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The tools the policy is offered: the world's, and ask_expert when the expert may be asked."""
    return [*world_tools, ask_expert_spec()] if _askable(harness) else list(world_tools)


async def _play(ep: EpisodeState, session: WorldSession, harness: Harness, sinks: Sequence[Sink],
                hook: TurnHook | None = None) -> None:
    expert = harness.expert if _askable(harness) else None
    world_tools = list(session.tools)
    tools = offered_tools(harness, world_tools)
    ep.tools = tools
    if hook is None or not await hook.start(ep, session):
        ep.add(harness.policy.begin(ep.task, tools))
        if isinstance(harness.expert, Advisor):
            await _opening_advice(ep, harness.expert, world_tools, harness, sinks)
    for turn in range(ep.turn + 1, harness.limits.max_turns + 1):
        ep.turn = turn
        if hook is not None and (question := await hook.before_turn(ep, session)) is not None and expert:
            await _advice_now(ep, expert, world_tools, harness, sinks, question)
        ep.waiting_on = "policy"

        def act() -> Awaitable[PolicyTurn]:
            return harness.policy.act(ep.messages, tools, seed=ep.spec.seed)

        pt = await (act() if hook is None else hook.policy_turn(ep, act))
        await loop_slice()
        ep.timings["policy_s"] += pt.elapsed_s
        ep.usage["policy"].add(pt.usage)
        ep.add([pt.message])
        for kind in pt.warnings:
            ep.count_format_error(kind)
        action = pt.action
        _emit(sinks, TurnEnded(ep.episode_id, turn, type(action).__name__,
                               action.kind if isinstance(action, Malformed) else None, pt.elapsed_s,
                               pt.usage.prompt_tokens, pt.usage.completion_tokens))
        if isinstance(action, FinalAnswer):
            ep.final_answer, ep.last_action = action.text, "final"
            ep.ending = Ending("final_answer")
            return
        if isinstance(action, Malformed):
            ep.count_format_error(action.kind)
            ep.last_action = "format_error"
            if harness.limits.on_format_error == "end":
                ep.ending = Ending("format_error")
                return
            feedback = render("format_error.md", kind=action.kind, detail=action.detail)
            ep.add(harness.policy.observe(pt, feedback, "system"))
        elif isinstance(action, ListTools):
            ep.last_action = "list_tools"
            ep.add(harness.policy.observe(pt, tool_listing(tools), "world"))
        elif isinstance(action, CallTool) and action.call.name == ASK_EXPERT and expert is not None:
            if ep.withhold_expert:  # a solo fork: the offer stays in the prompt, the call is refused
                ep.last_action, ep.expert_denied = "ask_expert", ep.expert_denied + 1
                _emit(sinks, ExpertCalled(ep.episode_id, ep.turn, "", 0.0, granted=False))
                ep.add(harness.policy.observe(pt, render("expert_withheld.md"), "system"))
            else:
                await _ask_expert(ep, pt, action, world_tools, harness, sinks, hook)
        else:
            await _call_world(ep, pt, action, session, harness, sinks)
        _apply_nudges(ep, harness, sinks)
        if hook is not None:
            await hook.after_turn(ep, session)
    ep.ending = Ending("max_turns")


async def _call_world(ep: EpisodeState, pt: PolicyTurn, action: CallTool, session: WorldSession,
                      harness: Harness, sinks: Sequence[Sink]) -> None:
    started = time.perf_counter()
    ep.waiting_on = "world"
    result = await session.call_tool(action.call)
    ep.timings["world_s"] += time.perf_counter() - started
    await loop_slice()
    ep.tool_calls += 1
    if result.is_error:
        ep.tool_errors += 1
        ep.had_trouble = True
    ep.last_action = "tool_error" if result.is_error else "tool"
    _emit(sinks, ToolCalled(ep.episode_id, ep.turn, action.call.name, result.status, result.is_error,
                            result.elapsed_ms))
    # A world that found a key (in its output or elsewhere) must not hand it to the model or the record.
    observed = harness.policy.observe(pt, scrub_secrets(result.text), "world")
    observed[0].tool_error = result.is_error
    ep.add(observed)


def _budget_left(ep: EpisodeState, harness: Harness) -> bool:
    budget = harness.limits.expert_budget
    used = ep.usage["expert"]
    return not (
        (budget.calls is not None and ep.expert_calls >= budget.calls)
        or (budget.tokens is not None and used.prompt_tokens + used.completion_tokens >= budget.tokens)
        or (budget.usd is not None and used.cost_usd >= budget.usd)
    )


async def _ask_expert(ep: EpisodeState, pt: PolicyTurn, action: CallTool, world_tools: list[ToolSpec],
                      harness: Harness, sinks: Sequence[Sink], hook: TurnHook | None) -> None:
    expert = harness.expert
    assert expert is not None
    ep.last_action = "ask_expert"
    ep.note_ask()
    if not _budget_left(ep, harness):
        ep.expert_denied += 1
        _emit(sinks, ExpertCalled(ep.episode_id, ep.turn, "", 0.0, granted=False))
        ep.add(harness.policy.observe(pt, render("expert_budget_spent.md"), "system"))
        return
    args = action.call.arguments
    request = AdviceRequest(
        task=ep.task, tools=world_tools, question=str(args.get("question", "")), context=str(args.get("context", "")),
        trajectory=summarize_trajectory(ep.messages), episode_id=ep.episode_id, turn=ep.turn,
    )
    ep.waiting_on = "expert"
    advice = await (expert.advise(request) if hook is None else hook.advice(ep, lambda: expert.advise(request)))
    _account(ep, advice, sinks)
    ep.add(harness.policy.observe(pt, scrub_secrets(advice.text), "expert"))


def _account(ep: EpisodeState, advice: Advice, sinks: Sequence[Sink]) -> None:
    ep.expert_calls += 1
    ep.usage["expert"].add(advice.usage)
    ep.timings["expert_s"] += advice.latency_s
    ep.expert_answers.append(ExpertAnswer(turn=ep.turn, answered_by=advice.answered_by,
                                          latency_s=round(advice.latency_s, 4), fallback=advice.fallback))
    _emit(sinks, ExpertCalled(ep.episode_id, ep.turn, advice.answered_by, advice.latency_s, True, advice.fallback))


async def _opening_advice(ep: EpisodeState, advisor: Advisor, world_tools: list[ToolSpec], harness: Harness,
                          sinks: Sequence[Sink]) -> None:
    """The static advisor's one piece of advice before turn 1 (turn 0 in the record)."""
    if not _budget_left(ep, harness):
        return
    request = AdviceRequest(task=ep.task, tools=world_tools, question=render("expert_opening_question.md"),
                            context="", trajectory=summarize_trajectory(ep.messages), episode_id=ep.episode_id,
                            turn=0)
    ep.waiting_on = "expert"
    advice = await advisor.opening_advice(request)
    if advice is None:
        return
    ep.trouble_before_first_ask = False  # advised before trying anything: a "blind" style if it completes
    _account(ep, advice, sinks)
    ep.add([Message(role="user", content=render("expert_opening.md", advice=scrub_secrets(advice.text)),
                    source="expert")])


async def _advice_now(ep: EpisodeState, expert: Expert, world_tools: list[ToolSpec], harness: Harness,
                      sinks: Sequence[Sink], question: str) -> None:
    """Advice the agent did not ask for, at the start of this turn (a fork's `ask` arm), within the budget."""
    if not _budget_left(ep, harness):
        return
    request = AdviceRequest(task=ep.task, tools=world_tools, question=question, context="",
                            trajectory=summarize_trajectory(ep.messages), episode_id=ep.episode_id, turn=ep.turn)
    ep.waiting_on = "expert"
    advice = await expert.advise(request)
    ep.note_ask()
    _account(ep, advice, sinks)
    ep.add([Message(role="user", content=render("expert_unasked.md", advice=scrub_secrets(advice.text)),
                    source="expert")])


def _apply_nudges(ep: EpisodeState, harness: Harness, sinks: Sequence[Sink]) -> None:
    """At most one nudge per turn, only while asking the expert is possible, never right after an ask."""
    if (ep.withhold_expert or not _askable(harness) or not harness.nudges or ep.last_action == "ask_expert"
            or not _budget_left(ep, harness)):
        return
    view = ep.view(expert_available=True)
    for rule in harness.nudges:
        text = rule.check(view)
        if text:
            ep.nudge_log.append(NudgeEvent(turn=ep.turn, rule=rule.name))
            if rule.name.startswith("on_stall"):
                ep.had_trouble = True
            ep.add([Message(role="user", content=text, source="nudge")])
            _emit(sinks, NudgeSent(ep.episode_id, ep.turn, rule.name))
            return
