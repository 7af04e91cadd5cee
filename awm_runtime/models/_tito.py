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
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from awm_runtime._types import Message, Usage
from awm_runtime.models._exceptions import AttemptError, kind_for_status
from awm_runtime.models._reply import ModelReply
from awm_runtime.models._route import Route
from awm_runtime.models._tokens import TokenDataError, checked_ids, checked_logprobs

SEQUENCE_KEY = "_awm_token_sequence"  # on the last policy reply of the wire messages: the tokens through it
SENTINEL = "AWM7TITO7REPLY7SENTINEL"  # one plain word no template rewrites; each render adds a random nonce
# What llama.cpp's /completion and vLLM's /v1/completions take from the alias's params (OpenAI names).
_SAMPLING = ("temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty",
             "repetition_penalty", "repeat_penalty")


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


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    ids: list[int]
    logprobs: list[float] | None
    finish_reason: str | None


class _Failure(Exception):
    def __init__(self, kind: Any, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class Engine:
    """One serving engine's endpoints, over the shared aiohttp session of this event loop."""

    name = "engine"

    def __init__(self, api_base: str, key: str | None) -> None:
        base = api_base.rstrip("/")
        self.v1 = base
        self.root = base.removesuffix("/v1")
        self.headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        self.window: int | None = None
        self.vocab: int | None = None  # the tokenizer's size, where the engine says (ids at or past it are bad)

    async def post(self, path: str, body: dict[str, Any], timeout_s: float, *, root: bool = True) -> Any:
        import aiohttp

        from awm_runtime.models._http import _session

        url = f"{self.root if root else self.v1}{path}"
        try:
            async with _session().post(url, data=orjson.dumps(body), headers=self.headers,
                                       timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                raw, status = await resp.read(), resp.status
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise _Failure("timeout", f"{path}: no answer in {timeout_s:g}s") from exc
        except aiohttp.ClientError as exc:
            raise _Failure("connection", f"{path}: {type(exc).__name__}: {exc}") from exc
        text = raw[:2000].decode("utf-8", "replace")
        if status == 404:
            raise _Failure("fatal", f"{self.root} has no {path} (HTTP 404): tito needs llama.cpp's llama-server "
                                    "or vLLM")
        if status >= 400:
            raise _Failure(kind_for_status(status, text), f"{path}: HTTP {status}: {text[:300]}")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _Failure("server", f"{path}: not JSON: {text[:120]}") from exc

    async def prompt(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], timeout_s: float) -> list[int]:
        """The whole prompt of `messages`, rendered with the generation prompt and tokenised by the engine."""
        raise NotImplementedError

    async def delta(self, messages: list[dict[str, Any]], reply: int, kwargs: dict[str, Any],
                    timeout_s: float) -> list[int]:
        """What the template puts after message `reply` (an assistant reply), to the generation prompt."""
        raise NotImplementedError

    async def generate(self, ids: list[int], params: dict[str, Any], max_tokens: int | None,
                       timeout_s: float) -> Generation:
        raise NotImplementedError

    async def read_window(self, timeout_s: float) -> None:
        """Learn the context window a request may fill, where the engine says."""


def fresh_sentinel() -> str:
    """A sentinel for one render: a plain word with a random nonce, which no text written before can hold."""
    return f"{SENTINEL}{secrets.token_hex(8).upper()}"


def _sentinel_at(messages: list[dict[str, Any]], reply: int, sentinel: str) -> list[dict[str, Any]]:
    return [*messages[:reply], {"role": "assistant", "content": sentinel}, *messages[reply + 1:]]


def _render_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    kwargs = params.get("chat_template_kwargs")
    return {"chat_template_kwargs": kwargs} if kwargs else {}


class LlamaCpp(Engine):
    """llama.cpp's llama-server: /apply-template, /tokenize, /completion with a token-array prompt."""

    name = "llama.cpp"

    async def _tokenize(self, text: str, *, add_special: bool, timeout_s: float) -> list[int]:
        data = await self.post("/tokenize", {"content": text, "add_special": add_special, "parse_special": True},
                               timeout_s)
        return _ids(data.get("tokens") if isinstance(data, dict) else data, "/tokenize", self.vocab, text)

    async def _render(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], timeout_s: float) -> str:
        return str((await self.post("/apply-template", {"messages": messages, **kwargs}, timeout_s))["prompt"])

    async def prompt(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], timeout_s: float) -> list[int]:
        # as the chat endpoint tokenises a rendered prompt: special tokens added and parsed
        return await self._tokenize(await self._render(messages, kwargs, timeout_s), add_special=True,
                                    timeout_s=timeout_s)

    async def delta(self, messages: list[dict[str, Any]], reply: int, kwargs: dict[str, Any],
                    timeout_s: float) -> list[int]:
        sentinel = fresh_sentinel()
        text = await self._render(_sentinel_at(messages, reply, sentinel), kwargs, timeout_s)
        found = text.count(sentinel)
        if found != 1:
            raise _Failure("fatal", "the chat template dropped the last reply, so no delta can follow it" if not found
                           else f"the chat template repeated the last reply {found} times, so no delta can follow it")
        at = text.index(sentinel)
        return await self._tokenize(text[at + len(sentinel):], add_special=False, timeout_s=timeout_s)

    async def read_window(self, timeout_s: float) -> None:
        import aiohttp

        from awm_runtime.models._http import _session

        try:
            async with _session().get(f"{self.root}/props", headers=self.headers,
                                      timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                props = orjson.loads(await resp.read()) if resp.status == 200 else {}
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
            return
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") if isinstance(props, dict) else None
        self.window = n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
        try:  # llama-server's /v1/models says the vocabulary's size (meta.n_vocab)
            async with _session().get(f"{self.v1}/models", headers=self.headers,
                                      timeout=aiohttp.ClientTimeout(total=timeout_s)) as resp:
                listing = orjson.loads(await resp.read()) if resp.status == 200 else {}
        except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
            return
        data = listing.get("data") if isinstance(listing, dict) else None
        meta = (data[0].get("meta") or {}) if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        n_vocab = meta.get("n_vocab") if isinstance(meta, dict) else None
        self.vocab = n_vocab if isinstance(n_vocab, int) and not isinstance(n_vocab, bool) and n_vocab > 0 else None

    async def generate(self, ids: list[int], params: dict[str, Any], max_tokens: int | None,
                       timeout_s: float) -> Generation:
        body: dict[str, Any] = {"prompt": ids, "return_tokens": True, "cache_prompt": True,
                                **{k: params[k] for k in _SAMPLING if k in params}}
        if max_tokens is not None:
            body["n_predict"] = max_tokens
        if params.get("logprobs"):
            body["n_probs"] = int(params.get("top_logprobs") or 1)
        data = await self.post("/completion", body, timeout_s)
        if not isinstance(data, dict):
            raise _Failure("server", "/completion: the answer is not a JSON object")
        text = data.get("content")
        if text is not None and not isinstance(text, str):
            raise _Failure("server", f"/completion: content is {type(text).__name__}, not text")
        raw = data.get("tokens")
        probs = data.get("completion_probabilities")
        logprobs: list[float] | None = None
        if params.get("logprobs"):
            if not isinstance(probs, list) or not all(isinstance(p, dict) for p in probs):
                raise _Failure("server", "/completion: logprobs were asked for (n_probs) and none came back")
            if not raw:
                raw = [p.get("id") for p in probs]
        # `tokens` ends with the end-of-generation id when the model sampled it (stop_type "eos")
        tokens = _ids(raw if raw is not None else [], "/completion", self.vocab, text)
        if params.get("logprobs"):
            logprobs = _logprobs([p.get("logprob") for p in probs or []], len(tokens), "/completion")
        finish = "length" if data.get("stop_type") == "limit" else "stop"
        return Generation(text or "", tokens, logprobs, finish)


class Vllm(Engine):
    """vLLM: /tokenize with chat messages, /v1/completions with token-id prompts and `return_token_ids`."""

    name = "vLLM"

    def __init__(self, api_base: str, key: str | None, served: str) -> None:
        super().__init__(api_base, key)
        self.served = served

    async def _tokenize(self, body: dict[str, Any], timeout_s: float) -> list[int]:
        data = await self.post("/tokenize", {"model": self.served, **body}, timeout_s)
        if not isinstance(data, dict):
            raise _Failure("server", "/tokenize: the answer is not a JSON object")
        if isinstance(data.get("max_model_len"), int):
            self.window = data["max_model_len"]
        rendered = "messages" if body.get("messages") else None  # a chat always renders to some text
        return _ids(data.get("tokens"), "/tokenize", self.vocab, rendered)

    async def prompt(self, messages: list[dict[str, Any]], kwargs: dict[str, Any], timeout_s: float) -> list[int]:
        return await self._tokenize({"messages": messages, "add_generation_prompt": True, **kwargs}, timeout_s)

    async def delta(self, messages: list[dict[str, Any]], reply: int, kwargs: dict[str, Any],
                    timeout_s: float) -> list[int]:
        marked = _sentinel_at(messages, reply, fresh_sentinel())
        whole, upto = await asyncio.gather(
            self._tokenize({"messages": marked, "add_generation_prompt": True, **kwargs}, timeout_s),
            self._tokenize({"messages": marked[:reply + 1], "add_generation_prompt": False,
                            "continue_final_message": True, **kwargs}, timeout_s))
        if whole[:len(upto)] != upto:
            raise _Failure("fatal", "the chat template renders the turns before the last reply differently once "
                                    "more messages follow, so no delta can follow it")
        return whole[len(upto):]

    async def generate(self, ids: list[int], params: dict[str, Any], max_tokens: int | None,
                       timeout_s: float) -> Generation:
        body: dict[str, Any] = {"model": self.served, "prompt": ids, "return_token_ids": True,
                                **{k: params[k] for k in _SAMPLING if k in params}}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if params.get("logprobs"):
            body["logprobs"] = int(params.get("top_logprobs") or 1)
        data = await self.post("/completions", body, timeout_s, root=False)
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise _Failure("server", "/v1/completions: the answer has no choices")
        choice = choices[0]
        text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise _Failure("server", f"/v1/completions: text is {type(text).__name__}, not text")
        if choice.get("token_ids") is None:
            raise _Failure("fatal", "/v1/completions returned no token_ids: tito needs vLLM >= 0.10.2")
        # vLLM's token_ids end with the EOS id when the model stopped on it (its text leaves it out)
        tokens = _ids(choice.get("token_ids"), "/v1/completions", self.vocab, text)
        if not tokens:
            raise _Failure("server", "/v1/completions: no token ids, not even the end of the turn")
        logprobs: list[float] | None = None
        if params.get("logprobs"):
            entries = choice.get("logprobs")
            raw = entries.get("token_logprobs") if isinstance(entries, dict) else None
            if isinstance(raw, list):  # vLLM leaves a logprob it could not compute as null
                raw = [0.0 if x is None else x for x in raw]
            logprobs = _logprobs(raw, len(tokens), "/v1/completions")
        return Generation(text or "", tokens, logprobs, choice.get("finish_reason"))


async def engine_kind(api_base: str, model: str, key: str | None, timeout_s: float = 10.0) -> str | None:
    """'llama.cpp' or 'vLLM' when the endpoint can take token prompts, else None (a hosted API, say)."""
    import aiohttp

    if model.startswith("hosted_vllm/"):
        return "vLLM"
    probe = LlamaCpp(api_base, key)
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
            async with session.get(f"{probe.root}/props", headers=probe.headers) as resp:
                props = orjson.loads(await resp.read()) if resp.status == 200 else None
            if isinstance(props, dict) and "default_generation_settings" in props:
                return "llama.cpp"
            async with session.post(f"{probe.root}/tokenize", headers=probe.headers,
                                    data=orjson.dumps({"model": model.split("/", 1)[-1], "prompt": "ok"})) as resp:
                data = orjson.loads(await resp.read()) if resp.status == 200 else None
            if isinstance(data, dict) and isinstance(data.get("max_model_len"), int):
                return "vLLM"
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
        return None
    return None


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
            raise _Failure("fatal", f"{base or 'no api_base'} is neither a llama-server nor vLLM, so it cannot "
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
        except _Failure as exc:
            raise _error(route, exc.kind, exc.detail) from exc

    async def _prompt(self, engine: Engine, messages: list[dict[str, Any]], params: dict[str, Any],
                      timeout_s: float) -> list[int]:
        reply = next((k for k in range(len(messages) - 1, -1, -1) if messages[k].get("role") == "assistant"), -1)
        clean = [{k: v for k, v in m.items() if k != SEQUENCE_KEY} for m in messages]
        kwargs = _render_kwargs(params)
        if reply < 0:
            return await engine.prompt(clean, kwargs, timeout_s)
        sequence = messages[reply].get(SEQUENCE_KEY)
        if not sequence:
            raise _Failure("fatal", "the transcript's last reply carries no token sequence (it was not sampled "
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
                    raise _Failure("context", f"the episode's token sequence is {len(ids):,} tokens, which fills "
                                              f"the {engine.window:,}-token context window ({engine.name})")
                max_tokens = min(int(max_tokens), room) if max_tokens else room
            gen = await engine.generate(ids, params, int(max_tokens) if max_tokens else None, timeout_s)
        except _Failure as exc:
            raise _error(route, exc.kind, exc.detail) from exc
        return ModelReply(content=gen.text, finish_reason=gen.finish_reason,
                          usage=Usage(calls=1, prompt_tokens=len(ids), completion_tokens=len(gen.ids)),
                          latency_s=time.perf_counter() - started, logprobs=gen.logprobs, token_ids=gen.ids,
                          prompt_token_ids=ids)


def _ids(raw: Any, where: str, vocab: int | None, text: str | None) -> list[int]:
    try:
        return checked_ids(raw, where, vocab=vocab, text=text)
    except TokenDataError as exc:
        raise _Failure("server", str(exc)) from exc


def _logprobs(raw: Any, count: int, where: str) -> list[float]:
    try:
        return checked_logprobs(raw, count, where)
    except TokenDataError as exc:
        raise _Failure("server", str(exc)) from exc


def _error(route: Route, kind: Any, detail: str) -> AttemptError:
    from awm_runtime.logs import redact

    key = route.api_key()
    detail = redact(detail.splitlines()[0][:300] if detail else str(kind), (key,) if key else ())
    return AttemptError(f"{route.role} model {route.alias!r} failed ({kind}): tito: {detail}", kind=kind,
                        role=route.role, alias=route.alias, detail=detail)


TITO = Tito()
