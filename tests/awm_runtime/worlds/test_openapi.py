"""The OpenAPI walk without ModelFields gives FastAPI's document, key for key, on every app we serve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi._compat import v2
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from awm_runtime.worlds import load_dataset
from awm_runtime.worlds._dbbuild import build_database
from awm_runtime.worlds._host import ScenarioHost
from awm_runtime.worlds._openapi import fastapi_walk, flat_models_from_model
from tests.awm_runtime.worlds.test_tools import Person
from tests.awm_runtime.worlds.test_tools import _apps as tool_apps
from tests.conftest import FIXTURES

SAMPLES = FIXTURES / "awm1k_samples"
FASTAPI_WALK = fastapi_walk()


def _document(app: Any) -> dict[str, Any]:
    return get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                       description=app.description, routes=app.routes)


def _sample_apps(tmp: Path) -> list[tuple[str, Any]]:
    ds = load_dataset(SAMPLES)
    apps = []
    for name, scenario in ds.scenarios.items():
        if scenario.missing:  # a row missing: the loader refuses to build it
            continue
        db = tmp / f"{name}.db"
        build_database(ds.source(name), db)
        apps.append((name, ScenarioHost(f"openapitest_{name}", ds.source(name).full_code, import_db=str(db)).app))
    return apps


def _apps(tmp: Path) -> list[tuple[str, Any]]:
    """`test_tools`' apps (the built-in worlds, the tiny fixture, the odd shapes), then the complete samples."""
    return [*tool_apps(), *_sample_apps(tmp)]


def test_documents_equal_fastapis_on_every_builtin_sample_and_odd_app(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    apps = _apps(tmp_path)
    assert len(apps) >= 8, [name for name, _ in apps]
    for name, app in apps:
        monkeypatch.setattr(v2, "get_flat_models_from_model", FASTAPI_WALK)
        theirs = _document(app)
        monkeypatch.setattr(v2, "get_flat_models_from_model", flat_models_from_model)
        ours = _document(app)
        assert ours == theirs, name
        assert ours["components"]["schemas"], name  # the walk found models to describe


class Leaf(BaseModel):
    n: int


class Branch(BaseModel):
    leaves: list[Leaf]
    best: Leaf | None = None
    by_name: dict[str, Leaf] = {}


class Tree(BaseModel):
    trunk: Branch
    person: Person


def test_the_walk_finds_the_models_fastapis_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(v2, "get_flat_models_from_model", FASTAPI_WALK)
    theirs = FASTAPI_WALK(Tree, known_models={Tree})
    monkeypatch.setattr(v2, "get_flat_models_from_model", flat_models_from_model)
    ours = flat_models_from_model(Tree, known_models={Tree})
    assert ours == theirs
    assert {Leaf, Branch, Person} <= ours
    assert flat_models_from_model(Leaf) == FASTAPI_WALK(Leaf) == set()


def test_a_scenario_host_puts_the_walk_in_fastapis_place(tmp_path: Path) -> None:
    _sample_apps(tmp_path)
    assert v2.get_flat_models_from_model is flat_models_from_model
