"""The serving engines token in, token out speaks to (models/_tito.py): llama.cpp's llama-server and vLLM.

Each renders a conversation with its own chat template, tokenises, and generates from a token-id prompt.
The template delta after a reply is found with a sentinel carrying a random nonce drawn for each render,
which must appear in the rendered text exactly once, so text the world or the agent wrote cannot imitate
it. Token data is validated where it enters (models/_tokens.py): ids are whole numbers within the
vocabulary (llama.cpp says its size), non-empty for text, as many as the logprobs asked for; anything else
is the server's error (`EngineFailure` of kind "server").
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from typing import Any

import orjson

from awm_runtime.models._exceptions import kind_for_status
from awm_runtime.models._tokens import TokenDataError, checked_ids, checked_logprobs

SENTINEL = "AWM7TITO7REPLY7SENTINEL"  # one plain word no template rewrites; each render adds a random nonce
# What llama.cpp's /completion and vLLM's /v1/completions take from the alias's params (OpenAI names).
_SAMPLING = ("temperature", "top_p", "top_k", "min_p", "seed", "stop", "presence_penalty", "frequency_penalty",
             "repetition_penalty", "repeat_penalty")


@dataclass(frozen=True, slots=True)
class Generation:
    text: str
    ids: list[int]
    logprobs: list[float] | None
    finish_reason: str | None


class EngineFailure(Exception):
    """A failed engine request, classified (`kind`) for the retry layer."""

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
            raise EngineFailure("timeout", f"{path}: no answer in {timeout_s:g}s") from exc
        except aiohttp.ClientError as exc:
            raise EngineFailure("connection", f"{path}: {type(exc).__name__}: {exc}") from exc
        text = raw[:2000].decode("utf-8", "replace")
        if status == 404:
            raise EngineFailure("fatal", f"{self.root} has no {path} (HTTP 404): tito needs llama.cpp's llama-server "
                                    "or vLLM")
        if status >= 400:
            raise EngineFailure(kind_for_status(status, text), f"{path}: HTTP {status}: {text[:300]}")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise EngineFailure("server", f"{path}: not JSON: {text[:120]}") from exc

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


def render_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """The chat template's keyword arguments a request asks for (`chat_template_kwargs`), as engines take them."""
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
            why = "dropped the last reply" if not found else f"repeated the last reply {found} times"
            raise EngineFailure("fatal", f"the chat template {why}, so no delta can follow it")
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
            raise EngineFailure("server", "/completion: the answer is not a JSON object")
        text = data.get("content")
        if text is not None and not isinstance(text, str):
            raise EngineFailure("server", f"/completion: content is {type(text).__name__}, not text")
        raw = data.get("tokens")
        probs = data.get("completion_probabilities")
        logprobs: list[float] | None = None
        if params.get("logprobs"):
            if not isinstance(probs, list) or not all(isinstance(p, dict) for p in probs):
                raise EngineFailure("server", "/completion: logprobs were asked for (n_probs) and none came back")
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
            raise EngineFailure("server", "/tokenize: the answer is not a JSON object")
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
            raise EngineFailure("fatal", "the chat template renders the turns before the last reply differently once "
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
            raise EngineFailure("server", "/v1/completions: the answer has no choices")
        choice = choices[0]
        text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise EngineFailure("server", f"/v1/completions: text is {type(text).__name__}, not text")
        if choice.get("token_ids") is None:
            raise EngineFailure("fatal", "/v1/completions returned no token_ids: tito needs vLLM >= 0.10.2")
        # vLLM's token_ids end with the EOS id when the model stopped on it (its text leaves it out)
        tokens = _ids(choice.get("token_ids"), "/v1/completions", self.vocab, text)
        if not tokens:
            raise EngineFailure("server", "/v1/completions: no token ids, not even the end of the turn")
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


def _ids(raw: Any, where: str, vocab: int | None, text: str | None) -> list[int]:
    try:
        return checked_ids(raw, where, vocab=vocab, text=text)
    except TokenDataError as exc:
        raise EngineFailure("server", str(exc)) from exc


def _logprobs(raw: Any, count: int, where: str) -> list[float]:
    try:
        return checked_logprobs(raw, count, where)
    except TokenDataError as exc:
        raise EngineFailure("server", str(exc)) from exc
