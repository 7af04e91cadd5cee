"""Translate litellm/openai/httpx exceptions into ModelError kinds: the model boundary."""

from __future__ import annotations

import re
from typing import Any

from awm_runtime._errors import ModelError, ModelErrorKind
from awm_runtime.models._litellm import litellm

RETRYABLE: frozenset[str] = frozenset({"rate_limit", "server", "timeout", "connection"})
_KEYLIKE = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")


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


def classify(exc: BaseException) -> ModelErrorKind:
    """The error class of a failed call; order matters (context overflow is a BadRequest)."""
    if _caused_by_our_environment(exc):
        return "fatal"
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
    for cls, kind in checks:
        if isinstance(exc, cls):
            return kind
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limit"
        if status >= 500:
            return "server"
        if status in (401, 403):
            return "auth"
        if status == 404:
            return "not_found"
        if 400 <= status < 500:
            return "bad_request"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionError | OSError):
        return "connection"
    return "fatal"


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header, wherever litellm left the response headers."""
    candidates: list[Any] = []
    response = getattr(exc, "response", None)
    if response is not None:
        candidates.append(getattr(response, "headers", None))
    candidates.append(getattr(exc, "litellm_response_headers", None))
    for headers in candidates:
        if not headers:
            continue
        value = headers.get("retry-after") or headers.get("Retry-After")
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except (TypeError, ValueError):
            continue
    return None


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    return _KEYLIKE.sub("[REDACTED]", text)


def to_model_error(exc: BaseException, *, role: str, alias: str, secrets: tuple[str, ...] = (),
                   attempts: int = 1) -> ModelError:
    kind = classify(exc)
    first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    message = redact(f"{role} model {alias!r} failed ({kind}){tried}: {first_line}", secrets)
    return ModelError(message, kind=kind, role=role, alias=alias)
