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


def test_ray_is_imported_only_by_runs_on_a_cluster() -> None:
    code = ("import sys, awm_runtime.scheduler, awm_runtime.testing, awm_runtime.models, awm_runtime.cli._run; "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
