"""A run directory is data, not code (issue #51): awm-fork and awm-run --resume adopt a manifest's worlds,
world environment, endpoints, key variables and model definitions only when this user sealed it on this
machine, or says so on the command line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SOURCE = ("--policy", "sim/novice", "--expert", "sim/oracle", "--scenarios", "codeforge_devtools", "--tasks", "0-3",
          "--checkpoint", "asks", "--preflight", "off")


def command(name: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    code = f"from awm_runtime.cli import {name}_main; raise SystemExit({name}_main())"
    env = {**os.environ, "XDG_CONFIG_HOME": str(home), "AWM_TEST_SECRET_51": "s3cret-value-51"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env)


class Recorder:
    """A TCP listener on 127.0.0.1 that counts every connection made to it (and answers none)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.connections = 0
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run with checkpoints, written (and sealed) by the user whose config home is `home`."""
    root = tmp_path_factory.mktemp("trust")
    home, run = root / "home", root / "run"
    proc = command("run", "--out", str(run), "--quiet", *SOURCE, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return home, run


def forged(run: Path, to: Path, recorder: Recorder, marker: Path) -> Path:
    """A copy of `run` whose manifest names a command world, an environment variable and a foreign endpoint."""
    shutil.copytree(run, to)
    manifest = json.loads((to / "manifest.json").read_text())
    config = manifest["config"]
    config["worlds"] = f"mcp+stdio:{sys.executable} -c \"open({str(marker)!r}, 'w').write('ran')\""
    config["world_env"] = ["AWM_TEST_SECRET_51"]
    config["policy_base"] = recorder.url
    config["policy_key_env"] = "AWM_TEST_SECRET_51"
    config["models"]["policy"]["sim/novice"]["api_base"] = recorder.url
    (to / "manifest.json").write_text(json.dumps(manifest))
    return to


def test_a_forged_run_dir_runs_nothing_contacts_nothing_and_says_why_in_one_line(
        source: tuple[Path, Path], tmp_path: Path, recorder: Recorder) -> None:
    home, run = source
    marker = tmp_path / "ran-a-command"
    shared = forged(run, tmp_path / "shared", recorder, marker)
    proc = command("fork", str(shared), "--at", "asks", "--arm", "ask", "--arm", "solo", "--out",
                   str(tmp_path / "fork"), home=home)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert "was not written by you on this machine" in line and "nothing was run or contacted" in line
    for field in ("worlds \"mcp+stdio:", "(a command to run)", "world_env [\"AWM_TEST_SECRET_51\"]",
                  f"policy_base \"{recorder.url}\" (an endpoint)", "policy_key_env", "models.policy.sim/novice",
                  "pass --trust-manifest"):
        assert field in line, (field, line)
    assert "s3cret-value-51" not in proc.stderr
    assert not marker.exists() and recorder.connections == 0
    assert not (tmp_path / "fork" / "episodes.jsonl").exists()
    # awm-run --resume adopts the same config: refused the same way, and restating a field allows that field
    proc = command("run", "--out", str(shared), "--resume", home=home)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr[-2000:]
    assert "awm-run: error: --resume: " in proc.stderr and "or restate each on the command line" in proc.stderr
    proc = command("run", "--out", str(shared), "--resume", "--worlds", "builtin", home=home)
    assert proc.returncode == 2 and "worlds \"mcp+stdio" not in proc.stderr and "world_env" in proc.stderr
    assert not marker.exists() and recorder.connections == 0


def test_a_run_of_my_own_forks_and_an_edited_one_is_refused(source: tuple[Path, Path], tmp_path: Path) -> None:
    home, run = source
    manifest = json.loads((run / "manifest.json").read_text())
    assert len(manifest["seal"]) == 64 and "seal" not in json.dumps(manifest["config"])
    mine = tmp_path / "mine"
    shutil.copytree(run, mine)
    config = json.loads((mine / "manifest.json").read_text())
    config["config"]["world_env"] = ["HOME"]  # changed since it was sealed: no longer this user's
    (mine / "manifest.json").write_text(json.dumps(config))
    proc = command("fork", str(mine), "--at", "asks", "--arm", "ask", "--arm", "solo", "--out",
                   str(tmp_path / "f1"), home=home)
    assert proc.returncode == 2 and "world_env [\"HOME\"]" in proc.stderr, proc.stderr[-2000:]
    other = tmp_path / "someone-else"  # another user's secret: the seal does not verify, but nothing is risky
    proc = command("fork", str(run), "--at", "asks", "--arm", "ask", "--arm", "solo", "--out",
                   str(tmp_path / "f2"), "--quiet", home=other)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (home / "awm-runtime" / "manifest.key").stat().st_mode & 0o077 == 0  # the secret is the user's alone
    assert not list(run.rglob("manifest.key"))
