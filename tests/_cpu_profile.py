"""Per-test CPU profile of the suite (issue 50): `AWM_CPU_PROFILE=out.md pytest tests/e2e -n 2`.

Around each test (set-up, call and tear-down) it records the CPU seconds (user + sys) of the pytest process
itself (an xdist worker, or the only process), of its children reaped meanwhile (os.times: these include the
grandchildren those children reaped), and of the descendants still alive at either end (read from
/proc/PID/stat, their own CPU and their reaped children's). A session fixture's cost falls on the first test that
uses it. Each worker appends its rows to `<out>.rows.jsonl`; the process that ends the session (xdist's
controller, or the only process) writes `<out>`: the total, then tests and files sorted by CPU, heaviest first,
each with its wall time (set-up to tear-down; on a shared machine, wall says more about the load than the test).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK")
_TOP = 60


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children), or None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    # After the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15), counted from state = 0.
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / _TICK


def _descendants(root: int) -> dict[int, float]:
    """CPU seconds of every live descendant of `root`, by pid."""
    table: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (got := _stat(int(entry))) is not None:
            table[int(entry)] = got
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, float] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = table[pid][1]
        todo.extend(children.get(pid, []))
    return out


def _own() -> tuple[float, float]:
    t = os.times()
    return t.user + t.system, t.children_user + t.children_system


def pytest_configure(config: pytest.Config) -> None:
    """In the controller (before xdist starts its workers), drop the rows of an earlier run."""
    if not hasattr(config, "workerinput"):
        Path(f"{os.environ['AWM_CPU_PROFILE']}.rows.jsonl").unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    """Measure one test's CPU, its process tree's included, and append a row."""
    self0, reaped0 = _own()
    live0 = _descendants(os.getpid())
    wall0 = time.perf_counter()
    yield
    wall = time.perf_counter() - wall0
    self1, reaped1 = _own()
    live1 = _descendants(os.getpid())
    # A descendant alive at the start and gone at the end: its whole CPU reached `reaped` (if we reaped it, or its
    # parent that we reaped did), so subtract what it had at the start; a live one counts its growth.
    children = (reaped1 - reaped0) - sum(v for p, v in live0.items() if p not in live1)
    children += sum(v - live0.get(p, 0.0) for p, v in live1.items())
    row = {"test": item.nodeid, "self": round(self1 - self0, 3), "children": round(children, 3), "wall": round(wall, 3)}
    out = os.environ["AWM_CPU_PROFILE"]
    with open(f"{out}.rows.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In the controller (or a run without xdist), write the sorted table."""
    if hasattr(session.config, "workerinput"):
        return
    out = Path(os.environ["AWM_CPU_PROFILE"])
    rows_path = Path(f"{out}.rows.jsonl")
    if not rows_path.exists():
        return
    rows = [json.loads(line) for line in rows_path.read_text().splitlines() if line]
    for r in rows:
        r["cpu"] = r["self"] + r["children"]
    files: dict[str, list[float]] = {}
    for r in rows:
        acc = files.setdefault(r["test"].split("::")[0], [0.0, 0, 0.0])
        acc[0] += r["cpu"]
        acc[1] += 1
        acc[2] += r.get("wall", 0.0)
    total = sum(r["cpu"] for r in rows)
    lines = [f"# CPU profile: {len(rows)} tests, {total:.1f} CPU-s (user + sys, process trees)", "",
             "| CPU-s | self | children | wall s | test |", "|---:|---:|---:|---:|---|"]
    for r in sorted(rows, key=lambda r: -r["cpu"])[:_TOP]:
        lines.append(f"| {r['cpu']:.2f} | {r['self']:.2f} | {r['children']:.2f} | {r.get('wall', 0.0):.1f} "
                     f"| {r['test']} |")
    lines += ["", "| CPU-s | tests | wall s | file |", "|---:|---:|---:|---|"]
    for name, (cpu, n, wall) in sorted(files.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {cpu:.2f} | {n} | {wall:.1f} | {name} |")
    out.write_text("\n".join(lines) + "\n")
