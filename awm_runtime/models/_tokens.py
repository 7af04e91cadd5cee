"""Token-level data for RL: per-token logprobs and token ids from a completion choice.

Endpoints return them in these shapes, all read here:
- OpenAI `logprobs.content[i].logprob` (any endpoint asked for `logprobs=True`);
- llama.cpp's `llama-server`: each `logprobs.content[i]` also carries its token's `id`;
- vLLM `return_tokens_as_token_ids=True`: each logprob token spelled `token_id:<id>`;
- vLLM `return_token_ids=True`: `choices[i].token_ids`, which litellm keeps under
  `provider_specific_fields`.

vLLM's own id list is read first, then ids carried by the logprob entries. Token data is validated where
it enters (issue 51): ids are whole numbers within the vocabulary (below `MAX_VOCAB` when the engine does
not say its size), logprobs are numbers <= 0, and ids and logprobs describe the same tokens, so when both
are read they have the same length. Anything else is the server's error (`TokenDataError`, which the
transports turn into a failed attempt of kind "server"), never a silent record: ids that cannot be matched
to their logprobs would mislead a trainer. Data that is simply absent stays absent (None: unknown).
"""

from __future__ import annotations

import math
from typing import Any

_ID_PREFIX = "token_id:"
MAX_VOCAB = 1 << 24  # no tokenizer has 16.7M entries: an id past it is not a token (when the engine gives no size)


class TokenDataError(ValueError):
    """Token data an engine sent that cannot be what it sampled or tokenised: the server's error."""


def checked_ids(raw: Any, where: str, *, vocab: int | None = None, text: str | None = None) -> list[int]:
    """`raw` as token ids: a list of whole numbers in [0, vocab), non-empty when `text` is; else TokenDataError."""
    if not isinstance(raw, list | tuple):
        raise TokenDataError(f"{where}: token ids are {type(raw).__name__}, not a list")
    bad = next((t for t in raw if type(t) is not int), None)
    if bad is not None:
        raise TokenDataError(f"{where}: token id {bad!r} is not a whole number")
    limit = vocab or MAX_VOCAB
    if raw and (min(raw) < 0 or max(raw) >= limit):
        worst = min(raw) if min(raw) < 0 else max(raw)
        raise TokenDataError(f"{where}: token id {worst} is outside the vocabulary (0..{limit - 1})")
    if text and not raw:
        raise TokenDataError(f"{where}: no token ids for {len(text)} characters of text")
    return list(raw)


def checked_logprobs(raw: Any, count: int, where: str) -> list[float]:
    """`raw` as one logprob per token: `count` numbers, none NaN or above 0; else TokenDataError."""
    if not isinstance(raw, list | tuple):
        raise TokenDataError(f"{where}: logprobs were asked for and none came back")
    out = []
    for x in raw:
        if isinstance(x, bool) or not isinstance(x, int | float) or math.isnan(x) or x > 1e-6:
            raise TokenDataError(f"{where}: logprob {x!r} is not a log-probability")
        out.append(float(x))
    if len(out) != count:
        raise TokenDataError(f"{where}: {len(out)} logprobs for {count} tokens")
    return out


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _ints(values: Any, where: str) -> list[int] | None:
    """Ids where the engine put them (None when it put none there); malformed ones are its error."""
    if values is None or (isinstance(values, list | tuple) and not values):
        return None
    return checked_ids(values, where)


def _entry_ids(entries: list[Any]) -> list[int] | None:
    """Ids carried by the logprob entries themselves: llama.cpp's `id`, or vLLM's `token_id:N` spelling."""
    ids = [_get(e, "id") for e in entries]
    if all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return ids
    tokens = [_get(e, "token") for e in entries]
    if all(isinstance(t, str) and t.startswith(_ID_PREFIX) for t in tokens):
        spelled = [t[len(_ID_PREFIX):] for t in tokens]
        if not all(t.isdigit() for t in spelled):
            raise TokenDataError(f"logprobs: a token spelled {_ID_PREFIX}N has no whole number N")
        return _ints([int(t) for t in spelled], "logprobs token_id:N")
    return None


def token_fields(choice: Any) -> dict[str, Any]:
    """{"logprobs": [float per generated token] | None, "token_ids": [int] | None} for one choice;
    TokenDataError when what the engine sent is malformed."""
    entries = _get(_get(choice, "logprobs"), "content") or []
    logprobs = checked_logprobs([_get(e, "logprob") for e in entries], len(entries), "logprobs") if entries else None
    extra = _get(choice, "provider_specific_fields") or {}
    token_ids = (_ints(_get(extra, "token_ids"), "token_ids") or _ints(_get(choice, "token_ids"), "token_ids")
                 or (_entry_ids(entries) if entries else None))
    if logprobs is not None and token_ids is not None and len(token_ids) != len(logprobs):
        raise TokenDataError(f"token_ids: {len(token_ids)} ids for {len(logprobs)} logprobs")
    return {"logprobs": logprobs, "token_ids": token_ids}
