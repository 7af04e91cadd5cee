"""Recorded episodes in each protocol, written as a run directory (episodes.jsonl + tools.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from awm_runtime.export import RunSource
from awm_runtime.logs import EPISODES, TOOLS

ASK = {"question": "stuck", "context": "404"}
BAD = {"note_id": 999}
GOOD = {"title": "Old"}
ADVICE = '{"plan": [{"tool": "list_notes", "args": {"title": "Old"}, "purpose": "find it"}]}'
NUDGE = "The last tool call returned an error. If you are stuck, call ask_expert."
TOOLS_ID = "sha256:tiny"
TOOL_SCHEMAS = [
    {"type": "function", "function": {"name": n, "description": f"{n} tool",
                                      "parameters": {"type": "object", "properties": {}}}}
    for n in ("delete_note", "list_notes", "ask_expert")
]


def native(name: str, args: dict[str, Any], turn: int, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "source": "policy", "turn": turn,
            "tool_calls": [{"id": f"call_{turn - 1}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}], **extra}


def tagged(protocol: str, name: str, args: dict[str, Any], turn: int, **extra: Any) -> dict[str, Any]:
    payload = ({"name": "call_tool", "arguments": {"tool_name": name, "arguments": json.dumps(args)}}
               if protocol == "awm" else {"name": name, "arguments": args})
    return {"role": "assistant", "content": f"<think>hmm</think><tool_call>{json.dumps(payload)}</tool_call>",
            "source": "policy", "turn": turn, **extra}


def result(protocol: str, text: str, turn: int, source: str = "world", **extra: Any) -> dict[str, Any]:
    if protocol == "native":
        return {"role": "tool", "content": text, "source": source, "turn": turn, "tool_call_id": f"call_{turn - 1}",
                "name": "x", **extra}
    return {"role": "user", "content": f"Tool response:\n{text}", "source": source, "turn": turn, **extra}


def episode(protocol: str, **fields: Any) -> dict[str, Any]:
    def call(n: str, a: dict[str, Any], t: int, **x: Any) -> dict[str, Any]:
        return native(n, a, t, **x) if protocol == "native" else tagged(protocol, n, a, t, **x)

    messages = [
        {"role": "system", "content": "You operate Tiny Notes.", "source": "system", "turn": 0},
        {"role": "user", "content": "Delete my note titled 'Old'.", "source": "system", "turn": 0},
        call("delete_note", BAD, 1),
        result(protocol, "Error calling delete_note. Status code: 404.", 1, tool_error=True),
        {"role": "user", "content": NUDGE, "source": "nudge", "turn": 1},
        call("ask_expert", ASK, 2),
        result(protocol, ADVICE, 2, source="expert"),
        call("list_notes", GOOD, 3, token_ids=[5, 6, 7], logprobs=[-0.5, -0.1, -0.2]),
        result(protocol, '{"notes": [{"id": 1}]}', 3),
        {"role": "assistant", "content": "Deleted.", "source": "policy", "turn": 4, "token_ids": [1, 2],
         "logprobs": [-0.1, -0.2]},
    ]
    base = {"episode_id": f"e-{protocol}", "run_id": "r", "arm": "main", "scenario": "tiny_notes", "task_idx": 1,
            "repeat": 0, "task": "Delete my note titled 'Old'.", "outcome": "complete", "verdict": "complete",
            "reward": 1.3, "ask_style": "recovery", "messages": messages, "tools_id": TOOLS_ID,
            "policy": {"alias": f"p-{protocol}", "model": "test/p", "protocol": protocol},
            "expert": {"alias": "oracle", "model": "oracle"}, "reward_components": {"table": "try-first"},
            "usage": {"policy": {"calls": 4, "prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.0}},
            "expert_answers": [{"turn": 2, "answered_by": "oracle", "latency_s": 0.01, "fallback": False}]}
    return {**base, **fields}


def malformed(protocol: str) -> dict[str, Any]:
    """An episode whose second reply could not be executed (format-error feedback follows it)."""
    record = episode(protocol, episode_id=f"m-{protocol}")
    msgs = record["messages"]
    record["messages"] = [*msgs[:2], {"role": "assistant", "content": "<tool_call>{oops", "source": "policy",
                                      "turn": 1, "format_error": "unclosed_tag"},
                          {"role": "user", "content": "Your last reply could not be executed", "source": "system",
                           "turn": 1}, *msgs[2:]]
    return record


def source(protocols: dict[str, str] | None = None) -> RunSource:
    return RunSource(Path("."), {}, protocols or {}, {TOOLS_ID: TOOL_SCHEMAS})


def write_run(path: Path, records: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / EPISODES).write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    (path / TOOLS).write_bytes(orjson.dumps({"tools_id": TOOLS_ID, "tools": TOOL_SCHEMAS}) + b"\n")
    return path


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", [episode(p) for p in ("native", "awm", "hermes")] + [malformed("native")])
