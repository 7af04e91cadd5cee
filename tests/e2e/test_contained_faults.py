"""awm-run and awm-worlds on a dataset whose scenario misbehaves in every way issue 31 names, as the current user
and (as root) as a new unprivileged user: hung calls, a worker-killing call beside others, an import that keeps the
template open read-write, verifier results that cannot be encoded, and text meant to drive the terminal. The
offending scenario's episodes fail on their own; a bystander scenario's episodes, running at the same time, complete.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.worlds._pack import merge_rows, scenario_rows, write_dataset
from tests.awm_runtime.worlds.test_fault_isolation import LEAK
from tests.e2e.test_hostile import USER, _as_user, _ensure_user

TIMEOUT_S = 2.0
FAULTY = '''import os, time
from fastapi import FastAPI
from sqlalchemy import Column, Integer, String, create_engine
from sqlalchemy.orm import declarative_base, sessionmaker
URL = os.getenv("DATABASE_PATH", "sqlite:///x.db")
engine = create_engine(URL)
Session = sessionmaker(bind=engine)
Base = declarative_base()
app = FastAPI(title="Faulty \\x1b[2J\\x1b]0;pwned\\x07")
KEPT = os.open(URL[len("sqlite:///"):], os.O_RDWR)  # the template, read-write, kept from the import


class Row(Base):
    __tablename__ = "rows"
    id = Column(Integer, primary_key=True)
    name = Column(String)


@app.post("/add", operation_id="add", summary="Add a row")
async def add():
    s = Session()
    s.add(Row(name="added"))
    s.commit()
    s.close()
    return {"ok": True}


@app.post("/poison", operation_id="poison", summary="Rewrite the template")
async def poison():
    try:
        os.pwrite(KEPT, b"\\0" * 4096, 0)
        return {"poisoned": True}
    except OSError as exc:
        return {"poisoned": False, "why": str(exc)}


@app.post("/hang", operation_id="hang", summary="Never answers")
async def hang():
    while True:
        time.sleep(0.2)


@app.post("/crash", operation_id="crash", summary="Kills its worker")
async def crash():
    time.sleep(0.3)
    os._exit(3)


@app.post("/slow", operation_id="slow", summary="Answers after a while")
async def slow():
    time.sleep(1.0)
    return {"ok": True}


@app.post("/fill", operation_id="fill", summary="Grows its episode's DB until the disk is full")
async def fill():
    with engine.connect() as c:
        for _ in range(100000):
            c.exec_driver_sql("INSERT INTO rows (name) VALUES (zeroblob(262144))")
            c.commit()
''' + LEAK
# Its import writes a file beside the DB it imports against until the disk refuses.
FILLER = FAULTY.replace("Faulty", "Filler") + '''
try:
    with open(os.path.join(os.path.dirname(URL[len("sqlite:///"):]), "junk"), "wb") as junk:
        while True:
            junk.write(b"x" * (1 << 20))
            junk.flush()
except OSError:
    pass
'''
DISK_MIB = 16
BROKEN = "raise RuntimeError('import failed \\x1b[2J\\x1b[31mred\\x1b]0;title\\x07')\n"
INITIAL_INTACT = '''def verify_task_completion(initial_db_path, final_db_path):
    import sqlite3
    names = [r[0] for r in sqlite3.connect(initial_db_path).execute("SELECT name FROM rows")]
    return {"result": "complete" if names == ["seed"] else "others"}
'''
UNENCODABLE = {
    "surrogate": "def verify_task_completion(final_db_path):\n    return {'result': 'complete', 'x': chr(0xD800)}\n",
    "big_int": "def verify_task_completion(final_db_path):\n    return {'result': 'complete', 'x': 10 ** 30}\n",
    "deep_list": ("def verify_task_completion(final_db_path):\n    x = []\n    for _ in range(300):\n        x = [x]\n"
                  "    return {'result': 'complete', 'x': x}\n"),
}
# task -> (steps, verifier); the oracle runs the steps. Scenario "hanging" hangs; scenario "faulty" does the rest.
HANGING_TASKS: dict[str, tuple[list[str], str]] = {
    **{f"Hang {i}.": (["hang"], INITIAL_INTACT) for i in range(4)},
    **{f"Slow beside hangs {i}.": (["slow", "add"], INITIAL_INTACT) for i in range(2)},
}
FAULTY_TASKS: dict[str, tuple[list[str], str]] = {
    "Crash beside others.": (["crash"], INITIAL_INTACT),
    **{f"Slow beside a crash {i}.": (["slow", "add"], INITIAL_INTACT) for i in range(3)},
    "Poison the template.": (["poison", "add"], INITIAL_INTACT),
    **{f"Verify unencodable {name}.": (["add"], code) for name, code in UNENCODABLE.items()},
}
TABLE = [{"name": "rows", "ddl": "CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT)"}]
SEED = {"rows": ["INSERT INTO rows (name) VALUES ('seed')"]}


def write_faults_dataset(out: Path) -> Path:
    tasks, hanging = list(FAULTY_TASKS), list(HANGING_TASKS)
    by_tasks = [f"Add {i}." for i in range(6)]
    rows = merge_rows(
        scenario_rows("Faulty", FAULTY, tables=TABLE, inserts=SEED, tasks=tasks,
                      code_verifiers={i: FAULTY_TASKS[t][1] for i, t in enumerate(tasks)}),
        scenario_rows("Hanging", FAULTY.replace("Faulty", "Hanging"), tables=TABLE, inserts=SEED, tasks=hanging,
                      code_verifiers=dict.fromkeys(range(len(hanging)), INITIAL_INTACT)),
        scenario_rows("Bystander", FAULTY.replace("Faulty", "Bystander"), tables=TABLE, inserts=SEED, tasks=by_tasks,
                      code_verifiers=dict.fromkeys(range(len(by_tasks)), INITIAL_INTACT)),
        scenario_rows("Broken", BROKEN, tables=TABLE, inserts=SEED, tasks=["Nothing."]),
        scenario_rows("Filling", FAULTY.replace("Faulty", "Filling"), tables=TABLE, inserts=SEED,
                      tasks=["Fill the disk.", "Add beside it."], code_verifiers={1: INITIAL_INTACT}),
        scenario_rows("Filler", FILLER, tables=TABLE, inserts=SEED, tasks=["Add 0.", "Add 1."],
                      code_verifiers={0: INITIAL_INTACT, 1: INITIAL_INTACT}),
        scenario_rows("Leaking", FAULTY.replace("Faulty", "Leaking"), tables=TABLE, inserts=SEED,
                      tasks=["Leak, then add."], code_verifiers={0: INITIAL_INTACT}))
    write_dataset(out, rows)
    solutions: list[dict[str, Any]] = [
        {"scenario": "Faulty", "task_idx": i, "steps": [{"tool": s, "arguments": {}} for s in FAULTY_TASKS[t][0]],
         "final_answer": "done"} for i, t in enumerate(tasks)]
    solutions += [
        {"scenario": "Hanging", "task_idx": i, "steps": [{"tool": s, "arguments": {}} for s in HANGING_TASKS[t][0]],
         "final_answer": "done"} for i, t in enumerate(hanging)]
    solutions += [{"scenario": "Bystander", "task_idx": i, "steps": [{"tool": "add", "arguments": {}}],
                   "final_answer": "done"} for i in range(len(by_tasks))]
    solutions += [{"scenario": sc, "task_idx": i, "steps": [{"tool": tool, "arguments": {}}], "final_answer": "done"}
                  for sc, tools in (("Filling", ["fill", "add"]), ("Filler", ["add", "add"]))
                  for i, tool in enumerate(tools)]
    solutions += [{"scenario": "Leaking", "task_idx": 0, "steps": [{"tool": "leak", "arguments": {}},
                                                                   {"tool": "add", "arguments": {}}],
                   "final_answer": "done"}]
    (out / "solutions.json").write_text(json.dumps(solutions), encoding="utf-8")
    return out


@pytest.fixture(params=["current user", "new user"] if os.geteuid() == 0 else ["current user"])
def user(request: pytest.FixtureRequest) -> str | None:
    if request.param == "new user":
        _ensure_user()
        return USER
    return None


@pytest.fixture
def root(user: str | None) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="awm-faults-", dir="/tmp"))
    path.chmod(0o755)
    write_faults_dataset(path / "data")
    if user is not None:
        for p in [path, *path.rglob("*")]:
            shutil.chown(p, user)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _command(user: str | None, root: Path, main: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C.UTF-8"}
    cmd = [sys.executable, "-c", f"from awm_runtime.cli import {main}; raise SystemExit({main}())", *args]
    if user is not None:
        cmd = _as_user(user, cmd, env)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=root, check=False)


def test_a_misbehaving_scenario_fails_only_its_own_episodes(user: str | None, root: Path) -> None:
    data, out = root / "data", root / "run"
    proc = _command(user, root, "run_main", "--worlds", str(data), "--solutions", str(data / "solutions.json"),
                    "--policy", "sim/oracle", "--expert", "none", "--preflight", "off", "--shards", "1",
                    "--tool-timeout", str(TIMEOUT_S), "--concurrency", "20", "--world-disk-mib", str(DISK_MIB),
                    "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "\x1b" not in proc.stderr
    recs = {(r["scenario"], r["task_idx"]): r for r in
            (json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines())}
    faulty = {t: recs[("faulty", i)] for i, t in enumerate(FAULTY_TASKS)}
    hanging = {t: recs[("hanging", i)] for i, t in enumerate(HANGING_TASKS)}
    for i in range(4):  # each hung call ends its own episode at its own timeout, all together
        rec = hanging[f"Hang {i}."]
        assert rec["outcome"] == "error" and rec["end_reason"] == "world_error", rec["error"]
        assert f"did not finish within {TIMEOUT_S:g}s" in rec["error"]["message"]
    # They started together (and waited for the same build): they end together, not a timeout apart each (one
    # after another would spread them over 3 timeouts). Only the spread is bounded: the shared build's time,
    # which load stretches, is in every one of them.
    walls = [hanging[f"Hang {i}."]["timings"]["wall_s"] for i in range(4)]
    assert max(walls) - min(walls) < TIMEOUT_S, walls
    assert [hanging[f"Slow beside hangs {i}."]["error"] for i in range(2)] == [None, None]
    crash = faulty["Crash beside others."]
    assert crash["outcome"] == "error" and "died" in crash["error"]["message"], crash["error"]
    # In flight when the crash killed their worker: run again, and complete.
    assert [faulty[f"Slow beside a crash {i}."]["error"] for i in range(3)] == [None] * 3
    poison = faulty["Poison the template."]
    assert poison["outcome"] == "complete" and poison["verdict"] == "complete", poison["error"]
    assert json.loads(next(m["content"] for m in poison["messages"] if m["source"] == "world"))["poisoned"] is False
    for name in UNENCODABLE:  # that job's failure, with the reason; the server lives on
        rec = faulty[f"Verify unencodable {name}."]
        assert rec["verdict"] == "judge_error" and "not JSON" in rec["error"]["message"], rec["error"]
    # Past its disk quota: its own episodes end as world_error, naming the quota and how to raise it.
    fill = recs[("filling", 0)]
    assert fill["end_reason"] == "world_error", fill["error"]
    assert f"'filling' is out of disk space: its files are limited to {DISK_MIB} MiB" in fill["error"]["message"]
    assert "--world-disk-mib" in fill["error"]["message"]
    for i in range(2):
        rec = recs[("filler", i)]
        assert rec["end_reason"] == "world_error" and "build and import filled its disk" in rec["error"]["message"]
    # Its code used up its worker's descriptors, so its next handler answered 500: the world's fault, not the agent's.
    leak = recs[("leaking", 0)]
    assert leak["outcome"] == "error" and leak["end_reason"] == "world_error", leak["error"]
    assert "used up its world worker's file descriptors" in leak["error"]["message"]
    bystander = [r for (sc, _), r in recs.items() if sc == "bystander"]
    assert len(bystander) == 6 and [r["error"] for r in bystander] == [None] * 6


def test_check_prints_world_text_escaped(user: str | None, root: Path) -> None:
    data = root / "data"
    proc = _command(user, root, "worlds_main", "check", "--worlds", str(data), "--solutions",
                    str(data / "solutions.json"), "--scenarios", "broken")
    # Only the broken scenario is checked and it cannot run: nothing was checked, exit 2 (issue 47); what it
    # printed of the world's own text is escaped either way.
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout + proc.stderr
    assert "\\x1b[2J" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-2000:]


def _parents() -> dict[int, int]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    return out


def _descendants(root_pid: int) -> set[int]:
    parents, out = _parents(), set()
    for pid in parents:
        p = pid
        while p > 1 and p != root_pid:
            p = parents.get(p, 0)
        if p == root_pid and pid != root_pid:
            out.add(pid)
    return out


def _scenario_mounts(pids: set[int] | None = None) -> set[str]:
    """Mount points of scenario tmpfs (disk quotas) seen by `pids` (None: every process)."""
    found = set()
    for pid in pids if pids is not None else _parents():
        try:
            lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
        except OSError:
            continue
        found |= {line.split()[4] for line in lines if " - tmpfs awm-scenario " in line}
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie: an orphan's zombie waits for whoever reaps orphans here, which is not ours to do."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_cancelled_run_leaves_no_mount_or_process(user: str | None, root: Path) -> None:
    data, out = root / "data", root / "run"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root), "LANG": "C.UTF-8"}
    cmd = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())", "--worlds",
           str(data), "--solutions", str(data / "solutions.json"), "--scenarios", "hanging,bystander",
           "--policy", "sim/oracle", "--expert", "none", "--preflight", "off", "--shards", "1", "--tool-timeout", "60",
           "--grace", "0.2", "--out", str(out), "--quiet"]
    proc = subprocess.Popen(_as_user(user, cmd, env) if user is not None else cmd, env=env, cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline, seen, mounts = time.monotonic() + 120, set(), set()
    while time.monotonic() < deadline and proc.poll() is None:
        seen |= _descendants(proc.pid)
        mounts = _scenario_mounts(seen)
        if {m.rsplit("/", 1)[-1] for m in mounts} >= {"hanging", "bystander"}:
            break
        time.sleep(0.2)
    assert {m.rsplit("/", 1)[-1] for m in mounts} >= {"hanging", "bystander"}, (mounts, proc.poll())
    time.sleep(0.5)  # the hanging episodes are in their calls
    seen |= _descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert "stopped early (SIGTERM)" in stderr, stderr[-2000:]
    assert proc.returncode == 130 or user is not None, stderr[-2000:]  # runuser reports its own SIGTERM
    time.sleep(0.5)
    alive = {p for p in seen if _running(p)}
    assert not alive, [Path(f"/proc/{p}/status").read_text()[:300] for p in alive]
    assert not mounts & _scenario_mounts(), "a scenario's tmpfs outlived its run"


def test_a_batch_gets_the_disk_its_episodes_in_flight_need(user: str | None, root: Path) -> None:
    """Issue 31: 200 episodes of one built-in scenario in flight at once. Under a 16 MiB quota set by the user
    (~46 of their DBs) the run says, once and on the terminal, that it cannot hold them and what to set; with
    the quota left unset, it is sized for the run and every episode completes."""
    common = ["--worlds", "builtin", "--scenarios", "homehub*", "--policy", "sim/oracle", "--expert", "none",
              "--preflight", "off", "--shards", "1", "--concurrency", "200", "--repeats", "20", "--quiet"]
    small = _command(user, root, "run_main", *common, "--world-disk-mib", "16", "--out", str(root / "small"))
    assert small.returncode == 0, small.stderr[-3000:]
    said = [line for line in small.stderr.splitlines() if line.startswith("awm-run: warning: world_disk_small:")]
    assert len(said) == 1 and "--world-disk-mib 16 holds about" in said[0] and "Raise it to" in said[0], small.stderr
    recs = [json.loads(line) for line in (root / "small" / "episodes.jsonl").read_text().splitlines()]
    full = [r for r in recs if r["end_reason"] == "world_error"]
    assert full and all("limited to 16 MiB" in r["error"]["message"] for r in full)
    sized = _command(user, root, "run_main", *common, "--out", str(root / "sized"))
    assert sized.returncode == 0, sized.stderr[-3000:]
    assert "world_disk" not in sized.stderr
    again = [json.loads(line) for line in (root / "sized" / "episodes.jsonl").read_text().splitlines()]
    assert len(again) == len(recs) and [r["error"] for r in again] == [None] * len(again)
