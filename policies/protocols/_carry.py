"""Tool-call arguments the wire can carry: checked when a reply is parsed, never later.

Python's json reads what the rest of the stack refuses (orjson on the world IPC and in the run
directory, UTF-8 on every HTTP request): a lone surrogate (`"\\ud800"`), an integer past 64 bits,
NaN, nesting hundreds deep, a value of many megabytes. Each is the agent's format error, told to it
in the tool result, so it never becomes an infrastructure error in the world, the expert or a record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from awm_runtime._interfaces import Malformed

# orjson's own depth limit is 255; far below it, nothing a real tool takes is this deep.
MAX_ARGUMENT_DEPTH = 64
MAX_ARGUMENT_BYTES = 1 << 20
_INT_MIN, _INT_MAX = -(1 << 63), (1 << 64) - 1  # what orjson (and SQLite, as unsigned or signed) carries


@dataclass(frozen=True, slots=True)
class ArgumentLimits:
    """How big and deep one call's arguments may be (`--max-argument-bytes` sets the size)."""

    max_bytes: int = MAX_ARGUMENT_BYTES
    max_depth: int = MAX_ARGUMENT_DEPTH


DEFAULT_LIMITS = ArgumentLimits()


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone UTF-16 surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}"
    return None


def _schema_bounds(schema: Any, key: str) -> tuple[float | None, float | None]:
    prop = schema.get("properties", {}).get(key) if isinstance(schema, dict) else None
    if not isinstance(prop, dict):
        return None, None
    low, high = prop.get("minimum"), prop.get("maximum")
    return (low if isinstance(low, int | float) else None), (high if isinstance(high, int | float) else None)


def _carried(args: dict[str, Any], limits: ArgumentLimits, schema: Any) -> bool:
    try:
        data = orjson.dumps(args)  # refuses lone surrogates, integers past 64 bits and 255-deep nesting
    except orjson.JSONEncodeError:
        return False
    if len(data) > limits.max_bytes or data.count(b"{") + data.count(b"[") > limits.max_depth:
        return False
    for key, value in args.items():
        if isinstance(value, int) and not isinstance(value, bool):
            low, high = _schema_bounds(schema, key)
            if (low is not None and value < low) or (high is not None and value > high):
                return False
    return bool(orjson.loads(data) == args)  # NaN and Infinity would arrive as null


def argument_problem(args: dict[str, Any], where: str, limits: ArgumentLimits = DEFAULT_LIMITS,
                     schema: Any = None) -> Malformed | None:
    """The format error that keeps `args` off the wire, or None when they can be carried.

    `schema` (the tool's flat input schema) adds each top-level integer's own minimum/maximum. Fast
    path: orjson carries them unchanged, within the size, and with fewer brackets than the depth
    limit. Otherwise one walk, without recursion (any depth is safe to inspect), says what is wrong."""
    if _carried(args, limits, schema):
        return None
    stack: list[tuple[Any, int, str | None]] = [(args, 1, None)]
    while stack:
        value, depth, top = stack.pop()
        if isinstance(value, str):
            why = _text_problem(value)
            if why:
                return Malformed("unencodable_text", f"{where}: an argument holds {why}, which no wire can carry; "
                                                     "write the text as valid Unicode")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            low, high = _schema_bounds(schema, top) if top is not None and depth == 2 else (None, None)
            if not _INT_MIN <= value <= _INT_MAX or (low is not None and value < low) or \
                    (high is not None and value > high):
                shown = str(value) if len(str(value)) <= 40 else f"{str(value)[:20]}… ({len(str(value))} digits)"
                bound = f"{low if low is not None else _INT_MIN}..{high if high is not None else _INT_MAX}"
                return Malformed("number_out_of_range", f"{where}: the integer {shown} is outside {bound}")
        elif isinstance(value, float):
            if not math.isfinite(value):
                return Malformed("number_out_of_range", f"{where}: {value} is not a JSON number")
        elif isinstance(value, dict | list):
            if depth > limits.max_depth:
                return Malformed("arguments_too_deep", f"{where}: the arguments nest deeper than "
                                                       f"{limits.max_depth} levels")
            if isinstance(value, dict):
                for k, v in value.items():
                    why = _text_problem(k) if isinstance(k, str) else None
                    if why:
                        return Malformed("unencodable_text", f"{where}: an argument name holds {why}")
                    stack.append((v, depth + 1, k if depth == 1 else top))
            else:
                stack.extend((v, depth + 1, top) for v in value)
    size = len(orjson.dumps(args))
    if size > limits.max_bytes:
        return Malformed("arguments_too_large", f"{where}: the arguments are {size:,} bytes, over the "
                                                f"{limits.max_bytes:,}-byte limit; pass less data per call")
    return None
