"""The public surface: a sorted __all__ of exactly the public names, and no heavy imports."""

from __future__ import annotations

import inspect
import subprocess
import sys

import awm_runtime


def test_all_is_sorted_and_complete() -> None:
    public = {n for n in dir(awm_runtime) if not n.startswith("_")}
    subpackages = {n for n in public if inspect.ismodule(getattr(awm_runtime, n))}
    assert sorted(awm_runtime.__all__) == awm_runtime.__all__
    assert set(awm_runtime.__all__) == public - subpackages


def test_import_does_not_pull_heavy_sdks() -> None:
    code = ("import sys, awm_runtime; "
            "print(sorted(m for m in ('litellm', 'fastapi', 'openai', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_sandbox_servers_import_no_logging_model_or_async_stack() -> None:
    """The verifier server forks a process per verification: what it imports is paid for on every fork."""
    code = ("import sys, awm_runtime.verifiers._fork_server; "
            "print(sorted({'structlog', 'pydantic', 'rich', 'asyncio'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ray_is_imported_only_by_runs_on_a_cluster() -> None:
    code = ("import sys, awm_runtime.scheduler, awm_runtime.testing, awm_runtime.models, awm_runtime.cli._run; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_embedding_program_keeps_its_stdout() -> None:
    """structlog prints to stdout by default; ours goes to stderr unless the program configured structlog. It is
    decided when the program first uses the package (a public name, or a module that logs), not by the bare
    import, which the sandbox servers also make."""
    for use in ("awm_runtime.RunConfig", "import awm_runtime.worlds"):
        code = f"import awm_runtime, structlog; {use}; structlog.get_logger('awm_runtime.x').info('hello_event', n=1)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout == "" and "hello_event" in out.stderr
    mine = ("import structlog, sys; structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout)); "
            "import awm_runtime; awm_runtime.RunConfig; structlog.get_logger().info('theirs')")
    out = subprocess.run([sys.executable, "-c", mine], capture_output=True, text=True, check=True)
    assert "theirs" in out.stdout  # a program's own structlog setup is left alone


def test_load_registry_and_shutdown_are_public() -> None:
    from awm_runtime.models import load_registry, shutdown

    assert awm_runtime.load_registry is load_registry and awm_runtime.shutdown is shutdown
