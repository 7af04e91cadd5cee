"""The 1,000-scenario set `awm-bench awm1k` runs: the built-in worlds copied with their scenarios renamed.

Scenario `i` is built-in scenario `i mod 6` named `<title> NNNN`, so the set has the shape of the
AgentWorldModel-1K release (1,000 scenarios, 10 tasks each, ~220 MB of JSONL, a FastAPI app of
~40 tools per scenario) and every task keeps a reference solution that passes its verifier. Each
copy is a distinct scenario to the runtime: it is built and imported on its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from awm_runtime.worlds import SOLUTIONS_FILE

STEMS = ("gen_scenario", "gen_tasks", "gen_db", "gen_sample", "gen_envs", "gen_verifier.pure_code", "gen_verifier",
         "gen_spec")


def _rows(src: Path, stem: str) -> dict[str, list[str]]:
    """The rows of one built-in file, as JSON text, grouped by scenario title."""
    key = "name" if stem == "gen_scenario" else "scenario"
    out: dict[str, list[str]] = {}
    with (src / f"{stem}.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                out.setdefault(row[key], []).append(line.rstrip("\n"))
    return out


def write_awm1k_set(src: Path, out: Path, scenarios: int = 1000) -> dict[str, Any]:
    """Write `scenarios` renamed copies of the worlds in `src` to `out`; return what was written.

    Rows are rewritten as text (the title is replaced in the JSON key only), one file at a time, so
    memory stays at one built-in file whatever the size of the set."""
    out.mkdir(parents=True, exist_ok=True)
    titles = [json.loads(line)["name"] for line in (src / "gen_scenario.jsonl").read_text().splitlines() if line]
    names = [f"{titles[i % len(titles)]} {i:04d}" for i in range(scenarios)]
    for stem in STEMS:
        key = "name" if stem == "gen_scenario" else "scenario"
        rows = _rows(src, stem)
        with (out / f"{stem}.jsonl").open("w", encoding="utf-8") as fh:
            for i, name in enumerate(names):
                base = titles[i % len(titles)]
                old, new = json.dumps({key: base})[1:-1], json.dumps({key: name})[1:-1]
                for line in rows.get(base, ()):
                    assert line.count(old) >= 1, (stem, base)
                    fh.write(line.replace(old, new, 1) + "\n")
    solutions = json.loads((src / SOLUTIONS_FILE).read_text(encoding="utf-8"))
    by_title: dict[str, list[dict[str, Any]]] = {}
    for s in solutions:
        by_title.setdefault(s["scenario"], []).append(s)
    with (out / SOLUTIONS_FILE).open("w", encoding="utf-8") as fh:
        fh.write("[\n")
        rows_out = (json.dumps({**s, "scenario": name}) for i, name in enumerate(names)
                    for s in by_title.get(titles[i % len(titles)], ()))
        fh.write(",\n".join(rows_out))
        fh.write("\n]\n")
    size = sum(p.stat().st_size for p in out.glob("gen_*.jsonl"))
    return {"scenarios": scenarios, "tasks_per_scenario": 10, "jsonl_bytes": size, "dir": str(out)}


__all__ = ["write_awm1k_set"]
