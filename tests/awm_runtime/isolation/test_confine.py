"""The OS boundary on its own: raw Python (no restricted builtins) in a confined process tries every route.

Each test forks a 'zygote' that enters the namespaces as the world zygote and the verifier fork
server do, which forks a child that confines itself as a world worker or a verifier job, runs the
attack and reports on a pipe. Whatever the Python-level layer would have stopped, this layer must
stop on its own.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.isolation import Confinement, Limits, confine, mark_private
from awm_runtime.isolation import _seccomp as seccomp

KEY = "sk-confine-test-0123456789abcdef"


@pytest.fixture(scope="module")
def place() -> Iterator[dict[str, Any]]:
    """Two scenario directories with DBs, a $HOME file, and listeners on 127.0.0.1 (TCP, UDP, a unix socket)."""
    root = Path(tempfile.mkdtemp(prefix="awm-confine-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    for name in ("mine", "other"):
        (root / name / "episodes").mkdir(parents=True)
        with sqlite3.connect(root / name / "episodes" / "ep.db") as conn:
            conn.execute("CREATE TABLE t (v TEXT)")
            conn.execute("INSERT INTO t VALUES (?)", (f"row of {name}",))
    home = Path(os.path.expanduser("~")) / f".awm-confine-{os.getpid()}"
    home.write_text("home secret")
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(root / "sock"))
    unix.listen(4)
    for s in (tcp, udp, unix):
        s.setblocking(False)
    yield {"root": root, "home": home, "tcp": tcp, "udp": udp, "unix": unix}
    for s in (tcp, udp, unix):
        s.close()
    home.unlink(missing_ok=True)
    import shutil

    shutil.rmtree(root, ignore_errors=True)


RUNNER = """
import json, os, pickle, sys, textwrap
from awm_runtime.isolation import confine, enter_namespaces, prepare

spec, body, values = pickle.loads(sys.stdin.buffer.read())
read_end, write_end = os.pipe()
zygote = os.fork()
if zygote == 0:
    try:
        os.close(read_end)
        enter_namespaces()
        prepare()
        pid = os.fork()
        if pid == 0:
            out = {}
            try:
                confine(spec)
                scope = {"result": {}, **values}
                exec(textwrap.dedent(body), scope)
                out = scope["result"]
            except BaseException as exc:
                out = {"confine_failed": repr(exc)}
            os.write(write_end, json.dumps(out).encode())
            os._exit(0)
        os.close(write_end)
        os.waitpid(pid, 0)
    finally:
        os._exit(0)
os.close(write_end)
data = b""
while chunk := os.read(read_end, 1 << 16):
    data += chunk
os.waitpid(zygote, 0)
sys.stdout.write(data.decode() or "{}")
"""


def run_confined(spec: Confinement, body: str, **values: Any) -> dict[str, Any]:
    """Run `body` (which sets `result`) in a child confined by `spec`, under a parent that entered the namespaces.

    The forks start from a fresh, single-threaded interpreter, as the world zygote and the verifier fork server
    do (both are exec'd): forking the test process itself, which earlier tests left with threads (pyarrow's
    allocator, loops of rollouts), can deadlock the child on a lock some other thread held."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # as the exec'd zygotes: no key
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=pickle.dumps((spec, body, values)),
                          capture_output=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return json.loads(proc.stdout or b"{}")


PRELUDE = """
import ctypes, os, socket, sqlite3, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def attempt(name, fn):
    try:
        result[name] = "OPEN " + repr(fn())[:80]
    except BaseException as exc:
        result[name] = "blocked " + type(exc).__name__ + ": " + str(exc)[:80]

def read(path):
    with open(path, "rb") as fh:
        return fh.read(100)

def raw(nr, *args):
    if libc.syscall(nr, *args) < 0:
        raise OSError(ctypes.get_errno(), "refused")
"""
ATTACKS = PRELUDE + """
attempt("environ_of_parent_process", lambda: read(f"/proc/{runtime}/environ"))
attempt("mem_of_parent_process", lambda: read(f"/proc/{runtime}/mem"))
attempt("proc_self", lambda: read("/proc/self/status"))
attempt("ptrace", lambda: raw(101, 16, runtime, 0, 0))
attempt("signal_runtime", lambda: os.kill(runtime, 0))
attempt("signal_group", lambda: os.kill(0, 0))
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", tcp_port), 1))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", udp_port)))
attempt("unix_path", lambda: socket.socket(socket.AF_UNIX).connect(unix_path))
attempt("abstract_unix", lambda: socket.socket(socket.AF_UNIX).connect("\\0awm-test"))
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("home_file", lambda: read(home_file))
attempt("etc_passwd", lambda: read("/etc/passwd"))
attempt("other_db", lambda: read(other_db))
attempt("attach_other", lambda: sqlite3.connect(":memory:").execute(f"ATTACH '{other_db}' AS o").execute(
    "SELECT * FROM o.t").fetchall())
attempt("write_tmp", lambda: open(f"/tmp/awm-confine-escape-{runtime}", "w").write("x"))
attempt("write_outside", lambda: open(outside, "w").write("x"))
attempt("create_beside_my_db", lambda: open(my_dir + "/new.db", "w").write("x"))
attempt("hardlink_other_db", lambda: os.link(other_db, my_dir + "/l.db"))
attempt("symlink", lambda: os.symlink("/etc/shadow", my_dir + "/s"))
attempt("fork", lambda: os.fork())
attempt("subprocess", lambda: subprocess.run(["id"], capture_output=True).stdout)
attempt("execve", lambda: os.execv("/bin/true", ["true"]))
attempt("unshare", lambda: raw(272, 0x10000000))
attempt("io_uring", lambda: raw(425, 8, ctypes.create_string_buffer(120)))
attempt("keyctl", lambda: raw(250, 0, -4, 0))
attempt("bpf", lambda: raw(321, 0, 0, 0))
attempt("open_by_handle_at", lambda: raw(304, -100, 0, 0))
attempt("mount", lambda: raw(165, b"none", b"/tmp", b"tmpfs", 0, 0))
# Growing its own disk quota: a remount of the tmpfs it lives on (issue 31; only the zygote may).
attempt("remount", lambda: raw(165, b"awm-scenario", my_dir.encode(), b"tmpfs", 0x2E, b"size=100000m"))
attempt("x32_getpid", lambda: raw(0x40000000 | 39))
attempt("memory_bomb", lambda: len(bytearray(8 << 30)))
"""

# Expected to work: the process's own DB, signals to itself, threads (world workers only).
WORKS = """
attempt("own_db", lambda: (lambda c: (c.execute("PRAGMA journal_mode=MEMORY").fetchall(),
                                      c.execute("INSERT INTO t VALUES ('x')"),
                                      c.commit(), c.execute("SELECT count(*) FROM t").fetchone()[0])[-1])(
    sqlite3.connect(my_db)))
attempt("signal_self", lambda: os.kill(os.getpid(), 0))
attempt("thread", lambda: (lambda t: (t.start(), t.join()))(threading.Thread(target=lambda: None)))
"""


def _values(place: dict[str, Any]) -> dict[str, Any]:
    root = place["root"]
    return {"runtime": os.getpid(), "tcp_port": place["tcp"].getsockname()[1],
            "udp_port": place["udp"].getsockname()[1], "unix_path": str(root / "sock"),
            "home_file": str(place["home"]), "other_db": str(root / "other" / "episodes" / "ep.db"),
            "my_dir": str(root / "mine" / "episodes"), "my_db": str(root / "mine" / "episodes" / "ep.db"),
            "outside": str(root / "outside.txt")}


def _nothing_received(place: dict[str, Any]) -> None:
    for name in ("tcp", "unix"):
        with pytest.raises(BlockingIOError):
            place[name].accept()
    with pytest.raises(BlockingIOError):
        place["udp"].recv(10)


@pytest.mark.parametrize("kind", ["world worker", "verifier job"])
def test_every_route_is_closed_by_the_os_alone(place: dict[str, Any], kind: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mark_private()
    v = _values(place)
    limits = Limits(memory_mb=1024, cpu_s=30, file_mb=64, open_files=256)
    if kind == "world worker":
        spec = Confinement(limits, readable=(str(place["root"] / "mine"),), writable=(v["my_dir"],), threads=True)
    else:
        spec = Confinement(Limits(memory_mb=1024, cpu_s=30, processes=0), readable=(v["my_db"],))
    result = run_confined(spec, ATTACKS + WORKS, **v)
    assert "confine_failed" not in result, result
    open_routes = {k: r for k, r in result.items() if r.startswith("OPEN") and k not in ("own_db", "signal_self",
                                                                                         "thread")}
    assert open_routes == {}
    assert result["signal_self"].startswith("OPEN")
    if kind == "world worker":
        assert result["own_db"] == "OPEN 2" and result["thread"].startswith("OPEN")
    else:  # a verifier job writes nothing and starts nothing, not even a thread
        assert result["own_db"].startswith("blocked") and result["thread"].startswith("blocked")
    _nothing_received(place)
    assert not Path(v["outside"]).exists() and not (place["root"] / "mine" / "episodes" / "new.db").exists()
    with sqlite3.connect(v["other_db"]) as conn:
        assert conn.execute("SELECT * FROM t").fetchall() == [("row of other",)]


def test_narrowing_after_load_leaves_only_existing_episode_files_writable(place: dict[str, Any]) -> None:
    """A world worker may create files in its scenario directory while it builds; afterwards only write
    existing episode DBs (the template is read-only to it, even though it owns the file)."""
    from awm_runtime.isolation import narrow

    root = place["root"] / "mine"
    v = _values(place)
    body = """
from awm_runtime.isolation import narrow
attempt("create_while_building", lambda: open(scenario_dir + "/initial.db", "w").write("t"))
narrow(final)
attempt("template_after", lambda: open(scenario_dir + "/initial.db", "r+").write("x"))
attempt("create_after", lambda: open(scenario_dir + "/another.db", "w").write("x"))
attempt("episode_after", lambda: open(my_db, "r+b").read(16))
"""
    limits = Limits(memory_mb=1024, cpu_s=30, file_mb=64, open_files=256)
    spec = Confinement(limits, creatable=(str(root),), threads=True)
    final = Confinement(limits, readable=(str(root),), writable=(v["my_dir"],), threads=True)
    assert narrow  # imported where it is used, in the child
    result = run_confined(spec, PRELUDE + body, final=final, scenario_dir=str(root), **v)
    assert result["create_while_building"].startswith("OPEN")
    assert result["template_after"].startswith("blocked") and result["create_after"].startswith("blocked")
    assert result["episode_after"].startswith("OPEN")
    (root / "initial.db").unlink(missing_ok=True)


def test_a_confined_child_has_no_capability_and_an_empty_bounding_set() -> None:
    """The bounding set is emptied once, by the server that forks (`prepare`); each child inherits it, and then
    drops its own capabilities. Seen from inside the child, after `confine`."""
    body = PRELUDE + """
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
data = (Data * 2)()
libc.capget(ctypes.byref(Header(0x20080522, 0)), data)
result["sets"] = [[d.effective, d.permitted, d.inheritable] for d in data]
result["bounding"] = [libc.prctl(23, cap, 0, 0, 0) for cap in range(41)]  # PR_CAPBSET_READ
"""
    out = run_confined(Confinement(Limits(memory_mb=512, cpu_s=5)), body)
    assert out["sets"] == [[0, 0, 0], [0, 0, 0]], out
    assert out["bounding"] == [0] * 41, out


def test_a_seccomp_template_takes_each_process_pid() -> None:
    program = seccomp.template(threads=True)
    assert len(program) % 8 == 0 and seccomp.PID_PLACEHOLDER.to_bytes(4, "little") in program
    mine = seccomp.for_pid(program, 4242)
    assert seccomp.PID_PLACEHOLDER.to_bytes(4, "little") not in mine and len(mine) == len(program)
    with pytest.raises(OSError, match="no pid comparison"):
        seccomp.for_pid(mine, 1)


def test_the_cpu_limit_ends_a_spinning_process() -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the fork
        os.close(read_end)
        confine(Confinement(Limits(memory_mb=512, cpu_s=1)))
        while True:
            pass
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    os.close(read_end)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) in (24, 9)  # SIGXCPU at the soft limit, SIGKILL at hard


@pytest.mark.parametrize("private", [False, True])
def test_a_non_dumpable_process_hides_its_environment_from_its_own_uid(private: bool) -> None:
    """What `mark_private` adds on its own: another process of the same uid, unconfined and without
    capabilities, cannot read /proc/<pid>/environ (it can when the holder is dumpable)."""
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    ready_r, ready_w = os.pipe()
    holder = os.fork()
    if holder == 0:  # pragma: no cover - runs in the fork
        import ctypes
        import time

        if os.geteuid() == 0:
            os.setgid(uid)
            os.setuid(uid)
        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again after the uid change, as a fresh process is
        if private:
            mark_private()
        os.write(ready_w, b"x")
        time.sleep(30)
        os._exit(0)
    try:
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"x"
        out_r, out_w = os.pipe()
        reader = os.fork()
        if reader == 0:  # pragma: no cover - runs in the fork
            code = 0
            try:
                if os.geteuid() == 0:
                    os.setgid(uid)
                    os.setuid(uid)
                with open(f"/proc/{holder}/environ", "rb") as fh:
                    fh.read()
                    code = 1
            except OSError:
                code = 3
            os._exit(code)
        _, status = os.waitpid(reader, 0)
        os.close(out_r)
        os.close(out_w)
        assert os.waitstatus_to_exitcode(status) == (3 if private else 1)
    finally:
        os.kill(holder, 9)
        os.waitpid(holder, 0)
