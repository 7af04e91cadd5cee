"""integrations/_engine_tokens.py against the toy llama-server: prompt ids as the engine gives them, validated
where they enter (issue 51): a malformed /tokenize or /apply-template answer is the server's error."""

from __future__ import annotations

from typing import Any

import pytest

from awm_runtime import ModelError
from awm_runtime.integrations._engine_tokens import LlamaCppTokens
from awm_runtime.testing import ChatML, FakeLlamaServer

CHAT = [{"role": "user", "content": "hi"}]


async def test_prompt_ids_are_the_engines_render_tokenised() -> None:
    with FakeLlamaServer() as server:
        tokens = LlamaCppTokens(server.url)
        try:
            ids = await tokens.prompt_ids(CHAT, None, {})
            assert ChatML.decode(ids) == ChatML.render(CHAT)
            assert await tokens.detokenize(ids) == ChatML.render(CHAT)
        finally:
            await tokens.aclose()


@pytest.mark.parametrize(("path", "fields", "says"), [
    ("/tokenize", {"tokens": [1, -2]}, "/tokenize: token id -2 is outside the vocabulary"),
    ("/tokenize", {"tokens": ["1"]}, "/tokenize: token id '1' is not a whole number"),
    ("/tokenize", {"tokens": []}, "/tokenize: no token ids for"),
    ("/tokenize", {"tokens": None}, "/tokenize: token ids are NoneType, not a list"),
    ("/apply-template", {"prompt": None}, "/apply-template: no rendered prompt"),
])
async def test_a_malformed_answer_is_the_servers_error(path: str, fields: dict[str, Any], says: str) -> None:
    def tamper(at: str, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, **fields} if at == path else body

    with FakeLlamaServer(tamper=tamper) as server:
        tokens = LlamaCppTokens(server.url)
        try:
            with pytest.raises(ModelError) as info:
                await tokens.prompt_ids(CHAT, None, {})
        finally:
            await tokens.aclose()
    assert info.value.kind == "server" and says in str(info.value), str(info.value)
