"""stall: a slow or hung tool delays only its own episode (no head-of-line blocking).

Episodes of one scenario start together; each opens its world, makes one call, is verified and closes.
`slow`: every call takes `--slow-s` (2 s): all episodes should end within `--slow-s` + 0.5 s of their start.
`hang`: every call hangs; with `--tool-timeout` T all should end within 1.2 T. Meanwhile a bystander
scenario's episodes make quick calls: their latency says whether the hang reached them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from awm_runtime._types import ToolCall
from awm_runtime.worlds import AwmWorld, WorldOptions, load_local_worlds, merge_rows, scenario_rows, write_dataset

SLOW_APP = '''import os, time
from fastapi import FastAPI
from sqlalchemy import Column, Integer, create_engine
from sqlalchemy.orm import declarative_base, sessionmaker
engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///slow.db"))
Session = sessionmaker(bind=engine)
Base = declarative_base()
app = FastAPI(title="Slow")


class Hit(Base):
    __tablename__ = "hits"
    id = Column(Integer, primary_key=True)


@app.post("/slow", operation_id="slow", summary="Takes its time")
async def slow(seconds: float = 2.0):
    time.sleep(seconds)  # blocks, as generated handlers block on SQLite
    s = Session()
    s.add(Hit())
    s.commit()
    n = s.query(Hit).count()
    s.close()
    return {"hits": n}


@app.post("/hang", operation_id="hang", summary="Never answers")
async def hang():
    while True:
        time.sleep(1)


@app.get("/quick", operation_id="quick", summary="Answers at once")
async def quick():
    s = Session()
    n = s.query(Hit).count()
    s.close()
    return {"hits": n}
'''
VERIFY = '''def verify_task_completion(final_db_path):
    return {"result": "complete"}
'''
TABLES = [{"name": "hits", "ddl": "CREATE TABLE hits (id INTEGER PRIMARY KEY)"}]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slow-episodes", type=int, default=20, help="episodes calling the slow tool (default 20)")
    p.add_argument("--slow-s", type=float, default=2.0, help="seconds the slow tool takes (default 2)")
    p.add_argument("--hang-episodes", type=int, default=10, help="episodes calling the hanging tool (default 10)")
    p.add_argument("--tool-timeout", type=float, default=5.0, help="the tool timeout in the hang figure (default 5)")
    p.add_argument("--bystanders", type=int, default=10, help="another scenario's quick episodes meanwhile")
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="measure unconfined world code")


def write_stall_dataset(out: Path) -> Path:
    rows = merge_rows(*(scenario_rows(name, SLOW_APP, tables=TABLES, inserts={}, tasks=["Call."],
                                      code_verifiers={0: VERIFY}) for name in ("Slow", "Bystander")))
    write_dataset(out, rows)
    return out


async def _episode(world: AwmWorld, scenario: str, tool: str, args: dict[str, Any], i: int) -> dict[str, Any]:
    task = next(t for t in world.tasks() if t.scenario == scenario)
    started = time.perf_counter()
    error = None
    call_s = 0.0
    session = await world.open(task, episode_id=f"{scenario}-{tool}-{i}")
    try:
        call_started = time.perf_counter()
        try:
            result = await session.call_tool(ToolCall(id="c", name=tool, arguments=args))
        finally:
            call_s = time.perf_counter() - call_started
        if result.is_error:
            error = result.text[:120]
        await session.verify("", [])
    except Exception as exc:
        error = f"{type(exc).__name__}: {str(exc)[:120]}"
    finally:
        await session.close()
    return {"seconds": time.perf_counter() - started, "call_s": call_s, "error": error}


async def _figure(args: argparse.Namespace, data: Path, tool: str, n: int, timeout_s: float,
                  call_args: dict[str, Any]) -> dict[str, Any]:
    world = load_local_worlds(data, options=WorldOptions(tool_timeout_s=timeout_s,
                                                         unsafe_no_sandbox=args.unsafe_no_sandbox))
    try:
        for scenario in ("slow", "bystander"):  # built and imported before the clock starts
            warm = await _episode(world, scenario, "quick", {}, -1)
            assert warm["error"] is None, warm
        episodes = [_episode(world, "slow", tool, call_args, i) for i in range(n)]
        bystanders = [_episode(world, "bystander", "quick", {}, i) for i in range(args.bystanders)]
        results = await asyncio.gather(*episodes, *bystanders)
    finally:
        await world.aclose()
    own, others = results[:n], results[n:]
    return {"episodes": n, "max_s": round(max(r["seconds"] for r in own), 3),
            "call_max_s": round(max(r["call_s"] for r in own), 3),
            "min_s": round(min(r["seconds"] for r in own), 3), "errors": sum(r["error"] is not None for r in own),
            "first_error": next((r["error"] for r in own if r["error"]), None),
            "bystanders": len(others), "bystander_max_s": round(max((r["seconds"] for r in others), default=0), 3),
            "bystander_errors": sum(r["error"] is not None for r in others)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from awm_runtime._log import console_logging

    console_logging()
    from awm_runtime.isolation import require

    containment = require(args.unsafe_no_sandbox)
    with tempfile.TemporaryDirectory(prefix="awm-bench-stall-") as tmp:
        data = write_stall_dataset(Path(tmp))
        slow = await _figure(args, data, "slow", args.slow_episodes, max(30.0, args.slow_s * 4),
                             {"seconds": args.slow_s})
        hang = await _figure(args, data, "hang", args.hang_episodes, args.tool_timeout, {})
    met = {"slow": slow["errors"] == 0 and slow["max_s"] <= args.slow_s + 0.5,
           "hang": hang["errors"] == hang["episodes"] and hang["max_s"] <= 1.2 * args.tool_timeout,
           "bystanders": slow["bystander_errors"] == 0 and hang["bystander_errors"] == 0}
    load = os.getloadavg()
    table = [
        ["containment", containment.statement, ""],
        [f"{slow['episodes']} episodes, one {args.slow_s:g} s call each", f"all ended in {slow['max_s']:.2f} s "
         f"(first {slow['min_s']:.2f} s), {slow['errors']} errors", f"<= {args.slow_s + 0.5:g} s"],
        [f"{hang['episodes']} episodes, one hung call each", f"all ended in {hang['max_s']:.2f} s, "
         f"{hang['errors']} world errors", f"<= {1.2 * args.tool_timeout:g} s (1.2 x {args.tool_timeout:g} s timeout)"],
        ["bystander scenario, meanwhile", f"slowest {max(slow['bystander_max_s'], hang['bystander_max_s']):.3f} s, "
         f"{slow['bystander_errors'] + hang['bystander_errors']} errors", "no errors"],
        ["load average (1 min)", f"{load[0]:.2f} on {os.cpu_count()} cores", "quiet machine"],
    ]
    return {"suite": "stall", "slow": slow, "hang": hang, "tool_timeout_s": args.tool_timeout, "slow_s": args.slow_s,
            "met": met, "containment": containment.statement, "load_avg": [round(x, 2) for x in load], "table": table}


__all__ = ["add_arguments", "run", "write_stall_dataset"]
