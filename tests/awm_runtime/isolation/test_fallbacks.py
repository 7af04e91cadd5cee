"""The boundary's error paths and fallbacks, each provoked for real where this kernel allows it: a Landlock ruleset
of an older ABI, a rule the kernel refuses, a filter it will not load, a probe whose confinement did nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.isolation import Confinement, Containment, Limits, _containment, probe
from awm_runtime.isolation import _landlock as landlock
from awm_runtime.isolation import _seccomp as seccomp
from awm_runtime.isolation._confine import _rules

IN_A_FORK = r'''
import json, os, resource, sys
from awm_runtime.isolation import Confinement, Limits, confine, enter_namespaces, narrow, prepare, yield_cpu
from awm_runtime.isolation import _landlock as landlock, _seccomp as seccomp
allowed, other = sys.argv[1], sys.argv[2]
out = {}

def attempt(name, fn):
    try:
        out[name] = "OPEN " + repr(fn())[:60]
    except OSError as exc:
        out[name] = "blocked " + str(exc)[:120]

def in_fork(body):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        body()
        os.write(write_end, json.dumps(out).encode())
        os._exit(0)
    os.close(write_end)
    out.update(json.loads(os.read(read_end, 65536) or b"{}"))
    os.waitpid(pid, 0)

def read(path):
    with open(path) as fh:
        return fh.read()

def abi_1():  # a ruleset of the first ABI, as an older kernel takes it: a missing path is skipped
    landlock.restrict(1, [(allowed, landlock.READ), ("/no/such/path", landlock.READ), (sys.prefix, landlock.READ)])
    attempt("abi1_allowed", lambda: read(allowed + "/a.txt"))
    attempt("abi1_other", lambda: read(other))

def bad_rule():  # a rule granting nothing is refused by the kernel: no ruleset is applied
    attempt("bad_rule", lambda: landlock.restrict(landlock.abi_version(), [(allowed, 0)]))

def bad_filter():  # a program the kernel will not load
    attempt("bad_filter", lambda: seccomp.load(b"\xff" * 8))

def unsafe():  # rlimits only: files stay open to it, as the flag says
    confine(Confinement(Limits(memory_mb=1024, cpu_s=7)), unsafe=True)
    narrow(Confinement(Limits(memory_mb=1024, cpu_s=7)), unsafe=True)
    out["unsafe_cpu"] = resource.getrlimit(resource.RLIMIT_CPU)[0]
    attempt("unsafe_other", lambda: read(other))

def confined_yield():  # a confined process cannot reach /proc: its own nice value is still lowered
    before = os.nice(0)
    confine(Confinement(Limits(memory_mb=1024, cpu_s=7)))
    yield_cpu(1)
    out["niced"] = os.nice(0) - before

for body in (abi_1, bad_rule, bad_filter, unsafe, confined_yield):
    in_fork(body)
print(json.dumps(out))
'''


def test_fallbacks_and_refusals_in_real_processes(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "a.txt").write_text("yes")
    other = tmp_path / "other.txt"
    other.write_text("no")
    proc = subprocess.run([sys.executable, "-c", IN_A_FORK, str(allowed), str(other)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    assert out["abi1_allowed"] == "OPEN 'yes'" and out["abi1_other"].startswith("blocked")
    assert out["bad_rule"].startswith(f"blocked [Errno 42] landlock add_rule {allowed}")  # ENOMSG
    assert "loading the seccomp filter" in out["bad_filter"]
    assert out["unsafe_cpu"] == 7 and out["unsafe_other"] == "OPEN 'no'"
    assert out["niced"] == 1


PROBE = r'''
import json, sys
from awm_runtime.isolation import _confine, _containment, _seccomp
how = sys.argv[1]
if how == "nothing held":
    _confine.confine = lambda *args, **kwargs: None
elif how == "refused":
    def refuse(*args, **kwargs):
        raise OSError(1, "landlock restrict_self: Operation not permitted")
    _confine.confine = refuse
else:
    _seccomp.available = lambda: False
print(json.dumps(_containment._self_test()))
'''


@pytest.mark.parametrize("how", ["nothing held", "refused", "no libseccomp"])
def test_the_probe_reports_a_confinement_that_did_not_hold(how: str) -> None:
    """The probe's own checks, with confinement made to do nothing (or fail): it never calls that contained."""
    proc = subprocess.run([sys.executable, "-c", PROBE, how], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    found = Containment(landlock_abi=out["landlock_abi"], seccomp=out["seccomp"], error=out.get("error", ""))
    assert not out["seccomp"]
    if how == "nothing held":
        assert out["error"] == ("the confined probe process was not confined: a socket could be created; "
                                "/etc/hostname could be read; a process could be forked")
    elif how == "refused":
        assert out["error"].startswith("confining a process failed: [Errno 1] landlock restrict_self")
    else:
        assert "error" not in out and found.missing == ["seccomp filters with libseccomp (libseccomp2)"]


def test_a_probe_that_cannot_run_is_an_error_not_a_containment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    found = probe.__wrapped__()  # the cached probe of this process is left as it is
    assert found.error == "the containment probe failed (FileNotFoundError)" and not found.seccomp
    monkeypatch.setattr(sys, "platform", "darwin")
    assert probe.__wrapped__().error == "dataset-code containment needs Linux"
    assert _containment.probe is probe


def test_without_libseccomp_no_filter_is_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seccomp, "_lib", lambda: None)
    assert not seccomp.available()
    with pytest.raises(OSError, match="libseccomp is not installed"):
        seccomp.compile_filter(threads=False, pid=os.getpid())


def test_a_system_call_this_architecture_lacks_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seccomp, "REFUSED", (*seccomp.REFUSED, "no_such_system_call"))
    program = seccomp.compile_filter(threads=True, pid=os.getpid())
    assert len(program) % 8 == 0 and program


def test_a_confinement_names_only_what_it_may_touch() -> None:
    spec = Confinement(Limits(memory_mb=64, cpu_s=1), readable=("/r",), writable=("/w",), creatable=("/c",))
    rules = dict(_rules(spec))
    assert rules["/r"] == landlock.READ and rules["/w"] == landlock.READ | landlock.WRITE_EXISTING
    assert rules["/c"] & landlock.MAKE_REG and not rules["/w"] & landlock.MAKE_REG
