"""The episode loop: actions, format errors, experts, budgets, nudges, failures and timeouts."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from awm_runtime import (
    Advice,
    EpisodeSpec,
    Harness,
    ListTools,
    Malformed,
    Message,
    ModelRef,
    PolicyTurn,
    Usage,
    run_episode,
)
from awm_runtime.episode import EpisodeLimits, ExpertBudget
from awm_runtime.experts import OracleExpert
from awm_runtime.nudges import OnError, OnStall
from awm_runtime.rewards import awm, try_first
from tests.conftest import ScriptedPolicy, task_of

RIGHT = [("create_note", {"title": "Groceries", "body": "milk, eggs"}), ""]


class CollectSink:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)


async def play(world: Any, idx: int, policy: Any, **harness: Any) -> Any:
    task = task_of(world, idx)
    session = await world.open(task, episode_id=uuid.uuid4().hex)
    sink = harness.pop("sink", None)
    try:
        h = Harness(policy=policy, shaper=harness.pop("shaper", awm()), **harness)
        return await run_episode(EpisodeSpec(scenario=task.scenario, task_idx=idx), task, session, h,
                                 sinks=[sink] if sink else [])
    finally:
        await session.close()


async def test_right_calls_complete_and_are_verified(tiny_world: Any) -> None:
    sink = CollectSink()
    record = await play(tiny_world, 0, ScriptedPolicy(RIGHT), sink=sink)
    assert record.outcome == "complete" and record.verdict == "complete"
    assert record.reward == 1.0 and record.turns == 2 and record.tool_calls == 1
    assert [m.source for m in record.messages] == ["system", "policy", "world", "policy"]
    assert sink.events[0].name == "episode_started"
    assert sink.events[-1].name == "episode_ended" and sink.events[-1].record is record


async def test_noop_final_answer_is_incomplete(tiny_world: Any) -> None:
    record = await play(tiny_world, 0, ScriptedPolicy(["done"]))
    assert record.outcome == "incomplete" and record.verdict == "others" and record.reward == 0.1


async def test_format_error_is_fed_back_and_counted(tiny_world: Any) -> None:
    script = [Malformed("invalid_json", "bad"), *RIGHT]
    record = await play(tiny_world, 0, ScriptedPolicy(script))
    assert record.outcome == "complete"
    assert record.format_errors == {"invalid_json": 1}
    feedback = record.messages[2]
    assert feedback.source == "system" and "invalid_json" in (feedback.content or "")
    bad_replies = sum(1 for m in record.messages if m.source == "policy" and m.format_error)
    assert bad_replies == sum(record.format_errors.values())


async def test_format_error_can_end_the_rollout_at_minus_one(tiny_world: Any) -> None:
    limits = EpisodeLimits(on_format_error="end")
    record = await play(tiny_world, 0, ScriptedPolicy([Malformed("unclosed_tag", "x"), *RIGHT]), limits=limits)
    assert record.outcome == "format_error" and record.reward == -1.0 and record.verdict == "not_run"


async def test_turn_limit_still_verifies(tiny_world: Any) -> None:
    script = [("create_note", {"title": "Groceries", "body": "milk, eggs"}), ("list_notes", {})]
    record = await play(tiny_world, 0, ScriptedPolicy(script), limits=EpisodeLimits(max_turns=3))
    assert record.turns == 3 and record.final_answer == "" and record.outcome == "complete"


async def test_tool_error_counts_and_nudges_then_ask_recovers(tiny_world: Any) -> None:
    expert = OracleExpert(tiny_world.solution)
    script = [("delete_note", {"note_id": 999}), ("ask_expert", {"question": "help"}),
              ("list_notes", {"title": "Old"}), ("delete_note", {"note_id": 1}), ""]
    record = await play(tiny_world, 1, ScriptedPolicy(script), expert=expert, nudges=[OnError()],
                        shaper=try_first())
    assert record.tool_errors == 1 and record.expert_calls == 1 and record.nudges == 1
    world = [m for m in record.messages if m.source == "world"]
    assert [m.tool_error for m in world] == [True, False, False]  # the failed delete, then the lookups that worked
    assert record.nudge_log[0].followed_by_ask is True
    assert record.ask_style == "recovery" and record.outcome == "complete" and record.reward == 1.3
    sources = [m.source for m in record.messages]
    assert "nudge" in sources and "expert" in sources
    assert record.expert_answers[0].answered_by == "oracle"


async def test_blind_ask_is_classified_blind(tiny_world: Any) -> None:
    expert = OracleExpert(tiny_world.solution)
    script = [("ask_expert", {"question": "how?"}), *RIGHT]
    record = await play(tiny_world, 0, ScriptedPolicy(script), expert=expert, shaper=try_first())
    assert record.ask_style == "blind" and record.reward == 0.8


async def test_expert_budget_holds(tiny_world: Any) -> None:
    expert = OracleExpert(tiny_world.solution)
    script = [("ask_expert", {"question": "?"})] * 4 + RIGHT
    limits = EpisodeLimits(expert_budget=ExpertBudget(calls=2))
    record = await play(tiny_world, 0, ScriptedPolicy(script), expert=expert, limits=limits)
    assert record.expert_calls == 2
    denied = [m for m in record.messages if m.source == "system" and "No expert help is left" in (m.content or "")]
    assert len(denied) == 2


async def test_ask_expert_without_expert_never_reaches_world(tiny_world: Any) -> None:
    record = await play(tiny_world, 0, ScriptedPolicy([("ask_expert", {"question": "?"}), *RIGHT]))
    # No expert: the call goes to the world, which has no such tool -> an error result, not an advice.
    assert record.expert_calls == 0 and record.tool_errors == 1


async def test_stall_nudge_only_with_expert(tiny_world: Any) -> None:
    script = [("list_notes", {})] * 6 + [""]
    solo = await play(tiny_world, 2, ScriptedPolicy(script), nudges=[OnStall(after=5)])
    assert solo.nudges == 0
    helped = await play(tiny_world, 2, ScriptedPolicy(script), nudges=[OnStall(after=5)],
                        expert=OracleExpert(tiny_world.solution))
    assert helped.nudges == 1 and helped.nudge_log[0].turn == 5


async def test_policy_crash_is_a_record_not_an_exception(tiny_world: Any) -> None:
    record = await play(tiny_world, 0, ScriptedPolicy(RIGHT, raise_at=1))
    assert record.outcome == "error" and record.error is not None
    assert record.error.error_class == "Unexpected.RuntimeError" and record.reward == 0.0
    assert record.turns == 1  # the transcript so far is kept


async def test_one_failure_among_eight_concurrent_episodes(tiny_world: Any) -> None:
    policies = [ScriptedPolicy(RIGHT, raise_at=0 if i == 3 else None) for i in range(8)]
    records = await asyncio.gather(*(play(tiny_world, 0, p) for p in policies))
    assert len(records) == 8
    assert sum(r.outcome == "error" for r in records) == 1
    assert sum(r.outcome == "complete" for r in records) == 7


async def test_episode_timeout_is_the_agents_incomplete(tiny_world: Any) -> None:
    class Slow(ScriptedPolicy):
        async def act(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(5)

    record = await play(tiny_world, 0, Slow(RIGHT), limits=EpisodeLimits(timeout_s=0.2))
    assert (record.outcome, record.end_reason, record.verdict, record.error) == ("incomplete", "timeout", "not_run",
                                                                                  None)


async def test_cancellation_propagates(tiny_world: Any) -> None:
    class Slow(ScriptedPolicy):
        async def act(self, *args: Any, **kwargs: Any) -> Any:
            await asyncio.sleep(5)

    task = asyncio.create_task(play(tiny_world, 0, Slow(RIGHT)))
    await asyncio.sleep(0.1)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:  # pragma: no cover
        raise AssertionError("cancellation was swallowed")


class BrokenSink:
    def emit(self, event: Any) -> None:
        raise RuntimeError("disk full")


async def test_a_broken_sink_neither_ends_the_episode_nor_starves_the_others(tiny_world: Any) -> None:
    task = task_of(tiny_world, 0)
    session = await tiny_world.open(task, episode_id=uuid.uuid4().hex)
    good = CollectSink()
    try:
        record = await run_episode(EpisodeSpec(scenario=task.scenario, task_idx=0), task, session,
                                   Harness(policy=ScriptedPolicy(RIGHT), shaper=awm()), sinks=[BrokenSink(), good])
    finally:
        await session.close()
    assert record.outcome == "complete" and record.error is None
    assert good.events[0].name == "episode_started" and good.events[-1].name == "episode_ended"


class ListingPolicy(ScriptedPolicy):
    """Asks for the tool list first (the AWM protocol's list_tools), then plays its script."""

    async def act(self, messages: Any, tools: Any, *, seed: int = 0) -> Any:
        if self.calls == 0:
            self.calls += 1
            return PolicyTurn(message=Message(role="assistant", content="list", source="policy"), action=ListTools())
        return await super().act(messages, tools, seed=seed)


async def test_list_tools_is_answered_with_the_offered_tools(tiny_world: Any) -> None:
    record = await play(tiny_world, 0, ListingPolicy(["x", *RIGHT]))
    listing = record.messages[2]
    assert listing.source == "world" and record.outcome == "complete"
    assert [t["name"] for t in json.loads(listing.content or "")] == [t["function"]["name"] for t in record.tools]


def offered(record: Any) -> set[str]:
    return {t["function"]["name"] for t in record.tools}


class Advising:
    """A speak-first advisor (the Advisor protocol), a real plug-in: one opening piece of advice."""

    ref = ModelRef(alias="advisor", model="test/advisor")

    def __init__(self, text: str | None, *, askable: bool = False) -> None:
        self.text, self._askable = text, askable
        self.requests: list[Any] = []

    @property
    def askable(self) -> bool:
        return self._askable

    async def opening_advice(self, request: Any) -> Advice | None:
        self.requests.append(request)
        return None if self.text is None else Advice(self.text, "advisor", Usage(calls=1, prompt_tokens=7),
                                                     latency_s=0.01)

    async def advise(self, request: Any) -> Advice:
        return Advice("ask me again later", "advisor")


async def test_a_static_advisor_speaks_once_before_the_first_turn_and_is_not_offered(tiny_world: Any) -> None:
    advisor = Advising("Create the note with create_note.")
    sink = CollectSink()
    record = await play(tiny_world, 0, ScriptedPolicy(RIGHT), expert=advisor, sink=sink)
    assert [m.source for m in record.messages[:3]] == ["system", "expert", "policy"]
    assert "Create the note with create_note." in (record.messages[1].content or "")
    assert [r.turn for r in advisor.requests] == [0] and "ask_expert" not in offered(record)
    assert record.expert_calls == 1 and record.outcome == "complete"
    assert [e.name for e in sink.events].count("expert_called") == 1


async def test_an_advisor_with_nothing_to_say_or_no_budget_adds_nothing(tiny_world: Any) -> None:
    silent = Advising(None, askable=True)
    record = await play(tiny_world, 0, ScriptedPolicy(RIGHT), expert=silent)
    assert len(silent.requests) == 1 and record.expert_calls == 0 and "expert" not in {m.source for m in
                                                                                       record.messages}
    assert "ask_expert" in offered(record)  # askable: offered after its (empty) opening
    broke = Advising("never shown")
    record = await play(tiny_world, 0, ScriptedPolicy(RIGHT), expert=broke,
                        limits=EpisodeLimits(expert_budget=ExpertBudget(calls=0)))
    assert broke.requests == [] and record.expert_calls == 0
