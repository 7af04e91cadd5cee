"""The synthetic scenario of `awm-bench world`, and the CPU that `--inject-ms` adds to its calls and verifiers."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

from awm_runtime.bench._world_data import synthetic_rows
from awm_runtime.worlds._host import ScenarioHost


def _seeded_db(rows: dict[str, list[dict[str, Any]]], path: Path) -> str:
    conn = sqlite3.connect(path)
    for table in rows["gen_db"][0]["db_schema"]["tables"]:
        conn.execute(table["ddl"])
    for table in rows["gen_sample"][0]["sample_data"]["tables"]:
        for statement in table["insert_statements"]:
            conn.execute(statement)
    conn.commit()
    conn.close()
    return str(path)


def _verifier(rows: dict[str, list[dict[str, Any]]]) -> Any:
    namespace: dict[str, Any] = {}
    exec(rows["gen_verifier.pure_code"][0]["verification"]["code"], namespace)  # our own generated code
    return namespace["verify_task_completion"]


def _thread_ms(fn: Any) -> tuple[Any, float]:
    started = time.thread_time()
    out = fn()
    return out, (time.thread_time() - started) * 1000


def test_without_injection_the_scenario_and_verifiers_burn_nothing() -> None:
    rows = synthetic_rows(tables=2, tools=3)
    assert "_Burn" not in rows["gen_envs"][0]["full_code"]
    assert "thread_time" not in rows["gen_verifier.pure_code"][0]["verification"]["code"]


def test_injected_cpu_lands_in_each_tool_call_and_each_verification(tmp_path: Path) -> None:
    rows = synthetic_rows(tables=2, tools=3, name="Burn Bench", burn_ms=30)
    db = _seeded_db(rows, tmp_path / "ep.db")
    host = ScenarioHost("burn_bench", rows["gen_envs"][0]["full_code"], import_db=db)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(host.start())
        reply, ms = _thread_ms(lambda: loop.run_until_complete(host.call(db, "list_projects", {})))
    finally:
        loop.close()
    assert reply["status"] == 200 and not reply["is_error"] and '"total"' in reply["text"]
    assert ms >= 30  # the middleware ran in this thread, and the handler after it
    verdict, ms = _thread_ms(lambda: _verifier(rows)(db, db))
    assert verdict == {"result": "others"} and ms >= 30
