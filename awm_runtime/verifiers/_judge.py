"""SQL mode: the verifier gathers evidence, and an LLM on the `judge` role classifies the episode.

The judge sees the task and the reasoning, success and failure criteria parsed from the verifier
row's `raw_response`, then the episode's data (trajectory, final answer, evidence) as one JSON
document fenced by marker lines that carry a random token drawn per call: the agent wrote much of
that data, so it can neither predict the fence nor close it (JSON escaping keeps its text on the
data's lines). The judge may answer only `complete` or `incomplete`; a reply that names anything
else is not a pass, it is `incomplete`. The agent wrote the data, so what it can do to the judge is
the agent's: the final answer is clipped to FINAL_ANSWER_CHARS (with a marker, as the trajectory is),
and a reply without a classification is asked for once more, then is `judge_unclassified` (the
agent's incomplete). Only a call that failed after the model layer's retries is a `judge_error`.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from awm_runtime._errors import AwmError
from awm_runtime._prompts import render
from awm_runtime._types import Message, Usage, Verdict
from awm_runtime.models import exhausted

LABELS = ("complete", "incomplete")
_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
EVIDENCE_CHARS = 12000
TRAJECTORY_CHARS = 24000
FINAL_ANSWER_CHARS = 8000  # with the trajectory and evidence budgets, the judge's data stays near 11k tokens
JUDGE_ATTEMPTS = 2  # a reply without a classification is asked for once more
DETAIL_EVIDENCE_CHARS = 8000


class JudgeReply(Protocol):
    """What the judge reads of a model reply: its text (None when it has none) and its token usage."""

    content: str | None
    usage: Usage


class JudgeClient(Protocol):
    """What the judge needs from the model layer (`awm_runtime.models.ModelClient` fits)."""

    async def complete(self, messages: list[dict[str, Any]]) -> Any:
        """One completion of `messages`; its reply has what JudgeReply names."""
        ...


@dataclass(frozen=True, slots=True)
class Criteria:
    reasoning: str = ""
    success: tuple[str, ...] = ()
    failure: tuple[str, ...] = ()

    def text(self) -> str:
        def bullets(items: tuple[str, ...]) -> str:
            return "\n".join(f"- {i}" for i in items) or "- (none given)"
        return (f"Reasoning: {self.reasoning or '(none given)'}\n\nSuccess criteria:\n{bullets(self.success)}"
                f"\n\nFailure criteria:\n{bullets(self.failure)}")


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`: the whole text, a fenced block, or one embedded in prose."""
    candidates = [text, *_FENCE.findall(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if str(v).strip())
    return ()


def parse_criteria(raw_response: str) -> Criteria:
    """reasoning / success_criteria / failure_criteria from a verifier row's raw_response."""
    obj = first_json_object(raw_response or "") or {}
    reasoning = obj.get("reasoning")
    return Criteria(reasoning=str(reasoning) if isinstance(reasoning, str) else "",
                    success=_strings(obj.get("success_criteria")), failure=_strings(obj.get("failure_criteria")))


def _classification_objects(text: str) -> list[dict[str, Any]]:
    decoder = json.JSONDecoder()
    found = []
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("classification", value.get("result")), str):
            found.append(value)
    return found


def parse_judgement(text: str | None) -> tuple[str, str, str] | None:
    """(label, reason, what the judge said) from its reply, or None when it has no classification.

    The label is `complete` only when the judge says exactly that; any other classification
    (incomplete, agent_error, server_error, ...) is `incomplete`. The judge's last JSON object with a
    classification is its answer (an echo of the episode's data may come before it); a reply that is
    nothing but a bare label counts too. Prose is never searched for a label."""
    text = _THINK.sub("", text or "").strip()
    objects = _classification_objects(text)
    if objects:
        obj = objects[-1]
        said = str(obj.get("classification", obj.get("result"))).strip().lower()
        reason = obj.get("reason") or obj.get("reasoning") or ""
    else:
        said = text.strip(" \t\n.`\"'*").lower()
        if said not in LABELS:
            return None
        reason = ""
    return ("complete" if said == "complete" else "incomplete"), str(reason), said


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - limit} characters omitted) …\n{text[-half:]}"


def trajectory_entries(messages: Sequence[Message], *, limit: int = TRAJECTORY_CHARS) -> list[dict[str, Any]]:
    """The episode as the judge reads it: one entry per message (tool calls spelled out), the middle
    left out past `limit` characters."""
    entries: list[dict[str, Any]] = []
    for m in messages:
        if m.source == "system" and m.role == "system":
            continue  # the policy's system prompt says nothing about what happened
        entry: dict[str, Any] = {"from": m.source, "role": m.role, "text": _clip((m.content or "").strip(), 3000)}
        calls = [{"tool": (c.get("function") or {}).get("name"),
                  "arguments": _clip(str((c.get("function") or {}).get("arguments")), 3000)}
                 for c in m.tool_calls or ()]
        if calls:
            entry["calls"] = calls
        entries.append(entry)
    sizes = [len(json.dumps(e, ensure_ascii=False)) for e in entries]
    if sum(sizes) <= limit:
        return entries
    head, tail, budget = 0, len(entries), limit // 2
    while head < tail and budget - sizes[head] >= 0:
        budget -= sizes[head]
        head += 1
    budget += limit // 2
    while tail > head and budget - sizes[tail - 1] >= 0:
        budget -= sizes[tail - 1]
        tail -= 1
    return [*entries[:head], {"omitted": f"{tail - head} messages"}, *entries[tail:]]


def _evidence_text(evidence: Any) -> str:
    try:
        return json.dumps(evidence, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(evidence)


def _evidence_value(evidence: Any) -> Any:
    """The evidence as it goes into the data document: itself, or its clipped text when it is long."""
    text = _evidence_text(evidence)
    if len(text) <= EVIDENCE_CHARS:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return _clip(text, EVIDENCE_CHARS)


def fenced_data(data: dict[str, Any]) -> tuple[str, str]:
    """(boundary, document): the data as one JSON document and a fresh random token it does not contain.

    JSON escaping puts every newline of the data inside a string, so nothing in it can stand on a
    line of its own; U+2028/2029 are escaped too, as some readers treat them as line breaks."""
    document = json.dumps(data, indent=1, ensure_ascii=False, default=str)
    document = document.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    while True:
        boundary = secrets.token_hex(16)
        if boundary not in document:
            return boundary, document


def _add_usage(detail: dict[str, Any], usage: Usage) -> None:
    """Sum the judge's usage over its attempts."""
    held = detail.get("judge_usage")
    if held is None:
        detail["judge_usage"] = usage.model_dump()
        return
    for k, v in usage.model_dump().items():
        if isinstance(v, int | float) and isinstance(held.get(k), int | float):
            held[k] += v


class Judge:
    """Classifies one finished episode from the evidence its SQL-mode verifier gathered."""

    def __init__(self, client: JudgeClient, *, name: str = "judge") -> None:
        self.client = client
        self.name = name

    async def classify(self, *, task: str, messages: Sequence[Message], evidence: Any, criteria: Criteria,
                       final_answer: str) -> Verdict:
        started = time.perf_counter()
        boundary, document = fenced_data({"trajectory": trajectory_entries(messages) or "(the agent took no actions)",
                                          "final_answer": _clip(final_answer, FINAL_ANSWER_CHARS) or "(none)",
                                          "evidence": _evidence_value(evidence)})
        prompt = [
            {"role": "system", "content": render("judge_system.md")},
            {"role": "user", "content": render("judge_request.md", task=task, criteria=criteria.text(),
                                               boundary=boundary, data=document)},
        ]
        detail: dict[str, Any] = {"judge": self.name, "evidence": _clip(_evidence_text(evidence),
                                                                       DETAIL_EVIDENCE_CHARS)}
        return await self.ask(prompt, detail, started)

    async def ask(self, prompt: list[dict[str, Any]], detail: dict[str, Any], started: float) -> Verdict:
        """Ask for a classification: a reply without one is asked for once more, then it is
        `judge_unclassified` (the agent's incomplete); only a failed call is `judge_error`."""
        parsed = None
        for attempt in range(1, JUDGE_ATTEMPTS + 1):
            try:
                reply = await self.client.complete(prompt)
            except AwmError as exc:
                return Verdict(result="judge_error", mode="sql", detail=detail, error=f"judge call failed: {exc}",
                               elapsed_ms=(time.perf_counter() - started) * 1000)
            usage = getattr(reply, "usage", None)
            if isinstance(usage, Usage):
                _add_usage(detail, usage)
            if (config := getattr(self.client, "config", None)) is not None and (
                    spent := exhausted(reply, "judge", config.alias, config.params)):
                return Verdict(result="judge_error", mode="sql", detail=detail, error=spent,
                               elapsed_ms=(time.perf_counter() - started) * 1000)
            parsed = parse_judgement(getattr(reply, "content", None))
            if parsed is not None:
                break
            detail["judge_attempts"] = attempt
        elapsed = (time.perf_counter() - started) * 1000
        if parsed is None:
            raw = (getattr(reply, "content", None) or "")[:300]
            detail["judge_reply"] = raw
            return Verdict(result="judge_unclassified", mode="sql", detail=detail, elapsed_ms=elapsed,
                           error=f"the judge's reply had no classification, {JUDGE_ATTEMPTS} times: {raw!r}")
        label, reason, said = parsed
        detail.update(classification=label, reason=reason)
        if said != label:
            detail["judge_said"] = said  # not a label: only complete | incomplete are
        return Verdict(result=label, mode="sql", detail=detail, elapsed_ms=elapsed)  # type: ignore[arg-type]


def _task_criteria(criteria: Criteria) -> str:
    """The criteria a tasks file gave (no verifier reasoning), or a plain note that there are none."""
    if not criteria.success and not criteria.failure:
        return "(none given: judge from the task's own words)"
    parts = [f"{title}:\n" + "\n".join(f"- {i}" for i in items)
             for title, items in (("Success criteria", criteria.success), ("Failure criteria", criteria.failure))
             if items]
    return "\n\n".join(parts)


async def classify_trajectory(judge: Judge, *, task: str, messages: Sequence[Message], criteria: Criteria,
                              final_answer: str) -> Verdict:
    """Classify an episode of a world without a database (an MCP server): from its trajectory, its final
    answer and the task's own criteria, with the judge_mcp prompts. Labels and reply rules are the SQL-mode
    judge's; the verdict's mode is `sql` (an LLM decided) and its detail says `judged_from: trajectory`."""
    started = time.perf_counter()
    boundary, document = fenced_data({"trajectory": trajectory_entries(messages) or "(the agent took no actions)",
                                      "final_answer": _clip(final_answer, FINAL_ANSWER_CHARS) or "(none)"})
    prompt = [
        {"role": "system", "content": render("judge_mcp_system.md")},
        {"role": "user", "content": render("judge_mcp_request.md", task=task, criteria=_task_criteria(criteria),
                                           boundary=boundary, data=document)},
    ]
    detail: dict[str, Any] = {"judge": judge.name, "judged_from": "trajectory"}
    return await judge.ask(prompt, detail, started)
