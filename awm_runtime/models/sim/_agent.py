"""The simulated policy: an oracle that follows the reference solution, and a seeded novice.

The novice knows the reference steps but slips: it makes format errors and wrong calls at
configurable rates, sometimes gives up, and asks the expert when nudged. Advice (a plan in
its context) makes it far more reliable. This is a simulation for offline demos and load
tests; it measures nothing about real models.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from awm_runtime.models.sim._knowledge import KnownTask, find_task
from awm_runtime.models.sim._transcript import PastCall, first_user_text, past_calls, system_text

ASK = "ask_expert"


@dataclass(frozen=True, slots=True)
class Knobs:
    """Novice behaviour. The oracle uses all-zero rates."""

    format_error_rate: float = 0.25
    wrong_call_rate: float = 0.3
    give_up_rate: float = 0.35
    blind_ask_rate: float = 0.1
    advised_factor: float = 0.15  # rates are multiplied by this once a plan is in context
    think: bool = False

    @classmethod
    def of(cls, model: str, raw: dict[str, Any] | None) -> Knobs:
        if model.endswith("oracle"):
            return cls(0.0, 0.0, 0.0, 0.0, 0.0)
        fields = {k: v for k, v in (raw or {}).items() if k in cls.__dataclass_fields__}
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class Act:
    """What the simulated model decided: a call, a final answer, or a deliberate malformation."""

    kind: str  # call | list_tools | final | malformed
    name: str = ""
    arguments: dict[str, Any] | None = None
    text: str = ""
    malformed: str = ""  # the format-error kind being simulated


def _progress(known: KnownTask, calls: list[PastCall]) -> int:
    done = 0
    for call in calls:
        if done < len(known.steps) and not call.failed:
            tool, args = known.steps[done]
            if call.name == tool and call.arguments == args:
                done += 1
    return done


def _nudged(messages: list[dict[str, Any]]) -> bool:
    last = messages[-1] if messages else {}
    return last.get("role") == "user" and ASK in (last.get("content") or "") and len(messages) > 2


def _opening_plan(messages: list[dict[str, Any]]) -> bool:
    """A plan shown as a user message: a static advisor's before the first reply, or advice the agent did not
    ask for (a fork's `ask` arm) later on. The task itself is the first user message and does not count."""
    users = [m for m in messages if m.get("role") == "user"]
    return any('"plan"' in (m.get("content") or "") for m in users[1:])


def _wrong_arguments(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Same tool, one argument of the wrong type: the world answers 422, nothing changes."""
    if not args:
        return {"limit": "all of them"}
    bad = dict(args)
    key = rng.choice(sorted(bad))
    bad[key] = ["not", "a", "valid", "value"]
    return bad


def decide(model: str, messages: list[dict[str, Any]], tool_names: set[str] | None, protocol: str,
           seed: int, knobs: Knobs) -> Act:
    known = find_task(first_user_text(messages))
    calls = past_calls(messages)
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    rng = random.Random(f"{model}:{seed}:{turn}")
    can_ask = ASK in (tool_names or set()) or (protocol != "native" and ASK in system_text(messages))
    if protocol == "awm" and not any(c.name == "list_tools" for c in calls):
        return Act("list_tools")
    if known is None:
        return Act("final", text="I do not know how to complete this task.")

    advised = any(c.name == ASK and '"plan"' in c.result for c in calls) or _opening_plan(messages)
    scale = knobs.advised_factor if advised else 1.0
    done = _progress(known, calls)
    asked_last = bool(calls) and calls[-1].name == ASK
    errors = sum(1 for c in calls if c.failed)

    if can_ask and not asked_last and not advised and _nudged(messages):
        last_error = next((c for c in reversed(calls) if c.failed), None)
        question = (f"My call to {last_error.name} failed: {last_error.result[:200]}" if last_error
                    else "I am not sure how to proceed with this task.")
        return Act("call", name=ASK, arguments={"question": question, "context": f"{done} steps done so far"})
    if can_ask and turn == 0 and rng.random() < knobs.blind_ask_rate:
        return Act("call", name=ASK, arguments={"question": "How should I approach this task?", "context": ""})
    if rng.random() < knobs.format_error_rate * scale:
        return Act("malformed", malformed=rng.choice(_MALFORMATIONS[protocol]),
                   name=known.steps[min(done, len(known.steps) - 1)][0] if known.steps else "x")
    if done >= len(known.steps):
        return Act("final", text=known.final_answer or "The task is complete.")
    if errors and rng.random() < knobs.give_up_rate * scale:
        return Act("final", text="I was not able to finish this task.")
    tool, args = known.steps[done]
    if rng.random() < knobs.wrong_call_rate * scale:
        return Act("call", name=tool, arguments=_wrong_arguments(args, rng))
    return Act("call", name=tool, arguments=args)


_MALFORMATIONS = {
    "native": ("invalid_json", "unknown_tool", "empty_reply"),
    "hermes": ("invalid_json", "unclosed_tag", "missing_name", "empty_reply", "multiple_calls"),
    "awm": ("invalid_json", "unclosed_tag", "missing_name", "empty_reply", "multiple_calls"),
}


def _tag(payload: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps(payload)}\n</tool_call>"


def _text_payload(protocol: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    if protocol == "awm":
        return {"name": "call_tool", "arguments": {"tool_name": name, "arguments": json.dumps(args)}}
    return {"name": name, "arguments": args}


def render(act: Act, protocol: str, turn: int, knobs: Knobs) -> tuple[str | None, list[dict[str, Any]]]:
    """(content, OpenAI tool_calls) for `act` in the given protocol."""
    think = "<think>\nLet me work out the next step.\n</think>\n" if knobs.think else ""
    call_id = f"call_{turn}"
    args = act.arguments or {}
    if act.kind == "final":
        return think + act.text, []
    if act.kind == "malformed":
        return _malformed(act, protocol, call_id, think)
    if protocol == "native":
        return None, [{"id": call_id, "type": "function",
                       "function": {"name": act.name, "arguments": json.dumps(args)}}]
    if act.kind == "list_tools":
        return think + _tag({"name": "list_tools", "arguments": {}}), []
    return think + _tag(_text_payload(protocol, act.name, args)), []


def _malformed(act: Act, protocol: str, call_id: str, think: str) -> tuple[str | None, list[dict[str, Any]]]:
    kind = act.malformed
    if kind == "empty_reply":
        return "", []
    if protocol == "native":
        if kind == "unknown_tool":
            return None, [{"id": call_id, "type": "function",
                           "function": {"name": "find_anything", "arguments": "{}"}}]
        return None, [{"id": call_id, "type": "function", "function": {"name": act.name, "arguments": '{"id": 1,'}}]
    if kind == "unclosed_tag":
        return think + "<tool_call>\n" + json.dumps(_text_payload(protocol, act.name, {})), []
    if kind == "missing_name":
        return think + _tag({"arguments": {}}), []
    if kind == "multiple_calls":
        one = _tag(_text_payload(protocol, act.name, {}))
        return think + "I'll try two things at once.\n" + one + "\n" + one, []
    return think + "<tool_call>\n{\"name\": \"" + act.name + "\", \"arguments\": {\n</tool_call>", []
