"""ChatPolicy: a model behind the model layer, speaking one tool-call protocol."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from awm_runtime._interfaces import PolicyTurn
from awm_runtime._types import Message, ModelRef, Source, Task, ToolSpec
from awm_runtime.models import (
    ModelClient,
    delta_ids,
    modify_params_on,
    reasoning_params,
    state_for,
    state_missing,
    warn_once,
    with_sequence,
)
from awm_runtime.policies.protocols import ToolProtocol
from awm_runtime.policies.protocols._carry import MAX_ARGUMENT_BYTES, ArgumentLimits


def join_reasoning(*parts: str | None) -> str | None:
    return "\n\n".join(p for p in parts if p) or None


class ChatPolicy:
    """Any litellm model as the agent. Shared by concurrent episodes: it holds no episode state.

    `protocol` overrides the alias's; `enable_thinking` (None = the server's default) is sent as
    vLLM's `chat_template_kwargs`, merged over any the alias's params already set. `reasoning_effort` and
    `thinking_budget` (an arm's, docs/models.md "Reasoning models") go over the alias's params.
    """

    def __init__(self, client: ModelClient, *, protocol: str | None = None, tool_result_chars: int = 3000,
                 tool_result_role: str | None = None, enable_thinking: bool | None = None,
                 max_argument_bytes: int = MAX_ARGUMENT_BYTES, reasoning_effort: str | None = None,
                 thinking_budget: int | None = None) -> None:
        self.client = client
        self.speaker = ToolProtocol(protocol or client.config.protocol, tool_result_chars=tool_result_chars,
                                    tool_result_role=tool_result_role or client.config.tool_result_role,
                                    limits=ArgumentLimits(max_bytes=max_argument_bytes))
        self.enable_thinking = enable_thinking
        self.reasoning_effort = reasoning_effort
        self.thinking_budget = thinking_budget
        config = client.config
        asked = reasoning_params({**config.params, **self.request_params(0)})
        if asked and modify_params_on() and not config.simulated:
            warn_once("litellm_modify_params", config.alias,
                      "litellm.modify_params is on: litellm drops `thinking` from any request whose last tool call "
                      "has no thinking blocks, silently; this run hands them back, and counts the episodes where it "
                      "could not (reasoning_dropped_episodes)")

    @property
    def protocol(self) -> str:
        return self.speaker.name

    @property
    def tool_result_chars(self) -> int:
        return self.speaker.tool_result_chars

    @property
    def ref(self) -> ModelRef:
        c = self.client.config
        return ModelRef(alias=c.alias, model=c.model, simulated=c.simulated, protocol=self.protocol)

    def begin(self, task: Task, tools: Sequence[ToolSpec]) -> list[Message]:
        return self.speaker.begin(task, tools)

    def request_params(self, seed: int) -> dict[str, Any]:
        """Per-request params on top of the alias's: seed, thinking switch, token-level data."""
        config = self.client.config
        params: dict[str, Any] = {"seed": seed}
        if self.enable_thinking is not None:
            kwargs = dict(config.params.get("chat_template_kwargs") or {})
            params["chat_template_kwargs"] = {**kwargs, "enable_thinking": self.enable_thinking}
        # An arm's reasoning, over the alias's: either switch replaces the other the alias set (None: litellm
        # leaves a param out), so the arm's is what the provider gets.
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
            if "thinking" in config.params:
                params["thinking"] = None
        if self.thinking_budget is not None:  # Anthropic's extended thinking with this budget
            params["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
            if "reasoning_effort" in config.params:
                params["reasoning_effort"] = None
        if config.logprobs:
            params["logprobs"] = True
            # One alternative per token, unless the alias asks for more: llama.cpp sends 20 when this is
            # unset (about 1 KB per generated token) and none at all for 0.
            if "top_logprobs" not in config.params:
                params["top_logprobs"] = 1
            # vLLM's own token ids; only sent to declared vLLM endpoints, as strict servers reject it.
            if config.model.startswith("hosted_vllm/"):
                params["return_token_ids"] = True
        return params

    async def act(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, seed: int = 0) -> PolicyTurn:
        started = time.perf_counter()
        wire = self.speaker.wire(messages, self.client.config.model)
        tito = self.client.config.tito
        if tito:  # token in, token out: the episode's exact tokens so far travel with the transcript
            wire = with_sequence(wire, messages)
        params = self.request_params(seed)
        dropped = state_missing(messages, self.client.config.model, {**self.client.config.params, **params})
        if dropped:
            warn_once("reasoning_state_missing", self.client.config.alias,
                      "a request asked the model to reason but the previous tool call went back without its reasoning "
                      "state (a transcript from another model or an older run): Anthropic refuses it, litellm's "
                      "modify_params drops thinking for the turn, Gemini 3 answers without its earlier thoughts; "
                      "the summary counts the episodes (reasoning_dropped_episodes)")
        reply = await self.client.complete(wire, tools=self.speaker.native_tools(tools), params=params)
        parsed = self.speaker.parse(reply.content, reply.tool_calls, tools, call_id=self.speaker.call_id(messages),
                                    finish_reason=reply.finish_reason, reasoning=reply.reasoning)
        message = Message(
            role="assistant", content=reply.content, source="policy", tool_calls=reply.tool_calls or None,
            reasoning=join_reasoning(reply.reasoning, parsed.reasoning), format_error=parsed.format_error,
            logprobs=reply.logprobs, token_ids=reply.token_ids, finish_reason=reply.finish_reason,
            prompt_token_ids=reply.prompt_token_ids,
            prompt_delta_ids=delta_ids(reply, wire) if tito else None,
            provider_state=state_for(self.client.config.model, reply.provider_fields),
            reasoning_dropped=True if dropped else None,
        )
        return PolicyTurn(message=message, action=parsed.action, warnings=parsed.warnings,
                          usage=reply.usage, elapsed_s=time.perf_counter() - started)

    def observe(self, turn: PolicyTurn, text: str, source: Source) -> list[Message]:
        return self.speaker.observe(turn, text, source)
