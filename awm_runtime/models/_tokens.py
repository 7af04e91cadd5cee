"""Token-level data for RL: per-token logprobs and token ids from a completion choice.

Endpoints return them in these shapes, all read here:
- OpenAI `logprobs.content[i].logprob` (any endpoint asked for `logprobs=True`);
- llama.cpp's `llama-server`: each `logprobs.content[i]` also carries its token's `id`;
- vLLM `return_tokens_as_token_ids=True`: each logprob token spelled `token_id:<id>`;
- vLLM `return_token_ids=True`: `choices[i].token_ids`, which litellm keeps under
  `provider_specific_fields`.

vLLM's own id list is read first, then ids carried by the logprob entries. Ids and logprobs describe
the same tokens, so when both are read they have the same length: ids of another length are dropped,
since ids that cannot be matched to their logprobs would mislead a trainer more than no ids at all.
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


def _entry_ids(entries: list[Any]) -> list[int] | None:
    """Ids carried by the logprob entries themselves: llama.cpp's `id`, or vLLM's `token_id:N` spelling."""
    ids = [_get(e, "id") for e in entries]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return ids
    tokens = [_get(e, "token") for e in entries]
    if all(isinstance(t, str) and t.startswith(_ID_PREFIX) for t in tokens):
        return _ints([t[len(_ID_PREFIX):] for t in tokens])
    return None


def token_fields(choice: Any) -> dict[str, Any]:
    """{"logprobs": [float per generated token] | None, "token_ids": [int] | None} for one choice."""
    entries = _get(_get(choice, "logprobs"), "content") or []
    logprobs: list[float] | None = None
    if entries:
        try:
            logprobs = [float(_get(e, "logprob")) for e in entries]
        except (TypeError, ValueError):
            logprobs = None
    extra = _get(choice, "provider_specific_fields") or {}
    token_ids = (_ints(_get(extra, "token_ids")) or _ints(_get(choice, "token_ids"))
                 or (_entry_ids(entries) if entries else None))
    if logprobs is not None and token_ids is not None and len(token_ids) != len(logprobs):
        token_ids = None
    return {"logprobs": logprobs, "token_ids": token_ids}
