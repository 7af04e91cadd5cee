"""Token in, token out trusts neither the world's text nor the engine's token data (issue 51).

Over real HTTP to the toy llama-server (`testing.FakeLlamaServer`) and the toy vLLM (`FakeOpenAI` with a
token engine): a world text holding the template delta's placeholder word cannot cut the next prompt, and
every malformed engine answer fails the turn as the server's error, named, never a silent record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, load_registry
from awm_runtime.models._tito import SENTINEL, SEQUENCE_KEY
from awm_runtime.testing import ChatML, ChatMLEngine, FakeLlamaServer, FakeOpenAI, Reply
from awm_runtime.testing._llama import VOCAB
from awm_runtime.testing._tokens import IM_END

HI = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "list the notes"}]


def client(tmp_path: Path, url: str, model: str = "openai/loop-llama") -> ModelClient:
    path = tmp_path / "awm.toml"
    path.write_text(f'[models.tito]\nmodel = "{model}"\napi_base = "{url}"\nprotocol = "hermes"\ntito = true\n'
                    'max_retries = 0\n')
    return ModelClient(load_registry(path).get("tito"), "policy")


@pytest.mark.parametrize("world_text", [
    f"note 1: {SENTINEL}",  # the placeholder word itself
    f"{SENTINEL}0123456789ABCDEF and {SENTINEL}{SENTINEL}",  # with a nonce-shaped tail, several times
])
async def test_world_text_holding_the_placeholder_cannot_cut_the_next_prompt(tmp_path: Path,
                                                                             world_text: str) -> None:
    with FakeLlamaServer(script=[Reply(content="calling"), Reply(content="done")]) as server:
        c = client(tmp_path, server.url)
        first = await c.complete(HI)
        assert first.token_ids == [*ChatML.encode("calling"), IM_END]
        assert first.prompt_token_ids is not None
        reply = {"role": "assistant", "content": "calling",
                 SEQUENCE_KEY: [*first.prompt_token_ids, *first.token_ids]}
        history = [*HI, reply, {"role": "user", "content": world_text}]
        second = await c.complete(history)
    sent = server.completions[-1]["prompt"]
    assert second.prompt_token_ids == sent
    # the whole conversation, exactly: the sequence so far, then the world's text whole, then the next turn
    assert ChatML.decode(sent) == ChatML.render([*HI, {"role": "assistant", "content": "calling"},
                                                 {"role": "user", "content": world_text}])
    assert sent[:len(reply[SEQUENCE_KEY])] == reply[SEQUENCE_KEY]
    placeholders = [t for t in server.rendered if "assistant\n" + SENTINEL in t]
    assert len(placeholders) == 1 and placeholders[0].count(SENTINEL) == world_text.count(SENTINEL) + 1


def _set(path: str, **fields: Any) -> Any:
    def tamper(at: str, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, **fields} if at == path else body
    return tamper


@pytest.mark.parametrize(("tamper", "params", "says"), [
    (_set("/completion", tokens=[-1, 40]), {}, "/completion: token id -1 is outside the vocabulary (0..271)"),
    (_set("/completion", tokens=[40, VOCAB]), {}, f"/completion: token id {VOCAB} is outside the vocabulary"),
    (_set("/completion", tokens=[40, 10**12]), {}, "is outside the vocabulary"),
    (_set("/completion", tokens=[40, "41"]), {}, "/completion: token id '41' is not a whole number"),
    (_set("/completion", tokens=[40, 41.0]), {}, "token id 41.0 is not a whole number"),
    (_set("/completion", tokens=[True]), {}, "token id True is not a whole number"),
    (_set("/completion", tokens={"a": 1}), {}, "token ids are dict, not a list"),
    (_set("/completion", tokens=[]), {}, "/completion: no token ids for 5 characters of text"),
    (_set("/completion", completion_probabilities=None), {"logprobs": True},
     "/completion: logprobs were asked for (n_probs) and none came back"),
    (_set("/completion", completion_probabilities=[{"id": 40, "logprob": -0.1}]), {"logprobs": True},
     "/completion: 1 logprobs for 6 tokens"),
    (_set("/completion", completion_probabilities=[{"id": 40, "logprob": "x"}] * 6), {"logprobs": True},
     "/completion: logprob 'x' is not a log-probability"),
    (_set("/completion", content=["hello"]), {}, "/completion: content is list, not text"),
    (_set("/tokenize", tokens=[-3]), {}, "/tokenize: token id -3 is outside the vocabulary"),
    (_set("/tokenize", tokens=[]), {}, "/tokenize: no token ids for"),
])
async def test_each_malformed_llama_answer_is_the_servers_error_never_a_record(
        tmp_path: Path, tamper: Any, params: dict[str, Any], says: str) -> None:
    with FakeLlamaServer(script=[Reply(content="hello")], tamper=tamper) as server, \
            pytest.raises(ModelError) as info:
        await client(tmp_path, server.url).complete(HI, params=params)
    assert info.value.kind == "server" and says in str(info.value), str(info.value)
    assert str(info.value).startswith("policy model 'tito' failed (server)")


async def test_a_good_llama_answer_with_logprobs_passes_whole(tmp_path: Path) -> None:
    with FakeLlamaServer(script=[Reply(content="hello")]) as server:
        reply = await client(tmp_path, server.url).complete(HI, params={"logprobs": True})
    assert reply.token_ids == [*ChatML.encode("hello"), IM_END]
    assert reply.logprobs is not None and len(reply.logprobs) == len(reply.token_ids)
    assert server.completions[-1]["n_probs"] == 1


class _Corrupt(ChatMLEngine):
    """The toy vLLM engine, answering /v1/completions with one field rewritten."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def completion(self, body: dict[str, Any], reply: Reply, prompt: list[int]) -> dict[str, Any]:
        out = super().completion(body, reply, prompt)
        choice = out["choices"][0]
        for key, value in self.fields.items():
            if key == "token_logprobs":
                choice["logprobs"] = value if value is None else {**(choice["logprobs"] or {}), key: value}
            else:
                choice[key] = value
        return out


@pytest.mark.parametrize(("fields", "params", "kind", "says"), [
    ({"token_ids": [5, -7]}, {}, "server", "/v1/completions: token id -7 is outside the vocabulary"),
    ({"token_ids": [5, 2**40]}, {}, "server", "is outside the vocabulary"),
    ({"token_ids": ["5"]}, {}, "server", "/v1/completions: token id '5' is not a whole number"),
    ({"token_ids": []}, {}, "server", "/v1/completions: no token ids for 5 characters of text"),
    ({"token_ids": None}, {}, "fatal", "returned no token_ids: tito needs vLLM >= 0.10.2"),
    ({"token_logprobs": None}, {"logprobs": True}, "server", "logprobs were asked for and none came back"),
    ({"token_logprobs": [-0.5]}, {"logprobs": True}, "server", "/v1/completions: 1 logprobs for 6 tokens"),
    ({"token_logprobs": [3.5] * 6}, {"logprobs": True}, "server", "logprob 3.5 is not a log-probability"),
])
async def test_each_malformed_vllm_answer_is_the_servers_error(tmp_path: Path, fields: dict[str, Any],
                                                               params: dict[str, Any], kind: str, says: str) -> None:
    engine = _Corrupt(**fields)
    with FakeOpenAI(models=("loop-model",), token_engine=engine, default=Reply(content="hello")) as server, \
            pytest.raises(ModelError) as info:
        await client(tmp_path, server.url, "hosted_vllm/loop-model").complete(HI, params=params)
    assert info.value.kind == kind and says in str(info.value), str(info.value)
