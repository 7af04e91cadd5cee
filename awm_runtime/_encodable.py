"""Text every writer can carry: lone UTF-16 surrogates become U+FFFD, and the replacements are counted.

Python's json turns `"\\ud800"` from a model, an expert or a judge into a str that UTF-8 (and so
orjson, HTTP bodies and the run directory) refuses. Such text is the agent's doing; writing it must
never fail a record, an event or a request.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def encodable_text(text: str) -> tuple[str, int]:
    """`text` with each lone surrogate replaced by U+FFFD, and how many were replaced."""
    if text.isascii():
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def encodable(value: Any) -> tuple[Any, int]:
    """A copy of a JSON-like value (dicts, lists, tuples, strings; keys too) every string of which
    encodes as UTF-8, and the number of characters replaced. Untouched parts are shared, not copied."""
    if isinstance(value, str):
        return encodable_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        total = 0
        for k, v in value.items():
            if isinstance(k, str):
                k, n = encodable_text(k)
                total += n
            v, n = encodable(v)
            total += n
            out[k] = v
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        items = []
        total = 0
        for v in value:
            v, n = encodable(v)
            items.append(v)
            total += n
        return (type(value)(items) if isinstance(value, tuple) else items, total) if total else (value, 0)
    return value, 0


def dumps_encodable(value: Any, *, option: int | None = None, default: Any = None) -> tuple[bytes, int]:
    """orjson.dumps(value), and when a string in it is not UTF-8 (a lone surrogate) the same with each
    such character replaced by U+FFFD; returns the bytes and the number replaced. Costs nothing extra
    on text that encodes."""
    try:
        return orjson.dumps(value, option=option, default=default), 0
    except orjson.JSONEncodeError as exc:
        if "surrogates not allowed" not in str(exc) and "UTF-8" not in str(exc):
            raise
    clean, replaced = encodable(value)
    return orjson.dumps(clean, option=option, default=default), replaced
