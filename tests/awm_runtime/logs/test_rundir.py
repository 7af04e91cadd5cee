"""The run directory's writer: tool sets written once however many threads add them at once."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.logs import RunDirWriter, iter_records, read_tool_sets


def test_tool_sets_added_from_many_threads_at_once_are_each_written_once(tmp_path: Path) -> None:
    """Two shards' units land together and each hands its sets to a worker thread (issue 32's CI saw a set
    written twice): every set must be one line of tools.jsonl."""
    writer = RunDirWriter(tmp_path)
    sets = {f"sha256:{i:024x}": [{"type": "function", "function": {"name": f"tool_{i}"}}] for i in range(4)}
    start = threading.Barrier(16)

    def add() -> None:
        start.wait()
        writer.add_tools(sets)

    threads = [threading.Thread(target=add) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len((tmp_path / "tools.jsonl").read_text().splitlines()) == 4
    assert set(read_tool_sets(tmp_path)) == set(sets)


def _disk(budget: list[int]) -> Any:
    """os.write on a disk with `budget[0]` bytes free: the write that does not fit writes what fits, and
    the next one fails with ENOSPC, as a real full disk does."""
    import errno as _errno

    def write(fd: int, data: Any) -> int:
        if budget[0] <= 0:
            raise OSError(_errno.ENOSPC, os.strerror(_errno.ENOSPC))
        n = min(len(data), budget[0])
        budget[0] -= n
        return os.write(fd, bytes(data[:n]))
    return write


def test_a_full_disk_cuts_the_torn_write_back_and_keeps_every_record_whole(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from awm_runtime.logs import RunDirFull, RunDirWriter

    budget = [100]
    monkeypatch.setattr(RunDirWriter, "write", staticmethod(_disk(budget)))
    writer = RunDirWriter(tmp_path)
    first = b'{"episode_id": "a", "n": 1}\n'
    assert writer.append(first)
    with pytest.raises(RunDirFull, match="No space left on device: free space, then continue with --resume"):
        writer.append(b'{"episode_id": "b", "pad": "' + b"x" * 200 + b'"}\n')  # 72 bytes land, then ENOSPC
    assert (tmp_path / "episodes.jsonl").read_bytes() == first  # the torn line is gone
    told: list[str] = []
    writer.on_full = lambda exc: told.append(str(exc))
    assert not writer.append(b'{"episode_id": "c"}\n') and not writer.append(b'{"episode_id": "d"}\n')
    assert len(told) == 1 and writer.full is not None  # said once
    assert not writer.add_tools({"t1": [{"type": "function"}]})
    assert not (tmp_path / "tools.jsonl").exists() or (tmp_path / "tools.jsonl").read_bytes() == b""
    (tmp_path / "summary.json").write_text('{"old": true}\n')
    with pytest.raises(RunDirFull):
        writer.write_json("summary.json", {"new": True})
    assert (tmp_path / "summary.json").read_text() == '{"old": true}\n'  # replaced whole or not at all
    assert not list(tmp_path.glob(".*.tmp"))
    budget[0] = 10_000  # space freed: writing goes on after the last whole record
    assert writer.append(b'{"episode_id": "e"}\n')
    writer.close()
    assert [r["episode_id"] for r in iter_records(tmp_path)] == ["a", "e"]
