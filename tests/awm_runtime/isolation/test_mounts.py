"""A size-limited tmpfs in a mount namespace of one's own (issue 31's disk quota), and joining it again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = '''
import json, os, sys
from awm_runtime.isolation import enter_namespaces
from awm_runtime.isolation._mounts import enter_mount_namespace, mount_quota, namespace_fds, unmount
target = sys.argv[1]
out = {"namespaces": enter_namespaces()}
enter_mount_namespace()
fd = mount_quota(target, 16)
os.close(fd)
st = os.statvfs(target)
out["size"] = st.f_blocks * st.f_frsize
written = 0
try:
    with open(os.path.join(target, "fill"), "wb") as f:
        while True:
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1 << 20
except OSError as exc:
    out["error"] = exc.errno
out["written"] = written
out["fds"] = len(namespace_fds(user=out["namespaces"].startswith("user")))
with open("/proc/self/mountinfo") as m:
    out["mounted"] = any(f" {target} " in line for line in m)
unmount(target)
with open("/proc/self/mountinfo") as m:
    out["after"] = any(f" {target} " in line for line in m)
print(json.dumps(out))
'''


def test_a_scenario_tmpfs_is_bounded_private_and_goes_with_unmount(tmp_path: Path) -> None:
    target = tmp_path / "scenario"
    target.mkdir()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(target)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["size"] == 16 << 20 and out["error"] == 28  # ENOSPC at the quota
    assert (15 << 20) <= out["written"] <= (16 << 20)
    assert out["mounted"] and not out["after"]
    assert out["fds"] == (2 if out["namespaces"].startswith("user") else 1)
    # The mount was the child's own: nothing of it here, and what it wrote is not in the directory we see.
    assert f" {target} " not in Path("/proc/self/mountinfo").read_text() and os.listdir(target) == []
