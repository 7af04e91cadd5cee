"""A toy serving engine's token fields on top of any responder: vLLM's `return_token_ids` shape.

`ChatML` renders messages as ChatML and tokenises bytes (id = byte + 16; `<|im_start|>` = 1,
`<|im_end|>` = 2), so a test can decode any id sequence back to text. `with_token_ids(responder)`
answers like the wrapped responder, plus what vLLM adds when asked for `return_token_ids` and
`logprobs`: the prompt's ids (`prompt_token_ids`), the generated ids (`choices[0].token_ids`,
ending with `<|im_end|>`) and one logprob per generated id. `tokenize_body` and `completions_body` are the
same engine's token-in, token-out endpoints (vLLM's `/tokenize` and `/v1/completions`), which
`FakeOpenAI(token_engine=ChatMLEngine())` serves.
"""

from __future__ import annotations

import json
import math
from typing import Any

from awm_runtime.testing._server import Reply, Responder, completion_body

IM_START, IM_END, OFFSET = 1, 2, 16
_SPECIAL = {"<|im_start|>": IM_START, "<|im_end|>": IM_END}


class ChatML:
    """The chat template and byte tokenizer of the toy engine."""

    @staticmethod
    def render_assistant(content: str | None, tool_calls: list[dict[str, Any]] | None) -> str:
        text = content or ""
        for call in tool_calls or []:
            fn = call.get("function") or {}
            name = json.dumps(fn.get("name"))
            text += f'<tool_call>{{"name": {name}, "arguments": {fn.get("arguments")}}}</tool_call>'
        return text

    @classmethod
    def render(cls, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
               generation_prompt: bool = True) -> str:
        out = []
        for i, m in enumerate(messages):
            body = (cls.render_assistant(m.get("content"), m.get("tool_calls")) if m["role"] == "assistant"
                    else str(m.get("content") or ""))
            if i == 0 and m["role"] == "system" and tools:
                body += "\n<tools>" + json.dumps(tools) + "</tools>"
            out.append(f"<|im_start|>{m['role']}\n{body}<|im_end|>\n")
        return "".join(out) + ("<|im_start|>assistant\n" if generation_prompt else "")

    @classmethod
    def render_open(cls, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """vLLM's `continue_final_message`: the last message left open (no closing marker)."""
        return cls.render(messages, tools, generation_prompt=False).removesuffix("<|im_end|>\n")

    @staticmethod
    def parse(text: str) -> list[dict[str, Any]]:
        """The messages of a rendered conversation (the toy engine reads its prompt back as a chat)."""
        out = []
        for part in text.split("<|im_start|>")[1:]:
            role, _, body = part.partition("\n")
            content = body.split("<|im_end|>", 1)[0]
            if role == "system" and "\n<tools>" in content:
                content = content.split("\n<tools>", 1)[0]
            out.append({"role": role, "content": content})
        if out and out[-1]["role"] == "assistant" and not out[-1]["content"]:
            out.pop()  # the generation prompt
        return out

    @staticmethod
    def encode(text: str) -> list[int]:
        ids: list[int] = []
        i = 0
        while i < len(text):
            special = next((s for s in _SPECIAL if text.startswith(s, i)), None)
            if special:
                ids.append(_SPECIAL[special])
                i += len(special)
            else:
                ids += [b + OFFSET for b in text[i].encode("utf-8")]
                i += 1
        return ids

    @staticmethod
    def decode(ids: list[int]) -> str:
        out, pending = [], bytearray()
        for t in ids:
            if t < OFFSET:
                out.append(pending.decode("utf-8", "replace"))
                pending.clear()
                out.append(next(s for s, v in _SPECIAL.items() if v == t))
            else:
                pending.append(t - OFFSET)
        out.append(pending.decode("utf-8", "replace"))
        return "".join(out)


def tokenize_body(request: dict[str, Any], max_model_len: int) -> dict[str, Any]:
    """vLLM's POST /tokenize: chat messages rendered by the template, or a prompt string, as ids."""
    if "messages" in request:
        messages, tools = request["messages"], request.get("tools")
        if request.get("continue_final_message"):
            text = ChatML.render_open(messages, tools)
        else:
            text = ChatML.render(messages, tools, generation_prompt=request.get("add_generation_prompt", True))
    else:
        text = str(request.get("prompt", ""))
    ids = ChatML.encode(text)
    return {"count": len(ids), "max_model_len": max_model_len, "tokens": ids}


def completions_body(request: dict[str, Any], reply: Reply, prompt: list[int]) -> dict[str, Any]:
    """vLLM's /v1/completions answer to a token-id prompt: the reply's text as generated ids ending with
    `<|im_end|>` (cut at max_tokens: `length`), the text without it, and, when asked, `token_ids`,
    `prompt_token_ids` (`return_token_ids`) and one logprob per id (`logprobs`)."""
    generated = [*ChatML.encode(ChatML.render_assistant(reply.content, reply.tool_calls)), IM_END]
    finish = "stop"
    limit = request.get("max_tokens")
    if isinstance(limit, int) and len(generated) > limit:
        generated, finish = generated[:limit], "length"
    text = ChatML.decode([t for t in generated if t != IM_END])
    choice: dict[str, Any] = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish,
                              "stop_reason": None}
    if request.get("logprobs") is not None:
        lps = [-math.log1p(t % 7) for t in generated]
        choice["logprobs"] = {"tokens": [f"token_id:{t}" for t in generated], "token_logprobs": lps,
                              "top_logprobs": [{f"token_id:{t}": lp} for t, lp in zip(generated, lps, strict=True)],
                              "text_offset": list(range(len(generated)))}
    if request.get("return_token_ids"):
        choice["token_ids"], choice["prompt_token_ids"] = generated, prompt
    return {"id": "cmpl-loop", "object": "text_completion", "created": 0, "model": request.get("model", "fake"),
            "choices": [choice], "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(generated),
                                            "total_tokens": len(prompt) + len(generated)}}


class ChatMLEngine:
    """The toy engine's token-in, token-out endpoints, for `FakeOpenAI(token_engine=ChatMLEngine())`."""

    def tokenize(self, body: dict[str, Any], max_model_len: int) -> dict[str, Any]:
        return tokenize_body(body, max_model_len)

    def detokenize(self, ids: list[int]) -> str:
        return ChatML.decode(ids)

    def read_prompt(self, ids: list[int]) -> list[dict[str, Any]]:
        return ChatML.parse(ChatML.decode(ids))

    def completion(self, body: dict[str, Any], reply: Reply, prompt: list[int]) -> dict[str, Any]:
        return completions_body(body, reply, prompt)


def with_token_ids(inner: Responder) -> Responder:
    def respond(request: dict[str, Any]) -> Reply:
        reply = inner(request)
        if reply.status != 200 or reply.body is not None:
            return reply
        body = completion_body(request, reply)
        if request.get("return_token_ids"):
            prompt = ChatML.encode(ChatML.render(request.get("messages", []), request.get("tools")))
            generated = [*ChatML.encode(ChatML.render_assistant(reply.content, reply.tool_calls)), IM_END]
            body["prompt_token_ids"] = prompt
            body["choices"][0]["token_ids"] = generated
            if request.get("logprobs"):
                body["choices"][0]["logprobs"] = {"content": [
                    {"token": f"token_id:{t}", "logprob": -math.log1p(t % 7), "bytes": None, "top_logprobs": []}
                    for t in generated]}
            body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"] = len(prompt), len(generated)
        return Reply(body=json.dumps(body), status=200)

    return respond
