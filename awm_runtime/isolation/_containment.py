"""What the kernel offers for confining dataset code, found out once at start-up, and the refusal to
run dataset code without it.

`probe()` runs `python -I -m awm_runtime.isolation._containment` once per runtime process: that
throwaway process enters the namespaces and confines itself exactly as a world worker does, then
checks that a socket, a file outside the allowed set and a fork are refused. The statement it
yields goes to the run header and manifest.json.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from functools import cache

from awm_runtime._errors import ConfigError
from awm_runtime.isolation._coverage import environment as coverage_environment

UNSAFE_FLAG = "--unsafe-no-sandbox"


@dataclass(frozen=True, slots=True)
class Containment:
    """The boundary around dataset code in this runtime, as the probe found it."""

    landlock_abi: int = 0
    seccomp: bool = False
    namespaces: str = ""
    uid: int = -1
    error: str = ""
    unsafe: bool = False

    @property
    def missing(self) -> list[str]:
        """The required parts the kernel did not give (namespaces add depth; they are not required)."""
        out = []
        if self.landlock_abi < 1:
            out.append("Landlock (Linux 5.13+, enabled in the kernel's LSM list)")
        if not self.seccomp:
            out.append("seccomp filters with libseccomp (libseccomp2)")
        return out

    @property
    def statement(self) -> str:
        if self.unsafe:
            return (f"NONE ({UNSAFE_FLAG}): dataset code runs as this user, with its network and files; "
                    "rlimits only")
        parts = [f"landlock v{self.landlock_abi}" + ("" if self.landlock_abi >= 4 else " (no TCP rules)"), "seccomp"]
        parts.append(f"{self.namespaces} namespaces" if self.namespaces else "no namespaces")
        parts += ["no capabilities", "rlimits", f"uid {self.uid}"]
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {"statement": self.statement, "landlock_abi": self.landlock_abi, "seccomp": self.seccomp,
                "namespaces": self.namespaces, "uid": self.uid, "unsafe": self.unsafe}


@cache
def probe() -> Containment:
    """Confine a throwaway process as a world worker is confined, and report what held."""
    if not sys.platform.startswith("linux"):
        return Containment(error="dataset-code containment needs Linux")
    try:
        env = {"PATH": os.environ.get("PATH", ""), **coverage_environment()}
        done = subprocess.run([sys.executable, "-I", "-m", "awm_runtime.isolation._containment"],
                              capture_output=True, timeout=60, env=env, check=False)
        data = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return Containment(error=f"the containment probe failed ({type(exc).__name__})")
    return Containment(landlock_abi=int(data.get("landlock_abi", 0)), seccomp=bool(data.get("seccomp")),
                       namespaces=str(data.get("namespaces", "")), uid=int(data.get("uid", -1)),
                       error=str(data.get("error", "")))


def require(unsafe: bool = False) -> Containment:
    """The containment in force, or a ConfigError (one line, naming the flag) when it cannot be had."""
    if unsafe:
        return Containment(unsafe=True)
    found = probe()
    if found.missing or found.error:
        why = "; ".join([*(f"no {m}" for m in found.missing), *([found.error] if found.error else [])])
        raise ConfigError(f"dataset code cannot be confined on this machine ({why}); refusing to run it. "
                          f"Pass {UNSAFE_FLAG} to run it unconfined, with access to your files, network and keys")
    return found


def _self_test() -> dict[str, object]:
    """In the probe process: confine as a world worker, then check the refusals."""
    from awm_runtime.isolation._confine import Confinement, Limits, confine, enter_namespaces
    from awm_runtime.isolation._landlock import abi_version
    from awm_runtime.isolation._seccomp import available

    out: dict[str, object] = {"landlock_abi": abi_version(), "seccomp": False, "namespaces": "", "uid": os.getuid()}
    out["namespaces"] = enter_namespaces()
    out["uid"] = os.getuid()
    if not available() or not out["landlock_abi"]:
        return out
    try:
        confine(Confinement(Limits(memory_mb=1024, cpu_s=30, file_mb=1), threads=True))
    except OSError as exc:
        out["error"] = f"confining a process failed: {exc}"
        return out
    leaks = []
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        leaks.append("a socket could be created")
    except OSError:
        pass
    try:
        os.stat("/etc")
        with open("/etc/hostname", "rb"):
            leaks.append("/etc/hostname could be read")
    except OSError:
        pass
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        leaks.append("a process could be forked")
    except OSError:
        pass
    out["seccomp"] = not any("socket" in x or "fork" in x for x in leaks)
    if leaks:
        out["error"] = "the confined probe process was not confined: " + "; ".join(leaks)
    return out


if __name__ == "__main__":
    print(json.dumps(_self_test()))
