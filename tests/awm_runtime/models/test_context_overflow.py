"""Context overflow as real servers word it: classified `context` (never retried) through both transports.

Each body is what the server sends, with the source of its wording. A context overflow ends an episode
as the agent's `incomplete` (end_reason context_overflow), so a miss here turns an agent failure into
an infrastructure error, and a false hit the other way round: the negatives matter as much.
"""

from __future__ import annotations

import json

import pytest

from awm_runtime import ModelError
from awm_runtime.models import ModelClient, ModelConfig, reset_limiters
from awm_runtime.models._exceptions import is_context_overflow, kind_for_status
from awm_runtime.testing import FakeOpenAI, Reply

KEY = "k-overflow-0007"
HI = [{"role": "user", "content": "hi"}]


def _openai(message: str, **extra: object) -> str:
    return json.dumps({"error": {"message": message, **extra}})


# (status, body, where the wording comes from)
OVERFLOWS = [
    # llama.cpp tools/server (server-context.cpp): ERROR_TYPE_EXCEED_CONTEXT_SIZE -> HTTP 400, with the counts.
    (400, json.dumps({"error": {"code": 400, "message": "request (15462 tokens) exceeds the available context size "
                                "(8192 tokens), try increasing it", "type": "exceed_context_size_error",
                                "n_prompt_tokens": 15462, "n_ctx": 8192}}), "llama.cpp server"),
    (400, json.dumps({"error": {"code": 400, "message": "the request exceeds the available context size, try "
                                "increasing it", "type": "invalid_request_error"}}), "llama.cpp, older builds"),
    (400, json.dumps({"error": {"code": 400, "message": "input (9000 tokens) is larger than the max context size "
                                "(8192 tokens). skipping", "type": "exceed_context_size_error"}}),
     "llama.cpp, older builds"),
    (400, json.dumps({"error": {"code": 400, "message": "context exceeded", "type": "exceed_context_size_error",
                                "n_prompt_tokens": 9000, "n_ctx": 8192}}), "llama.cpp: the type alone"),
    # vLLM entrypoints/openai serving (three wordings over its releases) and its input processor.
    (400, _openai("This model's maximum context length is 8192 tokens. However, you requested 15462 tokens (14462 "
                  "in the messages, 1000 in the completion). Please reduce the length of the messages or "
                  "completion.", type="BadRequestError", param=None, code=400), "vLLM serving_engine"),
    (400, json.dumps({"object": "error", "message": "This model's maximum context length is 8192 tokens. However, "
                      "your request has 9000 input tokens. Please reduce the length of the input messages.",
                      "type": "BadRequestError", "param": None, "code": 400}), "vLLM serving_engine"),
    (400, _openai("'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length "
                  "is 8192 tokens and your request has 5000 input tokens (4096 > 8192 - 5000).",
                  type="BadRequestError", code=400), "vLLM serving_engine, current"),
    (400, _openai("The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure "
                  "that `max_model_len` is no smaller than the number of text tokens.", type="BadRequestError",
                  code=400), "vLLM input processor"),
    # SGLang tokenizer_manager._validate_one_request.
    (400, json.dumps({"object": "error", "message": "The input (9000 tokens) is longer than the model's context "
                      "length (8192 tokens).", "type": "BadRequestError", "param": None, "code": 400}), "SGLang"),
    (400, json.dumps({"object": "error", "message": "Requested token count exceeds the model's maximum context "
                      "length of 8192 tokens. You requested a total of 9100 tokens: 8100 tokens from the input "
                      "messages and 1000 tokens for the completion. Please reduce the number of tokens in the "
                      "input messages or the completion to fit within the limit.", "type": "BadRequestError",
                      "param": None, "code": 400}), "SGLang"),
    # text-generation-inference router validation (HTTP 422, error_type validation).
    (422, json.dumps({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: "
                      "15462 `inputs` tokens and 1000 `max_new_tokens`", "error_type": "validation"}), "TGI"),
    (422, json.dumps({"error": "Input validation error: `inputs` must have less than 8192 tokens. Given: 15462",
                      "error_type": "validation"}), "TGI"),
    # OpenAI (chat completions; the Responses API wording) and Anthropic through a proxy.
    (400, _openai("This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 "
                  "tokens. Please reduce the length of the messages.", type="invalid_request_error",
                  param="messages", code="context_length_exceeded"), "OpenAI"),
    (400, _openai("Your input exceeds the context window of this model. Please adjust your input and try again.",
                  type="invalid_request_error", code="context_length_exceeded"), "OpenAI Responses"),
    (400, _openai("prompt is too long: 205000 tokens > 200000 maximum", type="invalid_request_error"), "Anthropic"),
    # Anthropic's Messages API (invalid_request_error) and Gemini's generateContent (INVALID_ARGUMENT), native bodies.
    (400, json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: "
                      "208310 tokens > 200000 maximum"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}), "Anthropic"),
    (400, json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "input length and "
                      "`max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or "
                      "`max_tokens` and try again"}}), "Anthropic, prompt plus max_tokens"),
    (400, json.dumps({"error": {"code": 400, "message": "The input token count (1054016) exceeds the maximum number "
                                "of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}), "Gemini"),
    (413, _openai("Request too large: the input (300000 tokens) is longer than the model's context length "
                  "(262144 tokens)."), "a gateway's 413"),
]
NOT_OVERFLOWS = [
    (400, _openai("max_tokens must be at least 1, got 0.", type="BadRequestError"), "bad_request"),
    (400, _openai("Invalid value for 'tool_choice': 'required' is not supported.", type="invalid_request_error"),
     "bad_request"),
    (422, json.dumps({"error": "Input validation error: `temperature` must be strictly positive",
                      "error_type": "validation"}), "bad_request"),
    (429, _openai("Rate limit reached for gpt-4.1 on tokens per min (TPM): too many tokens, please slow down.",
                  code="rate_limit_exceeded"), "rate_limit"),
    # Anthropic's request-size limit is bytes, not tokens; its monthly spend cap is a 429 no wait can cure.
    (413, json.dumps({"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the "
                      "maximum allowed number of bytes."}}), "bad_request"),
    (429, json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "You have reached your "
                      "monthly spend cap.", "details": {"error_code": "enforced_spend_limit_reached"}}}),
     "bad_request"),
    (429, json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "This request would exceed "
                      "the rate limit for your organization of 50 requests per minute."}}), "rate_limit"),
    # Gemini answers a wrong key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), quota with 429.
    (400, json.dumps({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                "status": "INVALID_ARGUMENT", "details": [{"reason": "API_KEY_INVALID"}]}}), "auth"),
    (429, json.dumps({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                                "status": "RESOURCE_EXHAUSTED"}}), "rate_limit"),
    (503, json.dumps({"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                                "status": "UNAVAILABLE"}}), "server"),
    # The litellm proxy (ProxyException bodies): a spent budget (422 since the 1.8x line, 429 before) is final;
    # its router's "No deployments available" (a deployment's rpm/tpm used up) is a 429 worth waiting for.
    (422, _openai("Budget has been exceeded! Key=sk-...abcd Current cost: 0.52, Max budget: 0.5",
                  type="budget_exceeded", param=None, code="422"), "bad_request"),
    (429, _openai("Budget has been exceeded! Current cost: 0.52, Max budget: 0.5", type="budget_exceeded",
                  param=None, code="429"), "bad_request"),
    (429, _openai("litellm.RateLimitError: No deployments available for selected model, Try again in 60 seconds. "
                  "Passed model=smollm2.", type="None", param=None, code="429"), "rate_limit"),
    # llama.cpp answers a prompt longer than its physical batch with a 500: a server setting, not the context.
    (500, json.dumps({"error": {"code": 500, "message": "input (9000 tokens) is too large to process. increase the "
                                "physical batch size", "type": "server_error"}}), "server"),
]


@pytest.mark.parametrize(("status", "body", "source"), OVERFLOWS, ids=[s for _, _, s in OVERFLOWS])
def test_every_known_wording_is_an_overflow(status: int, body: str, source: str) -> None:
    assert is_context_overflow(body) and kind_for_status(status, body) == "context", source


@pytest.mark.parametrize(("status", "body", "kind"), NOT_OVERFLOWS, ids=[k for _, _, k in NOT_OVERFLOWS])
def test_look_alikes_are_not(status: int, body: str, kind: str) -> None:
    assert kind_for_status(status, body) == kind


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OVERFLOW_KEY", KEY)
    reset_limiters()


@pytest.mark.parametrize("transport", ["http", "litellm"])
async def test_real_bodies_over_the_wire_are_context_and_never_retried(transport: str) -> None:
    cases = [*OVERFLOWS, *((s, b, k) for s, b, k in NOT_OVERFLOWS if k in ("bad_request",))]
    if transport == "litellm":
        # litellm (1.106) re-sends a 422 once and then returns None instead of raising, so TGI's 422s cannot be
        # classified behind it; `auto` sends a self-hosted openai/ alias (TGI's OpenAI route) over http instead.
        cases = [c for c in cases if c[0] != 422]
    script = [Reply(status=status, body=body) for status, body, _ in cases]
    with FakeOpenAI(key=KEY, script=script, max_lifetime_s=120) as server:
        config = ModelConfig(alias="loop", model="openai/fake-model", api_base=server.url, api_key_env="OVERFLOW_KEY",
                             timeout_s=10, backoff_s=0.01, transport=transport)  # type: ignore[arg-type]
        client = ModelClient(config, "policy")
        kinds = []
        for _ in cases:
            with pytest.raises(ModelError) as info:
                await client.complete(HI)
            kinds.append(info.value.kind)
    expected = ["context" if c in OVERFLOWS else "bad_request" for c in cases]
    assert kinds == expected, [(k, s) for k, (_, _, s) in zip(kinds, cases, strict=True)]
    assert len(server.requests) == len(cases)  # one attempt each: no retries
