"""SQL mode: the verifier gathers evidence, and an LLM on the `judge` role classifies the episode.

The judge sees the task, the agent's trajectory, the evidence, and the reasoning, success and
failure criteria parsed from the verifier row's `raw_response`. It answers one of
complete | incomplete | agent_error | server_error; anything else is `judge_error`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from awm_runtime._errors import AwmError
from awm_runtime._prompts import render
from awm_runtime._types import Message, Usage, Verdict

LABELS = ("complete", "incomplete", "agent_error", "server_error")
_THINK = re.compile(r"<think>.*?</think>", re.S)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_LABEL = re.compile(r"\b(complete|incomplete|agent_error|server_error)\b", re.I)
EVIDENCE_CHARS = 12000
TRAJECTORY_CHARS = 24000
DETAIL_EVIDENCE_CHARS = 8000


class JudgeReply(Protocol):
    content: str | None
    usage: Usage


class JudgeClient(Protocol):
    """What the judge needs from the model layer (`awm_runtime.models.ModelClient` fits)."""

    async def complete(self, messages: list[dict[str, Any]]) -> Any: ...


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


def parse_judgement(text: str | None) -> tuple[str, str] | None:
    """(label, reason) from the judge's reply, or None when it is unusable."""
    text = _THINK.sub("", text or "").strip()
    obj = first_json_object(text)
    if obj is not None:
        label = str(obj.get("classification") or obj.get("result") or "").strip().lower()
        if label in LABELS:
            return label, str(obj.get("reason") or obj.get("reasoning") or "")
    found = {m.lower() for m in _LABEL.findall(text)}
    if len(found) == 1:  # a bare label in prose: usable only if it is unambiguous
        return found.pop(), text[:500]
    return None


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… ({len(text) - limit} characters omitted) …\n{text[-half:]}"


def render_trajectory(messages: Sequence[Message], *, limit: int = TRAJECTORY_CHARS) -> str:
    """The episode as the judge reads it: one block per message, tool calls spelled out."""
    blocks: list[str] = []
    for m in messages:
        if m.source == "system" and m.role == "system":
            continue  # the policy's system prompt says nothing about what happened
        text = (m.content or "").strip()
        for call in m.tool_calls or ():
            fn = call.get("function") or {}
            text += f"\n[calls {fn.get('name')} with {fn.get('arguments')}]"
        blocks.append(f"[{m.source} / {m.role}] {_clip(text, 3000)}")
    return _clip("\n\n".join(blocks), limit) or "(the agent took no actions)"


def _evidence_text(evidence: Any) -> str:
    try:
        return json.dumps(evidence, indent=1, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(evidence)


class Judge:
    """Classifies one finished episode from the evidence its SQL-mode verifier gathered."""

    def __init__(self, client: JudgeClient, *, name: str = "judge") -> None:
        self.client = client
        self.name = name

    async def classify(self, *, task: str, messages: Sequence[Message], evidence: Any, criteria: Criteria,
                       final_answer: str) -> Verdict:
        started = time.perf_counter()
        evidence_text = _evidence_text(evidence)
        prompt = [
            {"role": "system", "content": render("judge_system.md")},
            {"role": "user", "content": render(
                "judge_request.md", task=task, criteria=criteria.text(), trajectory=render_trajectory(messages),
                evidence=_clip(evidence_text, EVIDENCE_CHARS), final_answer=final_answer or "(none)")},
        ]
        detail: dict[str, Any] = {"judge": self.name, "evidence": _clip(evidence_text, DETAIL_EVIDENCE_CHARS)}
        try:
            reply = await self.client.complete(prompt)
        except AwmError as exc:
            return Verdict(result="judge_error", mode="sql", detail=detail, error=f"judge call failed: {exc}",
                           elapsed_ms=(time.perf_counter() - started) * 1000)
        usage = getattr(reply, "usage", None)
        if isinstance(usage, Usage):
            detail["judge_usage"] = usage.model_dump()
        elapsed = (time.perf_counter() - started) * 1000
        parsed = parse_judgement(getattr(reply, "content", None))
        if parsed is None:
            raw = (getattr(reply, "content", None) or "")[:300]
            return Verdict(result="judge_error", mode="sql", detail=detail, elapsed_ms=elapsed,
                           error=f"judge reply has no usable classification: {raw!r}")
        label, reason = parsed
        detail.update(classification=label, reason=reason)
        return Verdict(result=label, mode="sql", detail=detail, elapsed_ms=elapsed)  # type: ignore[arg-type]
