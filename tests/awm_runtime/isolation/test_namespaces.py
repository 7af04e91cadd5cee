"""Namespaces and mounts as the OS sees them: joining a zygote's namespaces again, and each call refused where the
kernel refuses it (inside a confined process, whose seccomp filter refuses namespace and mount calls, and as an
unprivileged user)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

JOIN = r'''
import json, os, sys, time
from awm_runtime.isolation import enter_namespaces, enter_mount_namespace, join_namespaces, mount_quota
target = sys.argv[1]
ready_r, ready_w = os.pipe()
zygote = os.fork()
if zygote == 0:  # a first zygote: its namespaces, a scenario tmpfs with a file in it; then it lives on
    entered = enter_namespaces()
    enter_mount_namespace()
    os.close(mount_quota(target, 4))
    with open(target + "/episode.db", "w") as fh:
        fh.write("kept")
    os.write(ready_w, entered.encode())
    time.sleep(60)
    os._exit(0)
entered = os.read(ready_r, 100).decode()
names = ("user", "mnt") if entered.startswith("user") else ("mnt",)
fds = [os.open(f"/proc/{zygote}/ns/{n}", os.O_RDONLY) for n in names]
out = {"first": entered, "here": os.path.exists(target + "/episode.db")}
read_end, write_end = os.pipe()
nxt = os.fork()
if nxt == 0:  # the next zygote joins them and finds the scenario's files where they were
    joined = join_namespaces(fds)
    with open(target + "/episode.db") as fh:
        os.write(write_end, json.dumps({"joined": joined, "content": fh.read()}).encode())
    os._exit(0)
os.close(write_end)
out.update(json.loads(os.read(read_end, 4096)))
os.waitpid(nxt, 0)
os.kill(zygote, 9)
os.waitpid(zygote, 0)
print(json.dumps(out))
'''

REFUSED = r'''
import json, os, sys
from awm_runtime.isolation import Confinement, Limits, confine, enter_namespaces, join_namespaces, prepare
from awm_runtime.isolation import enter_mount_namespace, mount_quota, resize_quota
from awm_runtime.isolation._mounts import unmount
target = sys.argv[1]
enter_namespaces()
prepare()
ns = os.open("/proc/self/ns/mnt", os.O_RDONLY)
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    confine(Confinement(Limits(memory_mb=512, cpu_s=10), readable=(target,)))
    out = {"namespaces": enter_namespaces()}
    for name, call in (("mount_ns", enter_mount_namespace), ("quota", lambda: mount_quota(target, 4)),
                       ("resize", lambda: resize_quota(target, 8)), ("unmount", lambda: unmount(target)),
                       ("join", lambda: join_namespaces([ns]))):
        try:
            call()
            out[name] = "OPEN"
        except OSError as exc:
            out[name] = str(exc)
    os.write(write_end, json.dumps(out).encode())
    os._exit(0)
os.close(write_end)
print(os.read(read_end, 8192).decode())
os.waitpid(pid, 0)
'''


def _run(script: str, target: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return out


def test_the_next_zygote_joins_the_namespaces_and_finds_the_scenarios_files(tmp_path: Path) -> None:
    target = tmp_path / "scenario"
    target.mkdir()
    out = _run(JOIN, target)
    assert out["content"] == "kept" and not out["here"]  # the tmpfs is the namespace's, not this one's
    assert out["joined"] == ("user, net, ipc" if out["first"].startswith("user") else "net, ipc")
    assert os.listdir(target) == []


def test_a_confined_process_can_enter_no_namespace_and_mount_nothing(tmp_path: Path) -> None:
    """Every namespace and mount call, refused by the OS with a one-line error (enter_namespaces says "")."""
    target = tmp_path / "scenario"
    target.mkdir()
    out = _run(REFUSED, target)
    assert out["namespaces"] == ""
    assert out["mount_ns"].startswith("[Errno 1] unshare(CLONE_NEWNS)")
    assert out["quota"].startswith(f"[Errno 1] mounting a 4 MiB tmpfs on {target}")
    assert out["resize"].startswith(f"[Errno 1] resizing the tmpfs on {target} to 8 MiB")
    assert out["unmount"].startswith(f"[Errno 1] unmounting {target}")
    assert out["join"].startswith("[Errno 1] setns")
