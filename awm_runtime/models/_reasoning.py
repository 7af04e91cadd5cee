"""A reasoning model's state and counts, as a completion returns them (issue 46, docs/models.md "Reasoning models").

Each provider has its rule for what must come back on the next request of a conversation:

- Anthropic (extended thinking, through litellm): the signed `thinking` / `redacted_thinking` blocks of the reply,
  verbatim, before its `tool_use` blocks. litellm returns them as the message's `thinking_blocks` and puts them first
  in the assistant turn when a request message carries `thinking_blocks`.
- Gemini (through litellm): each functionCall part's `thoughtSignature`. litellm folds it into the tool call's id
  (`call_..__thought__<signature>`), which the runtime keeps as given; the message's `provider_specific_fields`
  (`thought_signatures`) are kept and handed back too.
- vLLM (`hosted_vllm/`, a reasoning parser): `reasoning_content` (or `reasoning`) beside the content; handed back
  on the assistant messages, for chat templates that render earlier reasoning. Not to other OpenAI-wire servers,
  some of which refuse it (DeepSeek's reasoner answers 400 to a `reasoning_content` in the input).

Reasoning tokens: OpenAI and vLLM report `usage.completion_tokens_details.reasoning_tokens`; litellm maps Gemini's
`thoughtsTokenCount` to the same field (and adds it to `completion_tokens` when Gemini did not). Every one of these
providers bills reasoning as output tokens and counts it inside `completion_tokens`, so cost prices completion tokens
once and reasoning tokens are a share of them, never added again. Anthropic's wire says nothing about how many of its
`output_tokens` were thinking; the figure litellm gives then is its own count of the thinking text (a summary, for
Claude 4 models), not what was billed: the runtime records it as not reported (None).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from awm_runtime._log import get_logger
from awm_runtime._types import MAX_TOKENS_PER_CALL
from awm_runtime.models._registry import toml_table

if TYPE_CHECKING:
    from awm_runtime._types import Message

log = get_logger("awm_runtime.models")
_warned: set[tuple[str, str]] = set()  # (event, alias): each said once per process

# The assistant-message fields a provider reads back on later requests, as litellm's message or the OpenAI wire
# name them.
_HANDED_BACK = ("thinking_blocks", "provider_specific_fields")
_VLLM_REASONING = ("reasoning_content", "reasoning")


# The request params that turn a model's reasoning on or set its effort (litellm maps `reasoning_effort` to
# Anthropic's thinking budget and Gemini's thinkingConfig).
REASONING_PARAMS = ("thinking", "reasoning_effort", "thinking_config")


def reasoning_params(params: dict[str, Any]) -> dict[str, Any]:
    """The reasoning switches among an alias's params (a thinking of `{type: disabled}` is none)."""
    found = {k: params[k] for k in REASONING_PARAMS if params.get(k) not in (None, "", "none")}
    thinking = found.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "disabled":
        del found["thinking"]
    return found


def _plain(value: Any) -> Any:
    """A litellm object (pydantic, or our wire view) as plain JSON-able data."""
    data = getattr(value, "_data", None)
    if isinstance(data, dict):  # models/_http.py's attribute view over parsed JSON
        return _plain(data)
    if callable(getattr(value, "model_dump", None)):
        return _plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def provider_fields(message: Any) -> dict[str, Any] | None:
    """What a reply's provider may need back, verbatim: `thinking_blocks`, non-empty `provider_specific_fields`
    (their copy of the thinking blocks left out: litellm reads the top-level ones), and a reasoning text the server
    returned as a field of its own. None when there is none."""
    out: dict[str, Any] = {}
    blocks = _plain(getattr(message, "thinking_blocks", None))
    if isinstance(blocks, list) and blocks:
        out["thinking_blocks"] = blocks
    extra = _plain(getattr(message, "provider_specific_fields", None))
    if isinstance(extra, dict):
        extra = {k: v for k, v in extra.items() if v not in (None, [], {}) and not (
            k == "thinking_blocks" and v == out.get("thinking_blocks"))}
        if extra:
            out["provider_specific_fields"] = extra
    if "thinking_blocks" not in out:  # Anthropic's thinking text is in its blocks already
        for name in _VLLM_REASONING:
            text = getattr(message, name, None)
            if isinstance(text, str) and text:
                out[name] = text
                break
    return out or None


def hand_back(model: str, fields: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a reply's provider fields that goes back to `model` on later requests: the thinking blocks and
    litellm's provider fields always (litellm gives them to the provider that made them); a reasoning text only to a
    declared vLLM server (`hosted_vllm/`)."""
    if not fields:
        return None
    kept = {k: v for k, v in fields.items() if k in _HANDED_BACK
            or (k in _VLLM_REASONING and model.startswith("hosted_vllm/"))}
    return kept or None


def state_for(model: str, fields: dict[str, Any] | None) -> dict[str, Any] | None:
    """A policy message's `provider_state`: the fields `model` needs back, tagged with `model`, so that a fork or
    an arm on another model never sends one provider's signatures to another."""
    kept = hand_back(model, fields)
    return {"model": model, "fields": kept} if kept else None


def reasoning_tokens(raw_usage: Any, fields: dict[str, Any] | None) -> int | None:
    """The reply's reasoning tokens as its provider reported them, else None (never a guessed 0).

    A reply with Anthropic thinking blocks: None, whatever litellm says (its own estimate, see the module's note)."""
    if fields and fields.get("thinking_blocks"):
        return None
    details = getattr(raw_usage, "completion_tokens_details", None) if raw_usage is not None else None
    value = getattr(details, "reasoning_tokens", None) if details is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value > MAX_TOKENS_PER_CALL:
        return None  # not a count any call holds: not reported (the call's own counts are checked in _reply)
    return int(value)


def state_missing(messages: Sequence[Message], model: str, params: dict[str, Any]) -> bool:
    """Whether a request that asks `model` to reason goes out without the reasoning state of the reply it answers:
    the last assistant message made tool calls and holds no state of `model`'s (Anthropic then refuses the request,
    litellm's modify_params drops thinking for it, Gemini 3 gets a dummy signature)."""
    if not reasoning_params(params):
        return False
    last = next((m for m in reversed(messages) if m.role == "assistant"), None)
    if last is None or not last.tool_calls:
        return False
    return not (last.provider_state and last.provider_state.get("model") == model)


def warn_once(event: str, alias: str, note: str) -> None:
    """A warning with the alias, once per process and alias (the run's summary counts the episodes)."""
    if (event, alias) in _warned:
        return
    _warned.add((event, alias))
    log.warning(event, alias=alias, note=note)


def modify_params_on() -> bool:
    """Whether litellm will rewrite requests (LITELLM_MODIFY_PARAMS, or litellm.modify_params set in this process):
    it then drops `thinking` from a request whose last tool call has no thinking blocks, saying nothing."""
    if os.environ.get("LITELLM_MODIFY_PARAMS", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    module = sys.modules.get("litellm")
    return bool(getattr(module, "modify_params", False)) if module is not None else False


def exhausted(reply: Any, role: str, alias: str, params: dict[str, Any]) -> str | None:
    """The one-line configuration error of a reply that came back empty because the model spent its whole
    max_tokens (reasoning, most often: `finish_reason` length, no content, no tool call), else None. For a judge or
    an expert this is the alias's setting, never the agent's doing."""
    if getattr(reply, "finish_reason", None) != "length" or (getattr(reply, "content", None) or "").strip() \
            or getattr(reply, "tool_calls", None):
        return None
    limit = params.get("max_tokens") or params.get("max_completion_tokens")
    usage = getattr(reply, "usage", None)
    spent = getattr(usage, "reasoning_tokens", None)
    thought = f", {spent} of them reasoning" if spent else " (reasoning, for a reasoning model)"
    return (f"{role} model {alias!r} used its whole max_tokens ({limit if limit else 'the provider default'})"
            f"{thought} and returned no answer: raise max_tokens under {toml_table(alias)} in awm.toml")
