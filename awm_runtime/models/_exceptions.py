"""Translate litellm/openai/httpx exceptions into ModelError kinds: the model boundary."""

from __future__ import annotations

import re
from typing import Any

from awm_runtime._errors import ModelError, ModelErrorKind
from awm_runtime.logs import redact
from awm_runtime.models._litellm import litellm

RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})


class AttemptError(ModelError):
    """One failed attempt, classified; the retry layer decides whether another follows."""

    def __init__(self, message: str, *, kind: ModelErrorKind, role: str = "", alias: str = "",
                 retry_after_s: float | None = None, detail: str = "") -> None:
        super().__init__(message, kind=kind, role=role, alias=alias)
        self.retry_after_s = retry_after_s
        self.detail = detail  # the provider's first line, redacted, without our prefix


def _caused_by_our_environment(exc: BaseException) -> bool:
    """litellm wraps local bugs (e.g. a missing module) as connection errors; retrying cannot help."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if isinstance(node, ImportError):
            return True
        node = node.__cause__ or node.__context__
    return "No module named" in str(exc)


_TIMEOUT_NAMES = frozenset({"APITimeoutError", "TimeoutException", "TimeoutError", "ServerTimeoutError"})
_CONNECTION_NAMES = frozenset({"APIConnectionError", "ConnectError", "NetworkError", "ClientConnectionError",
                               "ConnectionError"})


def _transport_failure(exc: BaseException) -> ModelErrorKind | None:
    """litellm reports a refused or dropped connection as a 500; the cause chain tells the truth."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        names = {c.__name__ for c in type(node).__mro__}
        if names & _TIMEOUT_NAMES:
            return "timeout"
        if names & _CONNECTION_NAMES:
            return "connection"
        node = node.__cause__ or node.__context__
    return None


def classify(exc: BaseException) -> ModelErrorKind:
    """The error class of a failed call; order matters (context overflow is a BadRequest)."""
    if _caused_by_our_environment(exc):
        return "fatal"
    if isinstance(getattr(exc, "status_code", None), int) and exc.status_code < 500:  # type: ignore[attr-defined]
        pass  # an HTTP answer: the status decides below
    elif kind := _transport_failure(exc):
        return kind
    ll = litellm()
    checks: list[tuple[Any, ModelErrorKind]] = [
        (ll.ContextWindowExceededError, "context"),
        (ll.ContentPolicyViolationError, "content_filter"),
        (ll.RateLimitError, "rate_limit"),
        (ll.AuthenticationError, "auth"),
        (ll.PermissionDeniedError, "auth"),
        (ll.NotFoundError, "not_found"),
        (ll.Timeout, "timeout"),
        (ll.BadRequestError, "bad_request"),
        (ll.UnprocessableEntityError, "bad_request"),
        (ll.InternalServerError, "server"),
        (ll.ServiceUnavailableError, "server"),
        (ll.APIConnectionError, "connection"),
    ]
    status = getattr(exc, "status_code", None)
    refused = isinstance(exc, ll.BadRequestError | ll.UnprocessableEntityError) or status in OVERFLOW_STATUSES
    if refused and is_context_overflow(_error_text(exc)):
        return "context"  # litellm knows OpenAI's and vLLM's wording, not llama.cpp's or TGI's: the text decides
    if refused and is_filtered(_error_text(exc)) and not isinstance(exc, ll.ContextWindowExceededError):
        return "content_filter"  # as the OpenAI-wire transport classes the same answer (kind_for_status)
    if status == 400 and is_bad_key(_error_text(exc)):
        return "auth"  # Gemini answers a wrong key with 400 INVALID_ARGUMENT
    if isinstance(status, int) and 400 <= status < 500 and is_spend_cap(_error_text(exc)):
        return "bad_request"  # a spent budget answers 429 on some versions: waiting a few seconds cannot help
    for cls, kind in checks:
        if isinstance(exc, cls):
            return kind
    if isinstance(status, int) and status >= 400:
        return kind_for_status(status, str(exc))
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError | OSError):
        return "connection"
    return "fatal"


# What servers answer when a request does not fit the model's context, as each one words it. The
# texts are in tests/awm_runtime/models/test_context_overflow.py, with the source of each.
_OVERFLOW = re.compile("|".join([
    r"exceed_context_size_error",  # llama.cpp: the error type of its HTTP 400
    r"exceeds? (?:the )?(?:available )?context size",  # llama.cpp: request (N tokens) exceeds the available ...
    r"is larger than the max context size",  # llama.cpp, older builds
    r"maximum context length",  # OpenAI, vLLM (three wordings), SGLang, DeepSeek, OpenRouter
    r"context_length_exceeded",  # OpenAI's error code
    r"is longer than the (?:maximum model length|model'?s context length)",  # vLLM, SGLang, Together
    r"reduce the length of the (?:input )?messages",  # vLLM, Groq
    r"`inputs` tokens \+ `max_new_tokens` must be <=",  # TGI (HTTP 422)
    r"`inputs` must have less than \d+ tokens",  # TGI
    r"exceeds the context window",  # OpenAI Responses
    r"input tokens exceed the configured limit",  # OpenAI
    r"prompt is too long",  # Anthropic: prompt is too long: N tokens > M maximum
    r"input length and `?max_tokens`? exceed context limit",  # Anthropic: input + max_tokens over the window
    r"input token count \(?\d+\)? exceeds the maximum number of tokens",  # Gemini (400 INVALID_ARGUMENT)
    r"context window (?:exceeds|exceeded|is full)",
    r"model_context_window_exceeded",
    r"too many tokens",
]))
OVERFLOW_STATUSES = frozenset({400, 413, 422})
_FILTER_HINTS = ("content_filter", "content management policy", "content_policy")


_BAD_KEY = re.compile(r"api_key_invalid|api key not valid")
# A spent budget or spending cap: the litellm proxy's `budget_exceeded` (HTTP 422 since 1.8x, 400 or 429
# before), Anthropic's monthly cap (429 rate_limit_error with error_code enforced_spend_limit_reached).
_SPEND_CAP = re.compile(r"budget has been exceeded|budget_exceeded|enforced_spend_limit_reached")


def is_spend_cap(text: str) -> bool:
    """Whether an error answer says a budget or spending cap is used up (no retry can succeed soon)."""
    return bool(_SPEND_CAP.search(text.lower()))


def is_bad_key(text: str) -> bool:
    """Whether a 400 answer says the key is wrong (Gemini: `API key not valid`, reason `API_KEY_INVALID`)."""
    return bool(_BAD_KEY.search(text.lower()))


def is_filtered(text: str) -> bool:
    """Whether an error answer says a content filter refused the request or the reply."""
    lowered = text.lower()
    return any(h in lowered for h in _FILTER_HINTS)


def is_context_overflow(text: str) -> bool:
    """Whether an error answer says the request does not fit the model's context window."""
    return bool(_OVERFLOW.search(text.lower()))


def _error_text(exc: BaseException) -> str:
    """The provider's words, wherever litellm or openai left them: message, body, response text."""
    parts = [str(exc)]
    for attr in ("message", "body", "response"):
        value = getattr(exc, attr, None)
        if attr == "response":
            value = getattr(value, "text", None) if value is not None else None
        if value:
            parts.append(str(value))
    return "\n".join(parts)


def kind_for_status(status: int, text: str = "") -> ModelErrorKind:
    """The class of an HTTP error answer, for transports that see the status and body themselves."""
    if 400 <= status < 500 and is_spend_cap(text):
        return "bad_request"
    if status == 429:
        return "rate_limit"
    if status in OVERFLOW_STATUSES and is_context_overflow(text):
        return "context"
    if status == 400 and is_bad_key(text):
        return "auth"
    if status >= 500:
        return "server"
    if status == 408:
        return "timeout"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if is_filtered(text):
        return "content_filter"
    return "bad_request"


def parse_retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def retry_delay_s(text: str) -> float | None:
    """Seconds from a Gemini 429's RetryInfo detail (`"retryDelay": "36s"`): its Retry-After, in the body."""
    match = _RETRY_DELAY.search(text)
    return float(match.group(1)) if match else None


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header, wherever litellm left the response headers, else from a Gemini
    RetryInfo detail in the body."""
    candidates: list[Any] = []
    response = getattr(exc, "response", None)
    if response is not None:
        candidates.append(getattr(response, "headers", None))
    candidates.append(getattr(exc, "litellm_response_headers", None))
    for headers in candidates:
        if not headers:
            continue
        seconds = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
        if seconds is not None:
            return seconds
    return retry_delay_s(_error_text(exc))


def to_attempt_error(exc: BaseException, *, role: str, alias: str, secrets: tuple[str, ...] = ()) -> AttemptError:
    """Translate any exception of one call into a classified, redacted AttemptError."""
    kind = classify(exc)
    detail = redact((str(exc).strip().splitlines() or [type(exc).__name__])[0][:300], secrets)
    if not detail:
        detail = type(exc).__name__
    return AttemptError(f"{role} model {alias!r} failed ({kind}): {detail}", kind=kind, role=role, alias=alias,
                        retry_after_s=retry_after_s(exc) if kind == "rate_limit" else None, detail=detail)
