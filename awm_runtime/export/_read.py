"""Reading a run directory for export: records streamed, tool sets, each record's protocol, replies parsed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awm_runtime._errors import ConfigError
from awm_runtime._interfaces import CallTool, FinalAnswer, ListTools, Malformed
from awm_runtime.logs import EPISODES, MANIFEST, ToolSets, iter_records, read_manifest, read_tool_sets
from awm_runtime.policies.protocols import parse_reply


@dataclass(slots=True)
class ExportStats:
    records: int = 0
    lines: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(slots=True)
class RunSource:
    """What an export needs from a run directory besides its records: protocols and tool sets."""

    path: Path
    manifest: dict[str, Any]
    protocols: dict[str, str]  # arm -> protocol, from the run's aliases (older records lack policy.protocol)
    tool_sets: ToolSets

    def protocol(self, record: dict[str, Any]) -> str | None:
        return (record.get("policy") or {}).get("protocol") or self.protocols.get(record.get("arm", ""))

    def tools(self, record: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The OpenAI function tools the episode offered, or None (a run from before tools.jsonl)."""
        tid = record.get("tools_id")
        return self.tool_sets.get(tid) if tid else None


class _AnyTool:
    """Every name is a tool: an export interprets replies, it does not re-judge unknown tools."""

    def __contains__(self, name: object) -> bool:
        return True


def open_run(run: Path) -> dict[str, Any]:
    """The run's manifest; a ConfigError that says what is wrong if `run` is not a run directory."""
    run = Path(run)
    if not (run / EPISODES).is_file():
        raise ConfigError(f"{run} is not a run directory: it has no {EPISODES} (pass the --out of an awm-run)")
    try:
        return read_manifest(run) if (run / MANIFEST).is_file() else {}
    except ValueError as exc:
        raise ConfigError(f"{run / MANIFEST}: not valid JSON ({exc})") from None


def run_source(run: Path) -> RunSource:
    manifest = open_run(run)
    return RunSource(Path(run), manifest, arm_protocols(manifest), read_tool_sets(Path(run)))


def arm_protocols(manifest: dict[str, Any]) -> dict[str, str]:
    """arm -> protocol of its policy alias, from the definitions the run stored (its manifest's `arms`), else the
    built-in aliases; arms it cannot resolve are left out. No file the manifest names is read (scheduler/_trust.py)."""
    from awm_runtime.models import load_registry

    registry = load_registry(None)
    out: dict[str, str] = {}
    for arm, info in (manifest.get("arms") or {}).items():
        stored = (((info or {}).get("models") or {}).get("policy") or {}).get("protocol")
        alias = ((info or {}).get("policy") or {}).get("alias", "")
        if stored in ("native", "awm", "hermes"):
            out[arm] = str(stored)
        elif alias in registry:
            out[arm] = registry.get(alias).protocol
    return out


def guess_protocol(message: dict[str, Any]) -> str:
    """For policies the manifest cannot resolve (plug-ins, a lost awm.toml): read it off the reply."""
    if message.get("tool_calls"):
        return "native"
    content = message.get("content") or ""
    return "awm" if '"call_tool"' in content or '"list_tools"' in content else "hermes"


def action_of(message: dict[str, Any], protocol: str | None) -> dict[str, Any]:
    """A recorded policy reply, interpreted by the one parser (policies.protocols.parse_reply)."""
    parsed = parse_reply(protocol or guess_protocol(message), message.get("content"), message.get("tool_calls"),
                         _AnyTool(), finish_reason=message.get("finish_reason"))  # type: ignore[arg-type]
    action = parsed.action
    if isinstance(action, CallTool):
        return {"kind": "call", "tool": action.call.name, "arguments": action.call.arguments}
    if isinstance(action, ListTools):
        return {"kind": "list_tools"}
    if isinstance(action, FinalAnswer):
        return {"kind": "final", "text": action.text}
    assert isinstance(action, Malformed)
    return {"kind": "malformed", "format_error": action.kind, "detail": action.detail}


def is_target(message: dict[str, Any]) -> bool:
    """Only the policy's own well-formed replies are targets: never expert, nudge, world or system text."""
    return message.get("source") == "policy" and message.get("role") == "assistant" and not message.get("format_error")


def records(run: Path, arms: set[str] | None = None) -> Iterator[dict[str, Any]]:
    for record in iter_records(run):
        if arms is None or record.get("arm") in arms:
            yield record
