"""LLMExpert: a model on the `expert` role answers ask_expert with a JSON plan."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from awm_runtime._prompts import render
from awm_runtime._protocols import Advice, AdviceRequest
from awm_runtime._types import ModelRef, Task
from awm_runtime.models import ModelClient
from policies.protocols import loads_lenient

PLAN_KEYS = ("plan", "tips", "success_state")


def repair_plan(text: str) -> dict[str, object] | None:
    """The JSON plan inside an expert reply, tolerating fences, prose and near-JSON."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = loads_lenient(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not any(k in data for k in PLAN_KEYS):
        return None
    return {"plan": data.get("plan") or [], "tips": data.get("tips") or "",
            "success_state": data.get("success_state") or ""}


class LLMExpert:
    def __init__(self, client: ModelClient, *, criteria: Callable[[Task], str | None] | None = None) -> None:
        self.client = client
        self.criteria = criteria

    @property
    def ref(self) -> ModelRef:
        c = self.client.config
        return ModelRef(alias=c.alias, model=c.model, simulated=c.simulated)

    async def advise(self, request: AdviceRequest) -> Advice:
        started = time.perf_counter()
        tools = "\n".join(json.dumps({"name": t.name, "description": t.description.split("\n\n")[0],
                                      "input_schema": t.input_schema}, ensure_ascii=False) for t in request.tools)
        criteria = self.criteria(request.task) if self.criteria else None
        messages = [
            {"role": "system", "content": render("expert_system.md",
                                                 scenario=request.task.scenario_title or request.task.scenario)},
            {"role": "user", "content": render(
                "expert_request.md", task=request.task.text, tools=tools, trajectory=request.trajectory,
                question=request.question or "(no question given)",
                context=f"Context from the agent: {request.context}" if request.context else "",
                criteria=f"Success criteria:\n{criteria}\n" if criteria else "")},
        ]
        reply = await self.client.complete(messages)
        plan = repair_plan(reply.content or "")
        text = json.dumps(plan, ensure_ascii=False) if plan is not None else (reply.content or "").strip()
        return Advice(text=text, answered_by=f"llm:{self.client.config.alias}", usage=reply.usage,
                      latency_s=time.perf_counter() - started)


__all__ = ["LLMExpert", "repair_plan"]
