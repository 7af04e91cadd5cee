"""Token-level data for RL: per-token logprobs and token ids from a completion choice.

Endpoints return them in three shapes, all read here:
- OpenAI `logprobs.content[i].logprob` (any endpoint asked for `logprobs=True`);
- vLLM `return_token_ids=True`: `choices[i].token_ids`, which litellm keeps under
  `provider_specific_fields`;
- vLLM `return_tokens_as_token_ids=True`: each logprob token spelled `token_id:<id>`.
"""

from __future__ import annotations

from typing import Any

_ID_PREFIX = "token_id:"


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _ints(values: Any) -> list[int] | None:
    if not isinstance(values, list | tuple) or not values:
        return None
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        return None


def token_fields(choice: Any) -> dict[str, Any]:
    """{"logprobs": [float per generated token] | None, "token_ids": [int] | None} for one choice."""
    entries = _get(_get(choice, "logprobs"), "content") or []
    logprobs: list[float] | None = None
    spelled: list[int] | None = None
    if entries:
        try:
            logprobs = [float(_get(e, "logprob")) for e in entries]
        except (TypeError, ValueError):
            logprobs = None
        tokens = [_get(e, "token") for e in entries]
        if all(isinstance(t, str) and t.startswith(_ID_PREFIX) for t in tokens):
            spelled = _ints([t[len(_ID_PREFIX):] for t in tokens])
    extra = _get(choice, "provider_specific_fields") or {}
    token_ids = _ints(_get(extra, "token_ids")) or _ints(_get(choice, "token_ids")) or spelled
    return {"logprobs": logprobs, "token_ids": token_ids}
