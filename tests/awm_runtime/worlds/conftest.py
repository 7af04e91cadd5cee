"""World fixtures: the hostile `trap` dataset, served with short timeouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from awm_runtime.worlds import WorldOptions, load_worlds
from tests.awm_runtime.worlds.trap_data import write_trap_dataset


@pytest.fixture(scope="session")
def trap_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_trap_dataset(tmp_path_factory.mktemp("trap"))


@pytest.fixture
async def trap_world(trap_dir: Path) -> Any:
    world = load_worlds(trap_dir, options=WorldOptions(tool_timeout_s=3.0, workers=2))
    yield world
    await world.aclose()
