"""A structlog processor that removes secrets from every event before it is rendered."""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import Any

_KEYLIKE = re.compile(r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")
_SECRET_FIELDS = re.compile(r"(api_?key|authorization|secret|token|password)$", re.I)
REDACTED = "[REDACTED]"


class Redactor:
    """Replaces known secret values anywhere in an event, and key-like strings by pattern."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = tuple(s for s in secrets if s and len(s) >= 4)

    def scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for secret in self.secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
            return _KEYLIKE.sub(REDACTED, value) if ("sk-" in value or "Bearer" in value) else value
        if isinstance(value, dict):
            return {k: REDACTED if isinstance(k, str) and _SECRET_FIELDS.search(k) and v else self.scrub(v)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub(v) for v in value]
        return value

    def __call__(self, logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        return self.scrub(dict(event))  # type: ignore[no-any-return]
