"""LLMExpert: a model on the `expert` role answers ask_expert with a JSON plan, repaired if malformed."""

from __future__ import annotations

import json
import time
from typing import Any

from awm_runtime._errors import ModelError
from awm_runtime._interfaces import Advice, AdviceRequest
from awm_runtime._prompts import render
from awm_runtime._types import ModelRef, ToolSpec, Usage
from awm_runtime.experts._criteria import CriteriaStore
from awm_runtime.models import ModelClient, exhausted
from awm_runtime.policies.protocols import loads_lenient

PLAN_KEYS = ("plan", "tips", "success_state")


def _step(item: Any) -> dict[str, Any] | None:
    """One plan step as {tool, args, purpose}; prose steps keep only a purpose."""
    if isinstance(item, str):
        return {"tool": "", "args": {}, "purpose": item}
    if not isinstance(item, dict):
        return None
    args = item.get("args", item.get("arguments", {}))
    if isinstance(args, str):
        try:
            args = loads_lenient(args)
        except ValueError:
            args = {"raw": args}
    return {"tool": str(item.get("tool") or item.get("name") or ""), "args": args if isinstance(args, dict) else {},
            "purpose": str(item.get("purpose") or item.get("why") or "")}


def repair_plan(text: str) -> dict[str, Any] | None:
    """The JSON plan inside an expert reply, tolerating fences, prose and near-JSON; None if absent."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = loads_lenient(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not any(k in data for k in PLAN_KEYS):
        return None
    raw = data.get("plan") or []
    steps = [s for item in (raw if isinstance(raw, list) else [raw]) if (s := _step(item)) is not None]
    return {"plan": steps, "tips": str(data.get("tips") or ""), "success_state": str(data.get("success_state") or "")}


def tool_lines(tools: list[ToolSpec] | tuple[ToolSpec, ...]) -> str:
    """Every tool with its full description and input schema, one JSON object per line."""
    return "\n".join(json.dumps({"name": t.name, "description": t.description, "input_schema": t.input_schema},
                                ensure_ascii=False) for t in tools)


class LLMExpert:
    """Shown the task, the full tool schemas, the question, the trajectory so far (and optionally criteria)."""

    def __init__(self, client: ModelClient, *, criteria: CriteriaStore | None = None, repair_attempts: int = 1) -> None:
        self.client = client
        self.criteria = criteria
        self.repair_attempts = repair_attempts

    @property
    def ref(self) -> ModelRef:
        c = self.client.config
        return ModelRef(alias=c.alias, model=c.model, simulated=c.simulated)

    def messages(self, request: AdviceRequest, criteria: str | None) -> list[dict[str, Any]]:
        task = request.task
        return [
            {"role": "system", "content": render("expert_system.md", scenario=task.scenario_title or task.scenario)},
            {"role": "user", "content": render(
                "expert_request.md", task=task.text, tools=tool_lines(list(request.tools)),
                trajectory=request.trajectory, question=request.question or "(no question given)",
                context=f"Context from the agent: {request.context}" if request.context else "",
                criteria=f"Success criteria:\n{criteria}\n" if criteria else "")},
        ]

    async def advise(self, request: AdviceRequest) -> Advice:
        started = time.perf_counter()
        usage = Usage()
        criteria = request.success_criteria
        if criteria is None and self.criteria is not None:
            criteria, spent = await self.criteria.get(request.task)
            usage.add(spent)
        messages = self.messages(request, criteria)
        reply = await self.client.complete(messages)
        usage.add(reply.usage)
        config = self.client.config
        if out_of_tokens := exhausted(reply, "expert", config.alias, config.params):  # the alias's, not the agent's
            raise ModelError(out_of_tokens, kind="bad_request", role="expert", alias=config.alias)
        content = reply.content or ""
        plan = repair_plan(content)
        attempts = 0
        while plan is None and attempts < self.repair_attempts:
            attempts += 1
            messages = [*messages, {"role": "assistant", "content": content},
                        {"role": "user", "content": render("expert_repair.md")}]
            again = await self.client.complete(messages)
            usage.add(again.usage)
            plan = repair_plan(again.content or "")
        # Unrepairable prose is still advice: pass it on rather than lose it.
        text = json.dumps(plan, ensure_ascii=False) if plan is not None else content.strip()
        return Advice(text=text, answered_by=f"llm:{self.client.config.alias}", usage=usage,
                      latency_s=time.perf_counter() - started)
