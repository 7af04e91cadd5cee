"""awm-run on a hostile dataset, as the current user and (when that is root) as a new unprivileged user.

Scenario code and verifiers try every route out (tests/e2e/hostile_world.py). A fake key is in the
runtime's environment before any worker starts; listeners on 127.0.0.1 wait for a connection. The
run must show: every route blocked, no key anywhere, nothing received, nothing written outside the
episode's directory, the other scenario's and another run's DBs unread, and a bomb costing at most
its own episode.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.hostile_world import (
    BOMBS,
    CPU_TASK,
    HOSTILE_TASKS,
    KEY_MARK,
    PROBES,
    VERIFIER_TASKS,
    write_hostile_dataset,
)

USER = "awm-hostile"
RUN = "from awm_runtime.cli import run_main; raise SystemExit(run_main())"


@dataclass
class Setup:
    root: Path  # world-readable scratch for this run: dataset, run dir, targets
    user: str | None  # None: the current user
    home: Path
    key: str
    tcp: socket.socket
    udp: socket.socket
    unix: socket.socket
    targets: list[Path]
    other_run_db: Path
    home_file: Path


def _ensure_user() -> None:
    """An ordinary user for the non-root run (created once; `useradd` is idempotent by this check). Another
    test worker may create it between the check and `useradd`: exit 9 (the user exists) is that."""
    try:
        pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], capture_output=True,
                              text=True, check=False)
        if made.returncode not in (0, 9):
            pytest.fail(f"useradd {USER} failed ({made.returncode}): {made.stderr.strip()}")


def _as_user(user: str, cmd: list[str], env: dict[str, str]) -> list[str]:
    """`cmd` as `user`. When the interpreter lives where that user cannot look (pyenv under a 0700 /root),
    run it in a private mount namespace whose /root is an empty tmpfs holding only the interpreter's tree."""
    envs = [f"{k}={v}" for k, v in env.items()]
    plain = ["runuser", "-u", user, "--", "env", "-i", *envs, *cmd]
    probe = subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", "import awm_runtime.cli"],
                           capture_output=True, text=True, check=False)
    if probe.returncode == 0:
        return plain
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/root/"):
        pytest.fail(f"user {user} cannot run {sys.executable} with this checkout (make the venv, the repo and "
                    f"the Python installation readable by other users): {probe.stderr.strip()[-300:]}")
    top = "/root/" + base[len("/root/"):].split("/", 1)[0]
    script = ('set -e; stash=$(mktemp -d); mount --bind "$0" "$stash"; '
              'mount -t tmpfs -o mode=0755,size=1m tmpfs /root; '
              'mkdir -p "$0"; mount --bind "$stash" "$0"; shift; exec "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, top, "_", *plain]


@pytest.fixture(params=["current user", "new user"] if os.geteuid() == 0 else ["current user"])
def setup(request: pytest.FixtureRequest) -> Iterator[Setup]:
    user = USER if request.param == "new user" else None
    if user is not None:
        _ensure_user()
    home = Path(pwd.getpwnam(user).pw_dir if user else os.path.expanduser("~"))
    root = Path(tempfile.mkdtemp(prefix="awm-hostile-", dir="/tmp"))
    root.chmod(0o755)
    token = secrets.token_hex(6)
    home_file = home / f".awm-hostile-secret-{token}"
    home_file.write_text(f"home secret {KEY_MARK}in-home-file")
    other = Path(tempfile.mkdtemp(prefix="awm-world-1-", dir="/dev/shm")) / "other" / "episodes"
    other.mkdir(parents=True)
    other_run_db = other / "ep-other.db"
    with sqlite3.connect(other_run_db) as conn:
        conn.execute("CREATE TABLE secrets (v TEXT)")
        conn.execute("INSERT INTO secrets VALUES (?)", (f"{KEY_MARK}in-other-run",))
    targets = [Path("/tmp") / f"awm-hostile-{token}.txt", home / f"awm-hostile-{token}.txt",
               root / f"written-{token}.txt", Path("/dev/shm") / f"awm-hostile-{token}.txt"]
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    unix_path = root / "listener.sock"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(unix_path))
    unix_path.chmod(0o777)
    unix.listen(8)
    for s in (tcp, udp, unix):
        s.setblocking(False)
    if user is not None:
        for path in (root, other_run_db.parent.parent.parent, home_file):
            shutil.chown(path, user)
        for path in other_run_db.parent.parent.parent.rglob("*"):
            shutil.chown(path, user)
    try:
        yield Setup(root, user, home, f"{KEY_MARK}{secrets.token_hex(16)}", tcp, udp, unix, targets, other_run_db,
                    home_file)
    finally:
        for s in (tcp, udp, unix):
            s.close()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(other_run_db.parent.parent.parent, ignore_errors=True)
        for path in (home_file, *targets):
            path.unlink(missing_ok=True)


def _received(s: Setup) -> list[str]:
    got = []
    for name, sock in (("tcp", s.tcp), ("unix", s.unix)):
        try:
            conn, _ = sock.accept()
            got.append(f"{name} connection")
            conn.close()
        except BlockingIOError:
            pass
    with contextlib.suppress(BlockingIOError):
        got.append(f"udp {s.udp.recv(100)!r}")
    return got


def _run(s: Setup) -> tuple[subprocess.CompletedProcess[str], Path]:
    data = write_hostile_dataset(
        s.root / "data", tcp_port=s.tcp.getsockname()[1], udp_port=s.udp.getsockname()[1],
        unix_path=str(s.root / "listener.sock"), home_file=str(s.home_file), other_run_db=str(s.other_run_db),
        write_targets=[str(t) for t in s.targets])
    out = s.root / "run"
    # The runtime holds the key before any worker starts, and knows it as the judge's key (so it is redacted).
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(s.home), "LANG": "C.UTF-8",
           "HOSTILE_TEST_KEY": s.key, "OPENAI_API_KEY": s.key}
    cmd = [sys.executable, "-c", RUN, "--worlds", str(data), "--solutions", str(data / "solutions.json"),
           "--policy", "sim/oracle", "--expert", "none", "--judge", "gpt-4.1-mini", "--judge-key-env",
           "HOSTILE_TEST_KEY", "--preflight", "off", "--tool-timeout", "20", "--tool-result-chars", "0",
           "--shards", "1", "--concurrency", "8", "--out", str(out), "--quiet"]
    if s.user is not None:
        for path in [s.root, *(s.root / "data").rglob("*")]:
            shutil.chown(path, s.user)
        cmd = _as_user(s.user, cmd, env)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=s.root, check=False)
    return proc, out


def _routes(result: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, value in result.items():
        if isinstance(value, dict) and "blocked" in value:
            yield name, value


def test_hostile_world_and_verifier_code_stay_inside(setup: Setup) -> None:
    s = setup
    proc, out = _run(s)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "containment: landlock v" in proc.stderr and "seccomp" in proc.stderr, proc.stderr[-2000:]
    recs = {(r["scenario"], r["task_idx"]): r for r in
            (json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines())}
    assert len(recs) == len(HOSTILE_TASKS) + 3

    # Every probe route is blocked, and nothing any route returned holds the key.
    for i, probe in enumerate(PROBES):
        rec = recs[("hostile", i)]
        world = [m for m in rec["messages"] if m["source"] == "world"]
        result = json.loads(world[0]["content"])
        assert result, probe
        open_routes = {name: r for name, r in _routes(result) if not r["blocked"]}
        assert not open_routes, (probe, open_routes)
        if probe == "probe_secrets":
            assert result["environ_scan"]["blocked"], result["environ_scan"]
            assert not result["own_env_has_key"]
        assert rec["outcome"] == "complete", (probe, rec["error"])

    # Bombs cost at most their own tool call: the next call in the same episode works, the episode completes.
    for i, bomb in enumerate(BOMBS, start=len(PROBES)):
        rec = recs[("hostile", i)]
        assert rec["outcome"] == "complete", (bomb, rec["error"])
        world = [m for m in rec["messages"] if m["source"] == "world"]
        assert '"count"' in world[-1]["content"], (bomb, world)
        stopped = json.loads(world[0]["content"])
        assert stopped["stopped_by"] == {"memory_bomb": "MemoryError", "fork_bomb": "PermissionError",
                                         "thread_bomb": "RuntimeError"}[bomb], stopped
        assert stopped.get("forked", 0) == 0, stopped
    spin = recs[("hostile", CPU_TASK)]
    assert spin["outcome"] == "error" and "did not finish within 20s" in spin["error"]["message"]

    # Verifiers: the Python layer refuses its attacks; what reaches the OS layer finds nothing.
    for i, name in VERIFIER_TASKS.items():
        rec = recs[("hostile", i)]
        if name == "victim_db":
            assert rec["verdict"] == "complete", rec["verdict_detail"]
        elif name == "memory_bomb":
            # The sandbox ended it at its memory limit: verifier_error (infrastructure), never the agent's.
            assert rec["verdict"] == "verifier_error" and "memory limit" in rec["error"]["message"]
        else:
            assert rec["verdict"] == "judge_error" and "refused" in rec["error"]["message"], (name, rec["error"])
    assert all(recs[("victim", i)]["outcome"] == "complete" for i in range(3))
    assert [r["outcome"] for r in recs.values()].count("error") == 1 + len(VERIFIER_TASKS) - 1

    # Nothing reached the listeners, nothing was written outside, no file of the run holds the key.
    assert _received(s) == []
    assert [t for t in s.targets if t.exists()] == []
    assert not list(out.rglob("hostile.txt"))
    for path in out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert s.key.encode() not in data and b"in-home-file" not in data and b"in-other-run" not in data, path
    with sqlite3.connect(s.other_run_db) as conn:
        assert conn.execute("SELECT count(*) FROM secrets").fetchone() == (1,)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["containment"]["statement"].startswith("landlock v") and not manifest["containment"]["unsafe"]
    assert manifest["containment"]["uid"] == (pwd.getpwnam(s.user).pw_uid if s.user else os.getuid())


def test_unsafe_no_sandbox_is_stated_in_the_header_and_the_manifest(tmp_path: Path) -> None:
    from tests.e2e.test_awm_run import awm_run

    out = tmp_path / "run"
    proc = awm_run("--scenarios", "shopfront*", "--tasks", "0", "--out", str(out), "--quiet", "--unsafe-no-sandbox")
    assert proc.returncode == 0, proc.stderr
    assert "awm-run: containment: NONE (--unsafe-no-sandbox)" in proc.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["containment"]["unsafe"] is True and manifest["config"]["unsafe_no_sandbox"] is True
