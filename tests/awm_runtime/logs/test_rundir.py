"""The run directory's writer: tool sets written once however many threads add them at once."""

from __future__ import annotations

import threading
from pathlib import Path

from awm_runtime.logs import RunDirWriter, read_tool_sets


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
