"""Coverage behind the boundary: only a measured run lets coverage through, and the limits still hold for the code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from coverage import CoverageData

from awm_runtime.isolation import _coverage, scrubbed_env

MEASURED = r'''
import json, os, sys
import coverage
cov = coverage.Coverage(config_file=sys.argv[1] + "/coverage.ini")  # patches fork and os._exit, as ours
cov.start()
from awm_runtime.isolation import Confinement, Limits, confine, enter_namespaces, prepare
from awm_runtime.isolation import _coverage
enter_namespaces()
prepare()
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    confine(Confinement(Limits(memory_mb=1024, cpu_s=10), writable=(sys.argv[1],)))
    out = {"env": list(_coverage.environment()), "rules": list(_coverage.data_rules())}
    try:
        with open(sys.argv[1] + "/target", "ab") as fh:  # writable, but past its size limit of 0 bytes
            fh.write(b"x")
        out["write"] = "OPEN"
    except OSError as exc:
        out["write"] = exc.errno
    os.write(write_end, json.dumps(out).encode())
    _coverage.save()  # as a verifier job does before its reply: written now, not again at exit
    import posix
    os._exit(0 if os._exit is posix._exit else 9)
os.close(write_end)
out = json.loads(os.read(read_end, 4096))
out["status"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print(json.dumps(out))
cov.stop()
cov.save()
'''


def test_unmeasured_the_boundary_lets_nothing_of_coverage_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """A normal run: coverage not imported (or not started), and the variable set by someone else all the same."""
    monkeypatch.setitem(sys.modules, "coverage", None)
    monkeypatch.setenv(_coverage.VARIABLE, "planted")
    exit_before = os._exit
    assert _coverage.environment() == {} and _coverage.data_rules() == ()
    assert _coverage.file_size_hard_limit(0) == 0
    _coverage.keep_measuring()
    assert os._exit is exit_before
    assert _coverage.VARIABLE not in scrubbed_env()


def test_a_measured_confined_process_writes_its_data_and_nothing_more(tmp_path: Path) -> None:
    """Under a Coverage object of its own (the suite's is kept out): the confined fork still cannot write one byte
    past its file-size limit, yet its data file is written as it exits, in the folder the rule names."""
    tmp_path.chmod(0o755)
    (tmp_path / "target").write_bytes(b"")
    (tmp_path / "coverage.ini").write_text(f"[run]\ndata_file = {tmp_path}/.coverage\nbranch = true\n"
                                           f"parallel = true\nsource = {Path(_coverage.__file__).parent}\n"
                                           "patch =\n    fork\n    _exit\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    proc = subprocess.run([sys.executable, "-c", MEASURED, str(tmp_path)], capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.splitlines()[0])
    assert out["write"] == 27 and out["rules"] == [str(tmp_path)]  # EFBIG: the limit holds for the code
    assert out["env"] == []  # no variable to pass on: this process was started by hand, not by the .pth hook
    data = sorted(p.name for p in tmp_path.glob(".coverage*"))
    assert len(data) == 2, data  # the parent's, and the confined child's own (saved once, before it exits)
    assert out["status"] == 0  # its exit then skips coverage's second save
    for name in data:  # both are whole data files, and the child's holds what ran after confinement
        measured = CoverageData(str(tmp_path / name))
        measured.read()
        assert any(f.endswith("_coverage.py") for f in measured.measured_files()), name
    assert (tmp_path / "target").read_bytes() == b""
