"""Measure what a stdio MCP world's episode pays to start its server: spawn, initialize, list_tools, and close.

    python scripts/mcp_start_cost.py            # after scripts/dev-setup (the servers of tests/e2e/test_mcp_servers.py)

Spares are off (--world-spares 0), so each open() starts a server: the cost spares take off the episode path.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from awm_runtime.worlds.remote import RemoteOptions
from awm_runtime.worlds.remote._mcp import McpWorld

REPO = Path(__file__).parents[1]
BIN = Path(sys.executable).parent
NPM = REPO / ".npm-tools" / "node_modules" / ".bin"
SERVERS = {
    "mcp-server-sqlite": f"{BIN}/mcp-server-sqlite --db-path {{episode_dir}}/x.db",
    "mcp-server-time": f"{BIN}/mcp-server-time",
    "server-memory": f"{NPM}/mcp-server-memory",
    "server-everything": f"{NPM}/mcp-server-everything",
}


async def main(rounds: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks.jsonl"
        tasks.write_text('{"task": "x"}\n')
        for name, command in SERVERS.items():
            world = McpWorld(f"mcp+stdio:{command}", tasks, RemoteOptions(
                attempts=1, spares=0, world_env=("MEMORY_FILE_PATH={episode_dir}/m.jsonl",)))
            await world.connect()
            starts, closes = [], []
            for i in range(rounds):
                began = time.perf_counter()
                session = await world.open(world.tasks()[0], episode_id=f"e{i}")
                starts.append(time.perf_counter() - began)
                began = time.perf_counter()
                await session.close()
                closes.append(time.perf_counter() - began)
            await world.aclose()
            print(f"{name}: start p50 {statistics.median(starts) * 1000:.0f} ms (min {min(starts) * 1000:.0f}, "
                  f"max {max(starts) * 1000:.0f}); close p50 {statistics.median(closes) * 1000:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
