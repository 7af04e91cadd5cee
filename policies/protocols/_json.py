"""Lenient JSON for tool calls: strict JSON first, then the near-JSON small models write.

Accepted repairs, each seen in real model output: control characters inside strings,
a ```json fence, single quotes and Python literals (True/None), trailing commas, stray
closing brackets or prose after a complete object. Not repaired: missing closing brackets, which
mean the reply was cut off and the call's intent is unknowable.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_LANG = re.compile(r"[\w-]*")
_DECODER = json.JSONDecoder(strict=False)
_WORDS = {"true": "True", "false": "False", "null": "None"}
_STRAY_CLOSERS = set("}] \t\r\n")


def unfence(text: str) -> str:
    """The inside of a ```lang … ``` fence (string ops, not a regex: replies can be huge)."""
    text = text.strip()
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    inner = text[3:-3]
    first, newline, rest = inner.partition("\n")
    if newline and _LANG.fullmatch(first.strip()):
        inner = rest
    return inner.strip()


def _pythonish(text: str) -> str:
    """Rewrite JSON-isms outside string literals so `ast.literal_eval` reads the text:
    true/false/null become Python names and trailing commas go. Strings are left intact."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif c.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_WORDS.get(word, word))
            i = j
        elif c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j >= n or text[j] not in "}]":
                out.append(c)
            i = j if j < n and text[j] in "}]" else i + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _jsonable(value: Any) -> Any:
    """Python literals that have a JSON form (tuples become lists); anything else is rejected."""
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("object keys must be strings")
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ValueError(f"{type(value).__name__} is not JSON")


def loads_lenient(text: str) -> Any:
    """JSON, or the near-JSON small models write. Raises ValueError when neither reads."""
    text = unfence(text)
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    except RecursionError:  # nested past Python's stack: no call is written like that on purpose
        raise ValueError("not valid JSON: nested too deep") from None
    try:
        return _jsonable(ast.literal_eval(_pythonish(text)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not valid JSON") from None


def loads_call(text: str) -> tuple[Any, bool]:
    """The JSON value that opens a <tool_call> body, and whether another call follows it.

    vLLM's hermes parser fails on a body holding two objects ("Extra data", vllm#17790) and on
    a stray extra brace; here the first object wins and a second one is reported.
    """
    text = unfence(text)
    try:
        return loads_lenient(text), False
    except ValueError:
        pass
    stripped = text.lstrip()
    try:
        value, end = _DECODER.raw_decode(stripped)
    except (json.JSONDecodeError, RecursionError):
        raise ValueError("not valid JSON") from None
    rest = stripped[end:].strip()
    # Stray closers or prose after a complete object leave the call unambiguous.
    return value, bool(rest) and rest[0] in "{[" and not set(rest) <= _STRAY_CLOSERS
