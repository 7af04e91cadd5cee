"""The run directory (BRIEF §5): manifest.json, events.jsonl, episodes.jsonl, summary.json.

episodes.jsonl is append-only: one record per finished episode, each written with a single
O_APPEND write so a crash can tear at most the last line, which readers skip.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from awm_runtime._types import EpisodeRecord
from awm_runtime.logs._redact import scrub_bytes

MANIFEST, EVENTS, EPISODES, SUMMARY = "manifest.json", "events.jsonl", "episodes.jsonl", "summary.json"
EpisodeKey = tuple[str, str, int, int]


def record_line(record: EpisodeRecord) -> bytes:
    return orjson.dumps(record.model_dump(mode="json", by_alias=True)) + b"\n"


class RunDirWriter:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.root / EPISODES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, line: bytes) -> None:
        """Write one record line with one syscall (callers run this off the event loop); key values the
        process holds are redacted first."""
        view = memoryview(scrub_bytes(line))
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def write_json(self, name: str, data: Any) -> None:
        """Atomically replace `name` (write a temp file, then rename)."""
        tmp = self.root / f".{name}.tmp"
        tmp.write_bytes(scrub_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str) + b"\n"))
        os.replace(tmp, self.root / name)

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)


def iter_records(root: Path) -> Iterator[dict[str, Any]]:
    """Every complete record in a run directory, streaming; a torn last line is skipped."""
    path = Path(root) / EPISODES
    if not path.is_file():
        return
    with path.open("rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break  # torn final write from a killed run
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                continue


def completed_keys(root: Path) -> set[EpisodeKey]:
    return {(r["arm"], r["scenario"], int(r["task_idx"]), int(r["repeat"])) for r in iter_records(root)}


def repair_tail(root: Path) -> int:
    """Truncate a torn last line so appends start on a fresh line; returns bytes removed."""
    path = Path(root) / EPISODES
    if not path.is_file() or path.stat().st_size == 0:
        return 0
    with path.open("rb+") as fh:
        data = fh.read()
        if data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        fh.truncate(keep)
        return len(data) - keep


def read_manifest(root: Path) -> dict[str, Any]:
    return json.loads((Path(root) / MANIFEST).read_text(encoding="utf-8"))
