"""One scenario's fault stays in its own episodes (issue 31): a hung or slow call delays only its own episode,
a crash or SystemExit beside other calls costs only the culprit, and a template cannot be changed by the code
that imported against it. A bystander scenario's episodes, running at the same time, complete."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._errors import WorldError
from awm_runtime._types import ToolCall
from awm_runtime.worlds import WorldOptions, load_worlds
from awm_runtime.worlds._pack import merge_rows, scenario_rows, write_dataset
from awm_runtime.worlds._world_worker_handle import OPEN_FILES

FAULTY = '''import mmap, os, sqlite3, stat, time
from fastapi import FastAPI, Query
from sqlalchemy import Column, Integer, String, create_engine
from sqlalchemy.orm import declarative_base, sessionmaker
URL = os.getenv("DATABASE_PATH", "sqlite:///x.db")
engine = create_engine(URL)
Session = sessionmaker(bind=engine)
Base = declarative_base()
app = FastAPI(title="Faulty")
DB = URL[len("sqlite:///"):]
# Poison kit, kept from the import: a read-write descriptor, a dup of it, a shared writable mapping of the
# file, and an open SQLite connection; and the path, to reopen it directly or through /proc.
FD = os.open(DB, os.O_RDWR)
DUP = os.dup(FD)
MAP = mmap.mmap(FD, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
CONN = sqlite3.connect(DB, check_same_thread=False)


class Row(Base):
    __tablename__ = "rows"
    id = Column(Integer, primary_key=True)
    name = Column(String)


def attempt(fn):
    try:
        got = fn()
    except BaseException as exc:
        return f"blocked: {type(exc).__name__}"
    return "done" if got is None else f"done: {got}"


def reopen_via_proc():
    fd = os.open(f"/proc/self/fd/{FD}", os.O_RDWR)
    try:
        os.pwrite(fd, b"\\0" * 100, 0)
        return "a character device" if stat.S_ISCHR(os.fstat(fd).st_mode) else "a file"
    finally:
        os.close(fd)


@app.get("/count", operation_id="count", summary="Count rows")
async def count():
    s = Session()
    n = s.query(Row).count()
    s.close()
    return {"rows": n}


def attach_through_the_routed_connection():
    # The episode's own connection opens in URI mode: ATTACH takes URIs there, to the template and to a new file.
    with engine.connect() as c:
        for uri in (f"file:{DB}?mode=rw", f"file:{os.path.dirname(DB)}/new.db?mode=rwc",
                    "file:/tmp/escape.db?mode=rwc"):
            try:
                c.exec_driver_sql(f"ATTACH '{uri}' AS t")
                c.exec_driver_sql("CREATE TABLE IF NOT EXISTS t.rows (name TEXT)")
                c.exec_driver_sql("INSERT INTO t.rows (name) VALUES ('poison')")
                c.commit()
                return f"done: {uri}"
            except Exception:
                c.rollback()
    raise PermissionError("every ATTACH refused")


@app.post("/poison", operation_id="poison", summary="Rewrite the template every way it can")
async def poison():
    def sql():
        CONN.execute("INSERT INTO rows (name) VALUES ('poison')")
        CONN.commit()
    out = {
        "fd": attempt(lambda: os.pwrite(FD, b"\\0" * 100, 0)),
        "dup": attempt(lambda: os.pwrite(DUP, b"\\0" * 100, 0)),
        "mmap": attempt(lambda: MAP.__setitem__(slice(0, 16), b"\\0" * 16)),
        "sqlite": attempt(sql),
        "reopen": attempt(lambda: os.close(os.open(DB, os.O_RDWR))),
        "proc_fd": attempt(reopen_via_proc),
        "attach": attempt(lambda: sqlite3.connect(":memory:").execute(f"ATTACH '{DB}' AS t")),
        "attach_uri": attempt(attach_through_the_routed_connection),
    }
    return out


@app.get("/hang", operation_id="hang", summary="Never answers")
async def hang():
    while True:
        time.sleep(0.5)


@app.get("/slow", operation_id="slow", summary="Answers after a while")
async def slow(seconds: float = Query(...), tag: str = Query(...)):
    time.sleep(seconds)
    return {"tag": tag}


@app.get("/crash", operation_id="crash", summary="Kills its own process")
async def crash():
    time.sleep(0.05)
    os._exit(3)


@app.get("/exit", operation_id="exit_now", summary="Raises SystemExit")
async def exit_now():
    raise SystemExit(4)


@app.post("/fill", operation_id="fill", summary="Grows its episode's DB until the disk is full")
async def fill():
    with engine.connect() as c:
        for _ in range(100000):
            c.exec_driver_sql("INSERT INTO rows (name) VALUES (zeroblob(262144))")
            c.commit()
'''
# A route that keeps descriptors open until its process may open no more (FAULTY's and tests/e2e's scenarios).
LEAK = '''

LEAKED = []


@app.post("/leak", operation_id="leak", summary="Keeps descriptors open until it may open no more")
async def leak():
    try:
        while True:
            LEAKED.append(os.dup(0))
    except OSError:
        return {"leaked": len(LEAKED)}
'''
FAULTY += LEAK
# Its import writes a file beside the DB it imports against until the disk refuses.
FILLER = FAULTY + '''
try:
    with open(os.path.join(os.path.dirname(DB), "junk"), "wb") as junk:
        while True:
            junk.write(b"x" * (1 << 20))
            junk.flush()
except OSError:
    pass
'''
VERIFY_INITIAL = '''def verify_task_completion(initial_db_path, final_db_path):
    import sqlite3
    names = [r[0] for r in sqlite3.connect(initial_db_path).execute("SELECT name FROM rows")]
    return {"result": "complete" if names == ["seed"] else "others", "initial": names}
'''
TABLE = [{"name": "rows", "ddl": "CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT)"}]
SEED = {"rows": ["INSERT INTO rows (name) VALUES ('seed')"]}


@pytest.fixture(scope="module")
def faults_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("faults")
    write_dataset(out, merge_rows(*(scenario_rows(name, FAULTY, tables=TABLE, inserts=SEED, tasks=["Do."],
                                                  code_verifiers={0: VERIFY_INITIAL})
                                    for name in ("Faulty", "Bystander")),
                             scenario_rows("Filler", FILLER, tables=TABLE, inserts=SEED, tasks=["Do."],
                                           code_verifiers={0: VERIFY_INITIAL})))
    return out


@pytest.fixture
async def world(faults_dir: Path) -> Any:
    w = load_worlds(faults_dir, options=WorldOptions(tool_timeout_s=1.5, workers=2))
    yield w
    await w.aclose()


def call(tool: str, **args: Any) -> ToolCall:
    return ToolCall(id=tool, name=tool, arguments=args)


async def sessions(world: Any, scenario: str, n: int) -> list[Any]:
    task = next(t for t in world.tasks() if t.scenario == scenario)
    return [await world.open(task, episode_id=f"{scenario}{i}") for i in range(n)]


async def timed(coro: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    try:
        result: Any = await coro
    except WorldError as exc:
        result = exc
    return time.perf_counter() - started, result


async def bystanders_complete(world: Any, n: int = 3) -> None:
    by = await sessions(world, "bystander", n)
    results = await asyncio.gather(*(s.call_tool(call("count")) for s in by))
    assert all(json.loads(r.text) == {"rows": 1} for r in results)
    verdicts = await asyncio.gather(*(s.verify("", []) for s in by))
    assert all(v.result == "complete" for v in verdicts), verdicts
    for s in by:
        await s.close()


async def test_hung_calls_cost_their_own_episodes_only(world: Any) -> None:
    faulty = await sessions(world, "faulty", 8)
    await faulty[0].call_tool(call("count"))  # built and imported
    await bystanders_complete(world, 1)
    hung = [timed(s.call_tool(call("hang"))) for s in faulty[:5]]
    slow = [timed(s.call_tool(call("slow", seconds=0.4, tag=f"s{i}"))) for i, s in enumerate(faulty[5:])]
    results: list[Any] = await asyncio.gather(*hung, *slow, bystanders_complete(world))
    hung_s = [elapsed for elapsed, _ in results[:5]]
    for _, result in results[:5]:
        assert isinstance(result, WorldError) and "did not finish within 1.5s" in str(result)
    # Each ends at its own timeout, together: one after another, they would end 1.5 s apart (no clock bound:
    # a busy machine delays them all alike).
    assert max(hung_s) - min(hung_s) < 1.5, hung_s
    for i, (elapsed, result) in enumerate(results[5:8]):  # not queued behind the hung ones: done before them
        assert json.loads(result.text) == {"tag": f"s{i}"} and elapsed < min(hung_s), (elapsed, hung_s)
    again = await faulty[0].call_tool(call("count"))  # the hung worker was retired; the scenario goes on
    assert json.loads(again.text) == {"rows": 1}
    for s in faulty:
        await s.close()


async def test_slow_calls_of_one_scenario_run_side_by_side(world: Any) -> None:
    faulty = await sessions(world, "faulty", 10)
    await faulty[0].call_tool(call("count"))
    one, _ = await timed(faulty[0].call_tool(call("slow", seconds=0.5, tag="alone")))  # the control, measured here
    started = time.perf_counter()
    results = await asyncio.gather(*(s.call_tool(call("slow", seconds=0.5, tag=f"t{i}")) for i, s in enumerate(faulty)))
    elapsed = time.perf_counter() - started
    assert [json.loads(r.text)["tag"] for r in results] == [f"t{i}" for i in range(10)]
    assert elapsed < 4 * one, (elapsed, one)  # one after another would take 10 times one call
    for s in faulty:
        await s.close()


@pytest.mark.parametrize("culprit", ["crash", "exit_now"])
async def test_a_call_that_ends_its_worker_costs_its_own_episode(world: Any, culprit: str) -> None:
    faulty = await sessions(world, "faulty", 6)
    await faulty[0].call_tool(call("count"))
    calls = [faulty[0].call_tool(call(culprit)),
             *(s.call_tool(call("slow", seconds=0.2, tag=f"b{i}")) for i, s in enumerate(faulty[1:]))]
    results: list[Any] = await asyncio.gather(*calls, bystanders_complete(world), return_exceptions=True)
    assert isinstance(results[0], WorldError), results[0]
    assert [json.loads(r.text)["tag"] for r in results[1:6]] == [f"b{i}" for i in range(5)], results
    for s in faulty:
        await s.close()


async def test_a_template_cannot_be_changed_by_the_code_that_imported_against_it(world: Any) -> None:
    faulty = await sessions(world, "faulty", 2)
    attempts = json.loads((await faulty[0].call_tool(call("poison"))).text)
    # Every route is refused by the OS (the descriptors from the import now point at /dev/null), except the
    # shared mapping, which now writes into the deleted build copy: nothing any episode or verifier reads.
    assert {k: v.split(":")[0] for k, v in attempts.items() if k not in ("mmap", "proc_fd")} == dict.fromkeys(
        ["fd", "dup", "sqlite", "reopen", "attach", "attach_uri"], "blocked"), attempts
    assert attempts["proc_fd"] in ("blocked: PermissionError", "done: a character device"), attempts  # /dev/null
    fresh = (await sessions(world, "faulty", 1))[0]
    assert json.loads((await fresh.call_tool(call("count"))).text) == {"rows": 1}
    verdict = await fresh.verify("", [])
    assert verdict.result == "complete" and verdict.detail["initial"] == ["seed"], verdict
    template = fresh.initial_db
    assert ".templates" in str(template) and not str(template).startswith(str(world.workdir / "faulty"))
    with sqlite3.connect(f"file:{template}?mode=ro", uri=True) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM rows")] == ["seed"]
    await bystanders_complete(world)
    for s in [*faulty, fresh]:
        await s.close()


async def test_a_changed_template_is_refused_loudly(world: Any) -> None:
    first = (await sessions(world, "faulty", 1))[0]
    template = first.initial_db
    os.chmod(template, 0o644)
    fd = os.open(template, os.O_WRONLY)  # what no worker can do: the runtime's own user changes it
    os.pwrite(fd, b"tampered", 200)
    os.close(fd)
    with pytest.raises(WorldError, match="changed after it was made"):
        await world.open(next(t for t in world.tasks() if t.scenario == "faulty"), episode_id="after")
    with pytest.raises(WorldError, match="changed after it was made"):
        await first.verify("", [])
    await bystanders_complete(world)
    await first.close()


@pytest.fixture
async def small_disk_world(faults_dir: Path) -> Any:
    w = load_worlds(faults_dir, options=WorldOptions(tool_timeout_s=5, workers=2, world_disk_mib=16))
    yield w
    await w.aclose()


def running(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def mounts(pid: int) -> str:
    return Path(f"/proc/{pid}/mountinfo").read_text()


async def test_a_scenario_that_uses_up_its_descriptors_is_a_world_fault_not_the_agents(world: Any) -> None:
    """Its next handler cannot open an episode's DB and answers 500: the agent did nothing wrong there, so the
    call is a WorldError (its episode leaves the statistics), and the worker is replaced for the next episodes."""
    task = next(t for t in world.tasks() if t.scenario == "faulty")
    leaker = await world.open(task, episode_id="leaker")
    leaked = json.loads((await leaker.call_tool(call("leak"))).text)["leaked"]
    assert 100 < leaked < OPEN_FILES
    opened, failure = [], None
    for i in range(8):  # a call may land on the scenario's other worker, which leaked nothing
        opened.append(await world.open(task, episode_id=f"victim{i}"))  # a fresh DB: no connection is kept for it
        try:
            assert json.loads((await opened[-1].call_tool(call("count"))).text) == {"rows": 1}
        except WorldError as exc:
            failure = exc
            break
    assert failure is not None
    pattern = rf"used up its world worker's file descriptors \(\d+ of {OPEN_FILES} open\)"
    assert re.search(pattern, str(failure)), failure
    fresh = await world.open(task, episode_id="fresh")  # the worker was replaced: the scenario serves again
    assert json.loads((await fresh.call_tool(call("count"))).text) == {"rows": 1}
    await bystanders_complete(world)
    for s in (leaker, fresh, *opened):
        await s.close()


async def test_a_scenario_that_fills_its_disk_fails_its_own_episode(small_disk_world: Any) -> None:
    world = small_disk_world
    faulty = await sessions(world, "faulty", 2)
    assert str(faulty[0].db).startswith("/proc/self/fd/")  # its own tmpfs, reached through a descriptor
    st = os.statvfs(faulty[0].db)
    assert st.f_blocks * st.f_frsize == 16 << 20
    shm_free = os.statvfs(world.workdir).f_bavail
    results: list[Any] = await asyncio.gather(faulty[0].call_tool(call("fill")), bystanders_complete(world),
                                              return_exceptions=True)
    assert isinstance(results[0], WorldError), results[0]
    assert "'faulty' is out of disk space: its files are limited to 16 MiB" in str(results[0])
    assert "--world-disk-mib" in str(results[0]) and results[1] is None
    # The shared tmpfs holding the workdir did not pay for it (other processes may use it: a generous margin).
    assert shm_free - os.statvfs(world.workdir).f_bavail < (8 << 20) // os.statvfs(world.workdir).f_frsize
    more = []
    with pytest.raises(WorldError, match="'faulty' is out of disk space: its files are limited to 16 MiB"):
        for i in range(100):  # the little room left fills with episode DBs, then a clone is refused
            more.append(await world.open(next(t for t in world.tasks() if t.scenario == "faulty"), episode_id=f"m{i}"))
    assert 0 < len(more) < 100
    for s in more:
        await s.close()
    assert json.loads((await faulty[1].call_tool(call("count"))).text) == {"rows": 1}  # others still run
    await faulty[0].close()  # its DB goes: the scenario has room again
    fresh = (await sessions(world, "faulty", 1))[0]
    assert json.loads((await fresh.call_tool(call("count"))).text) == {"rows": 1}
    assert (await fresh.verify("", [])).result == "complete"
    await bystanders_complete(world)
    for s in (faulty[1], fresh):
        await s.close()


async def test_a_scenario_whose_import_fills_its_disk_fails_its_own_episodes(small_disk_world: Any) -> None:
    world = small_disk_world
    results: list[Any] = await asyncio.gather(sessions(world, "filler", 1), bystanders_complete(world),
                                              return_exceptions=True)
    assert isinstance(results[0], WorldError), results[0]
    assert "'filler' cannot run: its build and import filled its disk: its files are limited to 16 MiB" in str(
        results[0])
    assert results[1] is None
    with pytest.raises(WorldError, match="filled its disk"):  # it stays failed, and says why
        await sessions(world, "filler", 1)
    zygote = world.pool.zygote.proc.pid
    assert str(world.workdir / "filler") not in mounts(zygote)  # its tmpfs was let go
    await bystanders_complete(world)


async def test_evicting_or_closing_leaves_no_mount_or_process(faults_dir: Path) -> None:
    world = load_worlds(faults_dir, options=WorldOptions(keep_idle_scenarios=0, world_disk_mib=16))
    try:
        by = (await sessions(world, "bystander", 1))[0]
        zygote = world.pool.zygote.proc.pid
        assert f"{world.workdir / 'bystander'} " in mounts(zygote)  # a tmpfs of its own, in the zygote's namespace
        assert str(world.workdir / "bystander") not in mounts(os.getpid())  # and not in ours
        await by.call_tool(call("count"))
        pids = world.pool.pids()
        await by.close()  # its last episode: evicted (keep_idle_scenarios=0)
        assert world.evictions == 1 and str(world.workdir / "bystander") not in mounts(zygote)
        again = (await sessions(world, "bystander", 1))[0]  # built again, on a tmpfs made anew
        assert f"{world.workdir / 'bystander'} " in mounts(zygote)
        assert json.loads((await again.call_tool(call("count"))).text) == {"rows": 1}
        await again.close()
        pids = sorted({*pids, *world.pool.pids()})
    finally:
        await world.aclose()
    await asyncio.sleep(0.5)  # workers asked to exit are killed within 3 s; the zygote is waited for
    assert [p for p in pids if running(p)] == []


async def test_scenario_files_outlive_a_zygote_that_died(small_disk_world: Any) -> None:
    world = small_disk_world
    faulty = (await sessions(world, "faulty", 1))[0]
    await faulty.call_tool(call("count"))
    old = world.pool.zygote.proc.pid
    os.kill(old, 9)  # its workers die with it; the next call starts another zygote, which joins its namespaces
    await world.pool.zygote.proc.wait()
    with contextlib.suppress(WorldError):
        await faulty.call_tool(call("count"))  # may learn of the death first
    assert json.loads((await faulty.call_tool(call("count"))).text) == {"rows": 1}
    assert world.pool.zygote.proc.pid != old
    assert f"{world.workdir / 'faulty'} " in mounts(world.pool.zygote.proc.pid)
    assert (await faulty.verify("", [])).result == "complete"
    await bystanders_complete(world)
    await faulty.close()


async def test_without_a_mount_namespace_the_quota_is_off_and_said_so(faults_dir: Path) -> None:
    world = load_worlds(faults_dir, options=WorldOptions(unsafe_no_sandbox=True, world_disk_mib=16))
    try:
        by = (await sessions(world, "bystander", 1))[0]
        assert world.pool.quota_off is not None and "unsafe-no-sandbox" in world.pool.quota_off
        assert by.db.is_relative_to(world.workdir)  # as before issue 31: a plain directory in the workdir
        assert json.loads((await by.call_tool(call("count"))).text) == {"rows": 1}
        assert (await by.verify("", [])).result == "complete"
        await by.close()
    finally:
        await world.aclose()


async def test_an_opener_cancelled_while_its_scenario_gets_its_disk_leaves_the_world_usable(faults_dir: Path) -> None:
    world = load_worlds(faults_dir, options=WorldOptions(world_disk_mib=16))
    task = next(t for t in world.tasks() if t.scenario == "bystander")
    try:
        await world.pool.start()
        opening = asyncio.ensure_future(world.open(task, episode_id="cancelled"))
        for _ in range(3):  # into the build: past the zygote's start, at the mount or the spawn
            await asyncio.sleep(0)
        opening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await opening
        by = await world.open(task, episode_id="after")  # the build went on; the control socket is in step
        assert json.loads((await by.call_tool(call("count"))).text) == {"rows": 1}
        assert f"{world.workdir / 'bystander'} " in mounts(world.pool.zygote.proc.pid)
        await by.close()
    finally:
        await world.aclose()


async def test_an_ended_episode_s_kept_connection_is_closed_and_its_disk_given_back(small_disk_world: Any) -> None:
    """A worker keeps each episode's connection between calls. Once the episode closes (its DB removed), the
    worker's sweep closes that connection within `SWEEP_S`: until then the removed file's pages stay allocated
    in the scenario's tmpfs, which is its disk quota."""
    from awm_runtime.worlds._host import SWEEP_S

    world = small_disk_world
    session = (await sessions(world, "bystander", 1))[0]
    assert json.loads((await session.call_tool(call("count"))).text) == {"rows": 1}  # its worker keeps the connection
    disk = os.path.dirname(session.db)  # the scenario's tmpfs, reached through a descriptor

    def used() -> int:
        st = os.statvfs(disk)
        return st.f_blocks - st.f_bfree

    before = used()
    file_blocks = -(-os.stat(session.db).st_size // os.statvfs(disk).f_frsize)
    await session.close()
    deadline = time.monotonic() + 3 * SWEEP_S
    while used() > before - file_blocks and time.monotonic() < deadline:  # noqa: ASYNC110 - polling the kernel
        await asyncio.sleep(0.1)
    assert used() <= before - file_blocks, "the ended episode's DB still holds its disk"
