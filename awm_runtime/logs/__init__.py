"""Structured logs, secret redaction, and the run directory writer and reader."""

from awm_runtime.logs._redact import (
    REDACTED,
    Redactor,
    known_secrets,
    redact,
    register_secrets,
    scrub_bytes,
    scrub_secrets,
)
from awm_runtime.logs._rundir import (
    EPISODES,
    EVENTS,
    MANIFEST,
    SUMMARY,
    TOOLS,
    RunDirFull,
    RunDirWriter,
    ToolSets,
    completed_keys,
    iter_records,
    new_tool_sets,
    read_manifest,
    read_tool_sets,
    record_line,
    repair_tail,
)
from awm_runtime.logs._setup import EventStream, configure_logging, reset_logging
from awm_runtime.logs._sinks import EventLogSink

__all__ = [
    "EPISODES",
    "EVENTS",
    "MANIFEST",
    "REDACTED",
    "SUMMARY",
    "TOOLS",
    "EventLogSink",
    "EventStream",
    "Redactor",
    "RunDirFull",
    "RunDirWriter",
    "ToolSets",
    "completed_keys",
    "configure_logging",
    "iter_records",
    "known_secrets",
    "new_tool_sets",
    "read_manifest",
    "read_tool_sets",
    "record_line",
    "redact",
    "register_secrets",
    "repair_tail",
    "reset_logging",
    "scrub_bytes",
    "scrub_secrets",
]
