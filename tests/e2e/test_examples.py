"""The examples run as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_embed_episode_example_runs() -> None:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "embed_episode.py")], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "event: episode_ended" in proc.stdout and "outcome=" in proc.stdout
    # stdout is the program's own (the runtime logs to stderr), and it shut down cleanly.
    assert all(line.startswith(("  event: ", "task: ", "outcome=")) for line in proc.stdout.splitlines()), proc.stdout
    assert "Unclosed" not in proc.stderr and "Traceback" not in proc.stderr
