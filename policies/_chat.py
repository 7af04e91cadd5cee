"""ChatPolicy: a model behind the model layer, speaking one tool-call protocol."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from awm_runtime._prompts import render
from awm_runtime._protocols import CallTool, ListTools, Malformed, PolicyTurn
from awm_runtime._types import Message, ModelRef, Source, Task, ToolSpec
from awm_runtime.models import ModelClient
from policies.protocols import parse_reply, system_prompt


def truncate(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + f"\n…[truncated {len(text) - limit} chars]"


class ChatPolicy:
    """Any litellm model as the agent. Shared by concurrent episodes: it holds no episode state."""

    def __init__(self, client: ModelClient, *, protocol: str | None = None, tool_result_chars: int = 3000,
                 tool_result_role: str | None = None) -> None:
        self.client = client
        self.protocol = protocol or client.config.protocol
        self.tool_result_chars = tool_result_chars
        self.tool_result_role = tool_result_role or client.config.tool_result_role or (
            "tool" if self.protocol == "native" else "user")

    @property
    def ref(self) -> ModelRef:
        c = self.client.config
        return ModelRef(alias=c.alias, model=c.model, simulated=c.simulated)

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        system = system_prompt(self.protocol, tools, scenario=task.scenario_title or task.scenario)
        return [Message(role="system", content=system, source="system"),
                Message(role="user", content=render("task.md", task=task.text), source="system")]

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        started = time.perf_counter()
        wire = [m.to_openai() for m in messages]
        native_tools = [t.to_openai() for t in tools] if self.protocol == "native" else None
        params: dict[str, Any] = {"seed": seed}
        reply = await self.client.complete(wire, tools=native_tools, params=params)
        turn_no = sum(1 for m in messages if m.role == "assistant")
        names = {t.name for t in tools}
        parsed = parse_reply(self.protocol, reply.content, reply.tool_calls, names, call_id=f"call_{turn_no}")
        message = Message(
            role="assistant", content=reply.content, source="policy", tool_calls=reply.tool_calls or None,
            reasoning=parsed.reasoning or reply.reasoning, format_error=parsed.format_error,
            logprobs=reply.logprobs, token_ids=reply.token_ids,
        )
        return PolicyTurn(message=message, action=parsed.action, warnings=parsed.warnings,
                          usage=reply.usage, elapsed_s=time.perf_counter() - started)

    def observe(self, turn: PolicyTurn, text: str, source: Source) -> list[Message]:
        """Render a result in this protocol. Native replies need one tool message per call id."""
        if not isinstance(turn.action, ListTools):
            text = truncate(text, self.tool_result_chars)
        calls = turn.message.tool_calls or []
        if self.protocol == "native" and calls:
            first = Message(role="tool", content=text, source=source, tool_call_id=calls[0].get("id"),
                            name=(calls[0].get("function") or {}).get("name"))
            skipped = [Message(role="tool", content=render("call_not_executed.md"), source="system",
                               tool_call_id=c.get("id"), name=(c.get("function") or {}).get("name"))
                       for c in calls[1:]]
            return [first, *skipped]
        if isinstance(turn.action, Malformed) or self.tool_result_role == "user":
            content = text if isinstance(turn.action, Malformed) else render("tool_response.md", result=text)
            return [Message(role="user", content=content, source=source)]
        name = turn.action.call.name if isinstance(turn.action, CallTool) else "list_tools"
        return [Message(role="tool", content=text, source=source, name=name)]
