"""Token-level data from the three shapes endpoints return it in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from awm_runtime.models._tokens import MAX_VOCAB, TokenDataError, token_fields


def entry(token: str, logprob: float) -> dict[str, object]:
    return {"token": token, "logprob": logprob, "bytes": None, "top_logprobs": []}


def test_openai_logprobs_without_ids() -> None:
    choice = {"logprobs": {"content": [entry("Hi", -0.1), entry("!", -2.0)]}}
    assert token_fields(choice) == {"logprobs": [-0.1, -2.0], "token_ids": None}


def test_vllm_token_ids_under_provider_specific_fields_win() -> None:
    choice = SimpleNamespace(logprobs=SimpleNamespace(content=[SimpleNamespace(token="token_id:7", logprob=-1.0)]),
                             provider_specific_fields={"token_ids": [9]})
    assert token_fields(choice) == {"logprobs": [-1.0], "token_ids": [9]}


def test_token_ids_spelled_in_logprob_tokens() -> None:
    choice = {"logprobs": {"content": [entry("token_id:151657", -0.5), entry("token_id:13", 0.0)]}}
    assert token_fields(choice)["token_ids"] == [151657, 13]


def test_mixed_spellings_are_not_ids_and_nothing_is_invented() -> None:
    assert token_fields({"logprobs": {"content": [entry("token_id:1", 0.0), entry("x", 0.0)]}})["token_ids"] is None
    assert token_fields({}) == {"logprobs": None, "token_ids": None}
    assert token_fields(SimpleNamespace(logprobs=None)) == {"logprobs": None, "token_ids": None}
    assert token_fields({"token_ids": []}) == {"logprobs": None, "token_ids": None}  # absent: unknown


def llama_cpp_entry(token_id: int, token: str, logprob: float) -> dict[str, object]:
    """One entry as llama.cpp's llama-server sends it (tests/fixtures/llama_cpp/chat_logprobs_stop.json)."""
    return {"id": token_id, "token": token, "bytes": list(token.encode()), "logprob": logprob,
            "top_logprobs": [{"id": token_id, "token": token, "bytes": list(token.encode()), "logprob": logprob}]}


def test_llama_cpp_ids_ride_on_each_logprob_entry() -> None:
    choice = {"logprobs": {"content": [llama_cpp_entry(57, "I", -1.37), llama_cpp_entry(2, "", -1.74)]}}
    assert token_fields(choice) == {"logprobs": [-1.37, -1.74], "token_ids": [57, 2]}


def test_malformed_token_data_is_the_servers_error_never_a_silent_record() -> None:
    """Issue 51: ids of another length than the logprobs, ids that are not whole numbers in the vocabulary and
    logprobs that are not log-probabilities raise TokenDataError (the transports fail the attempt, "server")."""
    choice = SimpleNamespace(logprobs=SimpleNamespace(content=[SimpleNamespace(token="a", logprob=-1.0)]),
                             provider_specific_fields={"token_ids": [9, 10]})
    with pytest.raises(TokenDataError, match="token_ids: 2 ids for 1 logprobs"):
        token_fields(choice)
    for bad, says in ((["a"], "token id 'a' is not a whole number"), ([-4], "token id -4 is outside"),
                      ([MAX_VOCAB], "is outside the vocabulary"), ([1.5], "token id 1.5 is not a whole number"),
                      ("12", "token ids are str, not a list")):
        with pytest.raises(TokenDataError, match=says):
            token_fields({"token_ids": bad})
    with pytest.raises(TokenDataError, match="logprob None is not a log-probability"):
        token_fields({"logprobs": {"content": [entry("a", None)]}})  # type: ignore[arg-type]
    with pytest.raises(TokenDataError, match="token_id:N has no whole number"):
        token_fields({"logprobs": {"content": [entry("token_id:x", -0.1)]}})
    partial = {"logprobs": {"content": [llama_cpp_entry(5, "a", -0.5), entry("b", -0.5)]}}
    assert token_fields(partial) == {"logprobs": [-0.5, -0.5], "token_ids": None}  # no ids offered: none kept
    ids_only = {"token_ids": [1, 2, 3]}  # no logprobs asked: the ids stand alone
    assert token_fields(ids_only) == {"logprobs": None, "token_ids": [1, 2, 3]}
