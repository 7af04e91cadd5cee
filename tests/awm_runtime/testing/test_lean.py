"""The benchmarks' model server (`python -m awm_runtime.testing`): answers like the simulated oracle,
`--latency` after a request arrives, checks the key, reports its own lateness, and stops on SIGTERM."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.procs import process_gone


@pytest.fixture
def server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "awm_runtime.testing", "--latency", "0.3", "--mode", "sim-oracle",
                             "--key", "k-123", "--lifetime", "60"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:")
        yield url
    finally:
        proc.terminate()
        assert proc.wait(10) == 0  # SIGTERM: a clean stop


def test_answers_after_the_latency_with_the_key_and_reports_its_lateness(server: str) -> None:
    body = {"model": "sim-oracle", "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=10) as client:
        assert client.post(f"{server}/chat/completions", json=body).status_code == 401
        assert client.get(f"{server}/models").status_code == 401
        started = time.monotonic()
        reply = client.post(f"{server}/chat/completions", json=body, headers={"Authorization": "Bearer k-123"})
        elapsed = time.monotonic() - started
        assert reply.status_code == 200
        data = reply.json()
        assert data["object"] == "chat.completion" and data["choices"][0]["message"]["role"] == "assistant"
        assert data["usage"]["total_tokens"] > 0
        assert elapsed >= 0.3  # how late it was beyond that, the server says itself (below): no clock bound here
        models = client.get(f"{server}/models", headers={"Authorization": "Bearer k-123"}).json()
        assert {m["id"] for m in models["data"]} == {"fake-model", "sim-oracle"}
        stats = client.get(server.removesuffix("/v1") + "/stats").json()
    assert stats["replies"] == 1  # the refused requests were not answered
    assert 0 <= stats["late_ms_p50"] <= stats["late_ms_max"] < 1000 * elapsed


def test_it_stops_when_its_parent_does() -> None:
    """A benchmark killed mid-run leaves no model server behind (`--parent`)."""
    launcher = ("import subprocess, sys, os; p = subprocess.Popen([sys.executable, '-m', 'awm_runtime.testing', "
                "'--lifetime', '120', '--parent', str(os.getpid())], stdout=subprocess.PIPE, text=True); "
                "print(p.pid, p.stdout.readline().strip(), flush=True); os._exit(0)")
    out = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True, timeout=60).stdout.split()
    pid, url = int(out[0]), out[1]
    assert url.startswith("http://127.0.0.1:")
    assert process_gone(pid, within_s=10)
