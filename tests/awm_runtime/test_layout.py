"""The package's shape: no import cycles (lazy imports included), light subpackage imports, every import
declared, and a wheel whose only top-level name is awm_runtime."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "awm_runtime"
# Scenario sources are dataset code run in world workers, not part of the package's import graph.
NOT_PACKAGE_CODE = ("worlds/builtin/src",)


def _modules() -> dict[str, Path]:
    """Every module of the package, by dotted name (linked folders such as policies/ included)."""
    out: dict[str, Path] = {}
    for folder, _, files in os.walk(PACKAGE, followlinks=True):
        rel = Path(folder).relative_to(PACKAGE.parent)
        if any(part in rel.as_posix() for part in NOT_PACKAGE_CODE) or "__pycache__" in rel.parts:
            continue
        for name in files:
            if name.endswith(".py"):
                parts = [*rel.parts] + ([] if name == "__init__.py" else [name[:-3]])
                out[".".join(parts)] = Path(folder) / name
    return out


def _imported_names(module: str, path: Path) -> list[str]:
    """Every module named by an import statement anywhere in the file, absolute and dotted."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([base] if base else [])])
            names += [base, *(f"{base}.{a.name}" for a in node.names)]
    return names


def import_graph() -> dict[str, set[str]]:
    """module -> modules its imports execute: the named module and each parent package it runs first.

    The root package is left out: it loads its names lazily (PEP 562), so importing it runs nothing.
    """
    modules = _modules()

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for name in _imported_names(module, path):
            target = owner(name)
            if target is None or target == module:
                continue
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                step = ".".join(parts[:i])
                if step in modules and step != module and not module.startswith(step + "."):
                    graph[module].add(step)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path a -> b -> ... -> a, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_lazy_and_parent_package_imports() -> None:
    graph = import_graph()
    assert "awm_runtime.policies._chat" in graph  # linked folders are walked
    # a function-level import counts, and importing a.b.c runs a.b first
    assert {"awm_runtime.models.sim", "awm_runtime.models.sim._provider"} <= graph["awm_runtime.models._litellm"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_a_subpackage_imports_only_what_it_needs() -> None:
    code = ("import sys, awm_runtime.groups, awm_runtime.report; "
            "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('awm_runtime.')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(eval(out.stdout))
    assert not loaded & {"scheduler", "worlds", "models", "episode", "verifiers"}, loaded


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *(s for extra in project["optional-dependencies"].values() for s in extra)]
    return {re.split(r"[\s<>=!~\[;]", s, maxsplit=1)[0].lower().replace("_", "-") for s in specs}


def test_every_third_party_import_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    missing: dict[str, str] = {}
    for module, path in _modules().items():
        for name in _imported_names(module, path):
            top = name.split(".")[0]
            if not top or top == "awm_runtime" or top in sys.stdlib_module_names or top == "__future__":
                continue
            dists = {d.lower().replace("_", "-") for d in distributions.get(top, [])}
            if not dists:
                missing[top] = f"{module} imports {top!r}, which no installed distribution provides"
            elif not dists & declared:
                missing[top] = f"{module} imports {top!r} (from {sorted(dists)}) but pyproject.toml does not declare it"
    assert not missing, "\n".join(sorted(missing.values()))


def test_the_wheel_installs_only_awm_runtime(tmp_path: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    source = tmp_path / "src"
    for rel in filter(None, tracked.decode().split("\0")):
        dst = source / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_symlink():
            dst.symlink_to(os.readlink(ROOT / rel))
        else:
            shutil.copy2(ROOT / rel, dst)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"awm_runtime"}
    for expected in ("awm_runtime/policies/protocols/_parse.py", "awm_runtime/experts/human_page.html",
                     "awm_runtime/prompts/task.md", "awm_runtime/worlds/builtin/data/gen_envs.jsonl",
                     "awm_runtime/report/report_page.html", "awm_runtime/view/index.js", "awm_runtime/view/view.css"):
        assert expected in names, expected
    assert not [n for n in names if "__pycache__" in n]


def _subpackage(module: str) -> str | None:
    """The subpackage (`awm_runtime.X`) a module belongs to; None for the root package's own modules."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else None


def package_graph() -> dict[str, set[str]]:
    """subpackage -> the other subpackages its modules import (lazy imports included)."""
    out: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        if (mine := _subpackage(module)) is not None:
            out.setdefault(mine, set()).update(t for t in map(_subpackage, targets) if t not in (None, mine))
    return {p: {t for t in ts if t in out} for p, ts in out.items()}


def private_imports() -> tuple[list[str], int]:
    """Imports between subpackages that name another subpackage's private module (`awm_runtime.X._y`, from a
    module outside X), and how many imports between subpackages there are in all: one per imported module."""
    modules = _modules()
    private: list[str] = []
    total = 0
    for module, path in modules.items():
        mine = _subpackage(module)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([base] if base else [])])
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs or [base]
            else:
                continue
            for target in targets:
                theirs = _subpackage(target) if target.startswith("awm_runtime.") else None
                if theirs is None or theirs == mine:
                    continue
                total += 1
                if any(part.startswith("_") for part in target.split(".")[2:]):
                    private.append(f"{module} -> {target}")
    return sorted(private), total


def test_no_package_cycles() -> None:
    cycle = find_cycle(package_graph())
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_no_import_climbs_back_up() -> None:
    """The version has a module of its own, console logging lives below cli, and worlds/ never reads a RunConfig
    (the scheduler translates it): the only arrow between cli and bench is cli -> bench."""
    graph = package_graph()
    assert "cli" not in graph["bench"]
    assert "awm_runtime._config" not in {t for m, ts in import_graph().items() if m.startswith("awm_runtime.worlds")
                                         for t in ts}
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "awm_runtime" and module != "awm_runtime":
                assert "__version__" not in {a.name for a in node.names}, f"{module}: use awm_runtime._version"
            if isinstance(node, ast.Attribute) and node.attr == "__path__":
                assert not (isinstance(node.value, ast.Name) and node.value.id == "awm_runtime"), module


def test_subpackages_meet_at_their_front_doors() -> None:
    """At most 10% of the imports between subpackages reach into another one's private module."""
    private, total = private_imports()
    assert total > 100  # the measure sees the package
    assert len(private) <= total // 10, f"{len(private)} of {total} imports are private:\n" + "\n".join(private)
