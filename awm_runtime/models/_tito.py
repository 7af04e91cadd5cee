"""Token in, token out: a policy transport that keeps each episode's exact token sequence.

With `tito = true` on an alias, the policy's calls never go through a chat endpoint. The episode is one
token sequence, built by the serving engine and never re-tokenised here:

- the first prompt, rendered once by the engine's own chat template and tokenised by it (llama.cpp:
  `/apply-template` then `/tokenize`; vLLM: `/tokenize` with the messages);
- after each reply, the ids the engine sampled, as they came back;
- then what the world, the expert and the nudges add, rendered as a *template delta*: the conversation
  is rendered with the last reply replaced by a sentinel, and the delta is what the template puts after
  the sentinel (the reply's closing markers, the new messages, the next generation prompt), tokenised
  by the engine alone. The sentinel carries a random nonce drawn for each render, and must appear in the
  rendered text exactly once: text the world or the agent writes cannot imitate it. When the reply
  already ended with the token that closes the turn (the model sampled `<|im_end|>`), that token is not
  repeated.

The next request sends the sequence itself as the prompt: llama.cpp `/completion` with a token-array
prompt (`return_tokens`, `n_probs`), vLLM `/v1/completions` with token-id prompts (`return_token_ids`).
The reply's text is the engine's decoding of its ids, parsed by the protocol's parser as before.

Token data is validated where it enters (models/_tokens.py): ids are whole numbers within the engine's
vocabulary (llama.cpp says its size), non-empty when the text is, and as many as the logprobs when they
were asked for; anything else fails the attempt as the server's error (kind "server"), never a record.

The sequence travels with the transcript: each policy reply's message keeps the prompt tokens its turn
added (`prompt_delta_ids`) and its generated ids, and the chat policy marks the last reply of the wire
messages with the sequence through it (`with_sequence`). A transcript whose last reply has no sequence
(recorded without tito) is refused, never re-rendered. Context is exact: a sequence that leaves no room
in the window fails as a context overflow before it is sent, and max_tokens is cut to the room left.
The engines themselves (llama.cpp, vLLM) and the checks on what they send are in models/_engines.py.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from awm_runtime._types import Message, Usage
from awm_runtime.models._engines import (
    SENTINEL,
    Engine,
    EngineFailure,
    LlamaCpp,
    Vllm,
    engine_kind,
    render_kwargs,
)
from awm_runtime.models._exceptions import AttemptError
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._route import Route

__all__ = ["SENTINEL", "SEQUENCE_KEY", "TITO", "Tito", "delta_ids", "engine_kind", "with_sequence"]

SEQUENCE_KEY = "_awm_token_sequence"  # on the last policy reply of the wire messages: the tokens through it


def with_sequence(wire: list[dict[str, Any]], messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Mark the last policy reply of `wire` (one dict per message of `messages`) with the episode's exact
    token sequence through that reply: every reply's `prompt_delta_ids` then its `token_ids`, in order."""
    sequence: list[int] = []
    last = -1
    for k, m in enumerate(messages):
        if m.source != "policy":
            continue
        if m.prompt_delta_ids is None or m.token_ids is None:
            sequence, last = [], k  # a reply with no tokens: the transport refuses what follows it
            continue
        sequence += [*m.prompt_delta_ids, *m.token_ids]
        last = k
    if last < 0:
        return wire
    out = list(wire)
    out[last] = {**wire[last], SEQUENCE_KEY: sequence}
    return out


def delta_ids(reply: ModelReply, wire: list[dict[str, Any]]) -> list[int] | None:
    """The prompt tokens this turn added after the previous reply's ids (the whole prompt on the first turn),
    given the wire messages the reply answered (marked by `with_sequence`)."""
    if reply.prompt_token_ids is None:
        return None
    before = next((len(m[SEQUENCE_KEY]) for m in reversed(wire) if m.get(SEQUENCE_KEY) is not None), 0)
    return reply.prompt_token_ids[before:]


class Tito:
    """The transport: renders the delta, sends the sequence, returns the reply with its exact prompt ids."""

    def __init__(self) -> None:
        self._engines: dict[tuple[str, str, str | None], Engine] = {}
        self._kinds: dict[str, str | None] = {}

    async def engine(self, route: Route, timeout_s: float) -> Engine:
        base = route.api_base or ""
        key = route.api_key()
        held = self._engines.get((base, route.model, key))
        if held is not None:
            return held
        if base not in self._kinds:
            self._kinds[base] = await engine_kind(base, route.model, key, timeout_s) if base else None
        kind = self._kinds[base]
        if kind is None:
            del self._kinds[base]  # perhaps not up yet: asked again on the next attempt
            raise EngineFailure("fatal", f"{base or 'no api_base'} is neither a llama-server nor vLLM, so it cannot "
                                    "take token-id prompts (tito = true)")
        served = route.model.split("/", 1)[1] if "/" in route.model else route.model
        engine: Engine = LlamaCpp(base, key) if kind == "llama.cpp" else Vllm(base, key, served)
        if isinstance(engine, LlamaCpp):
            await engine.read_window(timeout_s)
        self._engines[(base, route.model, key)] = engine
        return engine

    async def prompt_ids(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                         timeout_s: float) -> list[int]:
        """The exact prompt the next request would send for `messages` (marked by `with_sequence`)."""
        try:
            return await self._prompt(await self.engine(route, timeout_s), messages, params, timeout_s)
        except EngineFailure as exc:
            raise _error(route, exc.kind, exc.detail) from exc

    async def _prompt(self, engine: Engine, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> list[int]:
        reply = next((k for k in range(len(messages) - 1, -1, -1) if messages[k].get("role") == "assistant"), -1)
        clean = [{k: v for k, v in m.items() if k != SEQUENCE_KEY} for m in messages]
        kwargs = render_kwargs(params)
        if reply < 0:
            return await engine.prompt(clean, kwargs, timeout_s)
        sequence = messages[reply].get(SEQUENCE_KEY)
        if not sequence:
            raise EngineFailure("fatal", "the transcript's last reply carries no token sequence (it was not sampled "
                                    "with tito = true), and tito never re-renders the past")
        added = await engine.delta(clean, reply, kwargs, timeout_s)
        if added and sequence[-1] == added[0]:
            added = added[1:]  # the reply ended with the token that closes its turn: the template's copy goes
        return [*sequence, *added]

    async def attempt(self, route: Route, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> ModelReply:
        started = time.perf_counter()
        try:
            engine = await self.engine(route, timeout_s)
            ids = await self._prompt(engine, messages, params, timeout_s)
            max_tokens = params.get("max_tokens") or params.get("max_completion_tokens")
            if engine.window is not None:
                room = engine.window - len(ids)
                if room <= 0:
                    raise EngineFailure("context", f"the episode's token sequence is {len(ids):,} tokens, which fills "
                                              f"the {engine.window:,}-token context window ({engine.name})")
                max_tokens = min(int(max_tokens), room) if max_tokens else room
            gen = await engine.generate(ids, params, int(max_tokens) if max_tokens else None, timeout_s)
        except EngineFailure as exc:
            raise _error(route, exc.kind, exc.detail) from exc
        return ModelReply(content=gen.text, finish_reason=gen.finish_reason,
                          usage=Usage(calls=1, prompt_tokens=len(ids), completion_tokens=len(gen.ids)),
                          latency_s=time.perf_counter() - started, logprobs=gen.logprobs, token_ids=gen.ids,
                          prompt_token_ids=ids)


def _error(route: Route, kind: Any, detail: str) -> AttemptError:
    from awm_runtime.logs import redact

    key = route.api_key()
    detail = redact(detail.splitlines()[0][:300] if detail else str(kind), (key,) if key else ())
    return AttemptError(f"{route.role} model {route.alias!r} failed ({kind}): tito: {detail}", kind=kind,
                        role=route.role, alias=route.alias, detail=detail)


TITO = Tito()
