"""Read a conversation back the way a model would: which calls it made and what came back."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_THINK = re.compile(r"<think>.*?</think>", re.S)
_ERROR_PREFIXES = ("Error calling", "Input validation error", "Unknown tool")


@dataclass(slots=True)
class PastCall:
    name: str
    arguments: dict[str, Any]
    result: str = ""

    @property
    def failed(self) -> bool:
        # The world's error texts (fastapi-mcp / mcp): HTTP >= 400, schema validation, unknown tool.
        return self.result.startswith(_ERROR_PREFIXES) or "could not be executed" in self.result


def _text_calls(content: str) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for block in _TAG.findall(_THINK.sub("", content)):
        try:
            data = json.loads(block)
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        name, args = data.get("name", ""), data.get("arguments") or {}
        if name == "call_tool" and isinstance(args, dict):
            inner = args.get("arguments") or "{}"
            try:
                inner = json.loads(inner) if isinstance(inner, str) else inner
            except json.JSONDecodeError:
                inner = {}
            name, args = str(args.get("tool_name", "")), inner
        calls.append((str(name), args if isinstance(args, dict) else {}))
    return calls[:1]


def past_calls(messages: list[dict[str, Any]]) -> list[PastCall]:
    """Every executed call in order, paired with the result text that followed it."""
    calls: list[PastCall] = []
    by_id: dict[str, PastCall] = {}
    pending: PastCall | None = None
    for msg in messages:
        role, content = msg.get("role"), msg.get("content") or ""
        if role == "assistant":
            pending = None
            for tc in msg.get("tool_calls") or []:
                fn = tc.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {}
                call = PastCall(fn.get("name", ""), args if isinstance(args, dict) else {})
                calls.append(call)
                by_id[tc.get("id", "")] = call
            if not msg.get("tool_calls"):
                for name, args in _text_calls(content):
                    pending = PastCall(name, args)
                    calls.append(pending)
        elif role == "tool" and msg.get("tool_call_id") in by_id:
            by_id[msg["tool_call_id"]].result = content
        elif role in ("tool", "user") and pending is not None and not pending.result:
            pending.result = content
    return calls


def system_text(messages: list[dict[str, Any]]) -> str:
    return next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")


def first_user_text(messages: list[dict[str, Any]]) -> str:
    return next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
