"""The run directory (BRIEF §5): manifest.json, events.jsonl, episodes.jsonl, tools.jsonl, summary.json.

episodes.jsonl is append-only: one record per finished episode, each written with a single
O_APPEND write so a crash can tear at most the last line, which readers skip. A write that fails (a
full disk: ENOSPC, a quota: EDQUOT) is undone: the file is cut back to its length before the write, so
every record written so far stays whole, and `RunDirFull` tells the run to stop (scheduler/_run.py). tools.jsonl holds
each distinct tool set offered to a policy once, `{"tools_id", "tools"}`, written before the first
record that names it; records carry only the `tools_id`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from awm_runtime._encodable import dumps_encodable, encodable
from awm_runtime._errors import AwmError
from awm_runtime._log import get_logger
from awm_runtime._types import EpisodeKey, EpisodeRecord
from awm_runtime.logs._redact import scrub_bytes

log = get_logger("awm_runtime.logs")

MANIFEST, EVENTS, EPISODES, SUMMARY = "manifest.json", "events.jsonl", "episodes.jsonl", "summary.json"
TOOLS = "tools.jsonl"
ToolSets = dict[str, list[dict[str, Any]]]


def record_line(record: EpisodeRecord) -> bytes:
    """One record as a line of episodes.jsonl. Text no writer can carry (a lone surrogate the agent
    wrote, or an expert or judge echoed) is written as U+FFFD and counted in `replaced_chars`, so
    a record is never lost to its own text."""
    data = record.model_dump(mode="json", by_alias=True)
    line, replaced = dumps_encodable(data)
    if replaced:
        record.replaced_chars = data["replaced_chars"] = replaced
        line = orjson.dumps(encodable(data)[0])
        log.warning("record_text_replaced", episode_id=record.episode_id, replaced_chars=replaced,
                    note="lone UTF-16 surrogates in the record's text were written as U+FFFD")
    return line + b"\n"


_FULL = (errno.ENOSPC, errno.EDQUOT)


class RunDirFull(AwmError):
    """The run directory's disk (or quota) is full: what was written before is intact, this write is not."""


def _failed_write(exc: OSError, path: Path) -> Exception:
    if exc.errno in _FULL:
        return RunDirFull(f"{path}: {os.strerror(exc.errno or errno.ENOSPC)}: free space, then continue with "
                          "--resume (every record written so far is intact)")
    return exc


class RunDirWriter:
    """Appends records and tool sets, and replaces the JSON files, of one run directory. `write` is the
    write syscall (os.write; a test injects a full disk there)."""

    write = staticmethod(os.write)

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.root / EPISODES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._tool_ids: set[str] | None = None  # read from tools.jsonl at the first new set (resume)
        self._tools_lock = threading.Lock()  # add_tools runs on worker threads, two at once for two shards' units
        self._append_lock = threading.Lock()  # a failed append is cut back: no other append may land meanwhile
        # Set by a run: told once the disk is full; appends then return False instead of raising.
        self.on_full: Any = None
        self.full: RunDirFull | None = None

    def _full(self, exc: RunDirFull) -> bool:
        if self.on_full is None:
            raise exc
        first, self.full = self.full is None, exc
        if first:
            self.on_full(exc)
        return False

    def _append_whole(self, fd: int, data: bytes, path: Path) -> None:
        """Append `data` to `fd` whole, or not at all: a failed write is cut back to the length before it."""
        before = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                written = self.write(fd, view)
                view = view[written:]
        except OSError as exc:
            with contextlib.suppress(OSError):  # not a file (a device): nothing of it can be cut back, nor needs to be
                os.ftruncate(fd, before)
            raise _failed_write(exc, path) from exc

    def add_tools(self, sets: ToolSets) -> bool:
        """Append the tool sets not yet in tools.jsonl (callers run this off the event loop, before the
        records that name them are appended). Safe to call from several threads at once: each set is written once.
        False when the disk is full (with `on_full` set): the records that name them must not be written."""
        with self._tools_lock:
            if self._tool_ids is None:
                self._tool_ids = set(read_tool_sets(self.root))
            lines = [orjson.dumps({"tools_id": tid, "tools": tools}) + b"\n" for tid, tools in sets.items()
                     if tid not in self._tool_ids]
            if not lines:
                return True
            fd = os.open(self.root / TOOLS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:  # tool schemas come from world code: redacted like records
                self._append_whole(fd, scrub_bytes(b"".join(lines)), self.root / TOOLS)
            except RunDirFull as exc:
                return self._full(exc)
            finally:
                os.close(fd)
            self._tool_ids.update(sets)
            return True

    def append(self, line: bytes) -> bool:
        """Write record lines with one syscall (callers run this off the event loop); key values the
        process holds are redacted first. All of them or none: False when the disk is full (with `on_full`
        set; RunDirFull otherwise), and the file is as it was."""
        data = scrub_bytes(line)
        with self._append_lock:
            try:
                self._append_whole(self._fd, data, self.root / EPISODES)
            except RunDirFull as exc:
                return self._full(exc)
        return True

    def write_json(self, name: str, data: Any) -> None:
        """Atomically replace `name` (write a temp file, then rename): on a full disk the old file stays."""
        tmp = self.root / f".{name}.tmp"
        body = scrub_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2, default=str) + b"\n")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self._append_whole(fd, body, self.root / name)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
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


def new_tool_sets(records: Iterable[EpisodeRecord], seen: set[str]) -> ToolSets:
    """The in-memory tool sets of `records` whose ids are not in `seen` (which this adds them to)."""
    out: ToolSets = {}
    for r in records:
        if r.tools_id and r.tools is not None and r.tools_id not in seen:
            seen.add(r.tools_id)
            out[r.tools_id] = r.tools
    return out


def read_tool_sets(root: Path) -> ToolSets:
    """tools_id -> OpenAI function tools, from a run directory's tools.jsonl ({} if it has none)."""
    path = Path(root) / TOOLS
    out: ToolSets = {}
    if not path.is_file():
        return out
    with path.open("rb") as fh:
        for line in fh:
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line: its records were never written after it
            out[row["tools_id"]] = row["tools"]
    return out


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
