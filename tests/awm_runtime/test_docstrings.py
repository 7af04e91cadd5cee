"""The public surface says what it promises: every name in awm_runtime.__all__, every Protocol of the package and
every method of a Protocol has a docstring of its own."""

from __future__ import annotations

import ast
import inspect
import os
from pathlib import Path

import awm_runtime

PACKAGE = Path(awm_runtime.__file__).resolve().parent
NOT_PACKAGE_CODE = ("worlds/builtin/src",)


def _own_doc(obj: object) -> str:
    """The docstring written for `obj`: not inherited, not the signature a dataclass makes up."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    doc = (doc or "").strip()
    name = getattr(obj, "__name__", "")
    return "" if doc.startswith(f"{name}(") else doc


def test_every_public_class_and_function_has_a_docstring() -> None:
    missing = []
    for name in awm_runtime.__all__:
        obj = getattr(awm_runtime, name)
        if (inspect.isclass(obj) or inspect.isroutine(obj)) and not _own_doc(obj):
            missing.append(name)
    assert not missing, f"no docstring: {missing}"


def _protocols() -> list[tuple[str, ast.ClassDef]]:
    """Every class of the package that subclasses typing.Protocol, with its file."""
    out = []
    for folder, _, files in os.walk(PACKAGE, followlinks=True):
        if any(part in Path(folder).as_posix() for part in NOT_PACKAGE_CODE) or "__pycache__" in folder:
            continue
        for name in files:
            if name.endswith(".py"):
                path = Path(folder) / name
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                    if isinstance(node, ast.ClassDef) and any(
                            "Protocol" in ast.unparse(b).split("[")[0] for b in node.bases):
                        out.append((str(path.relative_to(PACKAGE)), node))
    return out


def test_every_protocol_and_protocol_method_has_a_docstring() -> None:
    protocols = _protocols()
    assert {"Policy", "Expert", "World", "Sink", "Transport"} <= {c.name for _, c in protocols}
    missing = []
    for path, cls in protocols:
        if not ast.get_docstring(cls):
            missing.append(f"{path}: {cls.name}")
        for item in cls.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not ast.get_docstring(item):
                missing.append(f"{path}: {cls.name}.{item.name}")
    assert not missing, "no docstring:\n" + "\n".join(missing)
