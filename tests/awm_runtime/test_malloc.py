"""glibc's mmap threshold, fixed for a long run: a large block keeps its own mapping after a larger one was freed.

Each check runs in its own interpreter: the threshold is process-wide and never undone."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import ctypes, sys
from awm_runtime import _malloc
class MI2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MI2
assert _malloc.applied() is None
if sys.argv[1] == "steady":
    assert _malloc.steady_malloc() is True and _malloc.steady_malloc() is True and _malloc.applied() is True
big = bytearray(8 << 20)  # its own mapping either way; freed, it raises a moving threshold to 8 MiB
del big
before = libc.mallinfo2().hblks
block = bytearray(1 << 20)  # 1 MiB: its own mapping again only if the threshold stayed at 128 KiB
print(libc.mallinfo2().hblks - before)
"""


def _mapped_after_a_larger_free(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_a_fixed_threshold_keeps_large_blocks_off_the_heap() -> None:
    assert _mapped_after_a_larger_free("default") == 0  # glibc's moving threshold: the heap serves it
    assert _mapped_after_a_larger_free("steady") == 1  # fixed: its own mapping, given back when freed
