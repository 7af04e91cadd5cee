"""Each policy turn's prompt token ids, from the serving engine that ran it (never re-tokenised here).

- vLLM (`return_token_ids`): the reply carried `prompt_token_ids`; the message kept them in memory.
- llama.cpp's `llama-server`: `/apply-template` renders the chat request exactly as its chat endpoint
  does (same messages, tools and template kwargs), and `/tokenize` (special tokens added and parsed,
  as the chat endpoint tokenises) turns that text into the ids the model was fed.
"""

from __future__ import annotations

from typing import Any

import httpx

from awm_runtime._errors import ConfigError, ModelError
from awm_runtime.models import TokenDataError, checked_ids


def server_root(api_base: str | None) -> str:
    """llama-server's own endpoints sit beside its OpenAI-compatible /v1."""
    base = (api_base or "").rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


class LlamaCppTokens:
    """Prompt ids (and, for checks, text) from a llama-server, over loopback HTTP."""

    def __init__(self, api_base: str, *, timeout_s: float = 60.0) -> None:
        self.root = server_root(api_base)
        self._client = httpx.AsyncClient(timeout=timeout_s)

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            resp = await self._client.post(f"{self.root}{path}", json=body)
        except httpx.HTTPError as exc:
            raise ModelError(f"llama-server {self.root}{path}: {type(exc).__name__}: {exc}",
                             kind="connection", role="policy") from exc
        if resp.status_code == 404:
            raise ConfigError(f"{self.root} has no {path}: rollouts need the engine's own tokens; serve the policy "
                              "with llama.cpp's llama-server or with vLLM (a hosted_vllm/ model)")
        if resp.status_code >= 400:
            raise ModelError(f"llama-server {self.root}{path}: HTTP {resp.status_code}: {resp.text[:200]}",
                             kind="server", role="policy")
        try:
            data = resp.json()
        except ValueError as exc:
            raise ModelError(f"llama-server {self.root}{path}: not JSON", kind="server", role="policy") from exc
        if not isinstance(data, dict):
            raise ModelError(f"llama-server {self.root}{path}: not a JSON object", kind="server", role="policy")
        return data

    async def check(self) -> None:
        """Fail early, with a clear line, when the endpoint is not a llama-server."""
        await self._post("/tokenize", {"content": "ok"})

    async def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                         params: dict[str, Any]) -> list[int]:
        body: dict[str, Any] = {"messages": messages}
        if tools:
            body["tools"] = tools
        if params.get("chat_template_kwargs"):
            body["chat_template_kwargs"] = params["chat_template_kwargs"]
        text = (await self._post("/apply-template", body)).get("prompt")
        if not isinstance(text, str):
            raise ModelError(f"llama-server {self.root}/apply-template: no rendered prompt", kind="server",
                             role="policy")
        tokens = (await self._post("/tokenize", {"content": text, "add_special": True, "parse_special": True}))
        try:  # validated where it enters: whole numbers in the vocabulary, some for any text (models/_tokens.py)
            return checked_ids(tokens.get("tokens"), f"llama-server {self.root}/tokenize", text=text)
        except TokenDataError as exc:
            raise ModelError(str(exc), kind="server", role="policy") from exc

    async def detokenize(self, ids: list[int]) -> str:
        return str((await self._post("/detokenize", {"tokens": ids}))["content"])

    async def aclose(self) -> None:
        await self._client.aclose()
