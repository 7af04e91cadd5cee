"""ModelReply, and the one function that turns a litellm response into it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from awm_runtime._types import MAX_TOKENS_PER_CALL, Usage
from awm_runtime.models._reasoning import provider_fields, reasoning_tokens
from awm_runtime.models._tokens import token_fields


@dataclass(slots=True)
class ModelReply:
    """A completion, reduced to what the runtime uses. `tool_calls` keep raw JSON argument strings."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    logprobs: list[Any] | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None  # vLLM `return_token_ids`: the prompt as the engine tokenised it
    # What the provider may need back on later requests, verbatim (models/_reasoning.py): Anthropic's signed
    # thinking_blocks, litellm's provider_specific_fields, a server's reasoning_content.
    provider_fields: dict[str, Any] | None = None
    usage_problem: str | None = None  # the provider's usage was invalid: its counts are not counted or priced

    def to_wire(self) -> dict[str, Any]:
        """Plain JSON-able fields, to cross a process boundary (model-call processes)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["usage"] = self.usage.model_dump()
        return out

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> ModelReply:
        return cls(**{**data, "usage": Usage(**data.get("usage", {}))})


def _count(raw_usage: Any, name: str) -> tuple[int, str | None]:
    """One usage count as the provider gave it: a whole number in [0, MAX_TOKENS_PER_CALL], or why not."""
    value = getattr(raw_usage, name, None)
    if value is None:
        return 0, None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return 0, f"usage.{name} = {value!r} is not a number"
    try:
        number = float(value)
    except ValueError:
        return 0, f"usage.{name} = {value!r} is not a number"
    if not number.is_integer():
        return 0, f"usage.{name} = {value!r} is not a whole number"
    if number < 0:
        return 0, f"usage.{name} = {value!r} is negative"
    if number > MAX_TOKENS_PER_CALL:
        return 0, f"usage.{name} = {value!r} is more than any context holds ({MAX_TOKENS_PER_CALL:,})"
    return int(number), None


def parse_usage(raw_usage: Any) -> tuple[Usage, str | None]:
    """A reply's usage, validated where it enters: negative, fractional, non-numeric or absurd counts are the
    provider's error; the call's tokens are then counted as none and its cost is unknown (never priced)."""
    prompt, bad_prompt = _count(raw_usage, "prompt_tokens")
    completion, bad_completion = _count(raw_usage, "completion_tokens")
    problem = bad_prompt or bad_completion
    if problem:
        return Usage(calls=1), problem
    return Usage(calls=1, prompt_tokens=prompt, completion_tokens=completion), None


def to_reply(response: Any, latency_s: float) -> ModelReply:
    """A litellm ModelResponse as a ModelReply. Tokens are counted here; cost is the client's job."""
    choice = response.choices[0]
    message = choice.message
    tool_calls = [
        {"id": tc.id or f"call_{i}", "type": "function",
         "function": {"name": tc.function.name or "", "arguments": tc.function.arguments or ""}}
        for i, tc in enumerate(getattr(message, "tool_calls", None) or [])
    ]
    raw_usage = getattr(response, "usage", None)
    usage, usage_problem = parse_usage(raw_usage)
    prompt_ids = getattr(response, "prompt_token_ids", None)
    fields = provider_fields(message)
    if usage_problem is None:  # reasoning tokens are counted only beside valid counts (they are part of them)
        usage = usage.model_copy(update={"reasoning_tokens": reasoning_tokens(raw_usage, fields)})
    reasoning = getattr(message, "reasoning_content", None) or getattr(message, "reasoning", None)
    return ModelReply(
        content=message.content,
        tool_calls=tool_calls,
        reasoning=reasoning if isinstance(reasoning, str) else None,
        finish_reason=choice.finish_reason,
        usage=usage,
        usage_problem=usage_problem,
        provider_fields=fields,
        latency_s=latency_s,
        prompt_token_ids=[int(i) for i in prompt_ids] if isinstance(prompt_ids, list) and prompt_ids else None,
        **token_fields(choice),
    )
