"""Benchmarks: `awm-bench SUITE` measures and prints JSON plus a table. Not tests.

A suite is a module with `add_arguments(parser)` and `async run(args) -> dict`; the dict is
printed as JSON and may carry `"table": [[metric, value, target], ...]` for the human view.
"""

from __future__ import annotations

SUITES: dict[str, str] = {
    "world": "awm_runtime.bench._world",
    "floors": "awm_runtime.bench._floors",
    "stall": "awm_runtime.bench._stall",
    "routing": "awm_runtime.bench._routing",
    "scale": "awm_runtime.bench._scale",
    "serve": "awm_runtime.bench._serve",
    "awm1k": "awm_runtime.bench._awm1k",
    "long": "awm_runtime.bench._long",
    "real": "awm_runtime.bench._real",
    "tito": "awm_runtime.bench._tito",
}
