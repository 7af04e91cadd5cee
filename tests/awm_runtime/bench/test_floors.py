"""`awm-bench floors`: a known CPU cost injected into one boundary path moves that path's ratio by its share.

Ratios only, never absolute times: floor and cost are measured back to back in one process, so a loaded or
slower machine scales both. Counts are small (a smoke run, not a measurement); the injection is several times
each floor, so its share stands well above the noise of a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest

from awm_runtime.bench import SUITES
from awm_runtime.bench._floors import KINDS, add_arguments, run

SMALL = ["--calls", "60", "--verifies", "20", "--model-calls", "60", "--resets", "20", "--episodes", "2"]


def _run(*extra: str) -> dict[str, Any]:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return asyncio.run(run(p.parse_args([*SMALL, *extra])))


@pytest.fixture(scope="module")
def baseline() -> dict[str, Any]:
    return _run()


def test_every_cost_has_its_floor_and_ratio(baseline: dict[str, Any]) -> None:
    assert SUITES["floors"] == "awm_runtime.bench._floors"
    assert baseline["unit"] == "CPU microseconds per call" and baseline["repeats"] == 3
    for kind in KINDS:
        figure = baseline[kind]
        assert figure["cost_us"] > 0 and figure["floor_us"] > 0, kind
        assert figure["ratio"] == pytest.approx(sorted(r["ratio"] for r in figure["repeats"])[1]), kind  # median
        assert len(figure["repeats"]) == 3 and figure["floor_is"] and figure["cost_is"]
    # The episode's floor is the sum of its parts' floors, repeat by repeat: 4 model calls, 3 tool calls, a
    # verification and a reset.
    for i, rep in enumerate(baseline["episode"]["repeats"]):
        parts = (4 * baseline["model_call"]["repeats"][i]["floor_us"] + 3 * baseline["tool_call"]["repeats"][i]
                 ["floor_us"] + baseline["verify"]["repeats"][i]["floor_us"] + baseline["reset"]["repeats"][i]
                 ["floor_us"])
        assert rep["floor_us"] == pytest.approx(parts, abs=1)
    # A boundary costs at least the work it wraps: the tool call and the model call are above their floors.
    assert baseline["tool_call"]["ratio"] > 1 and baseline["model_call"]["ratio"] > 1
    tool = baseline["tool_call"]  # its cost split between this process and the world worker, and our host alone
    assert tool["cost_split_us"]["world"] > 0 and tool["cost_split_us"]["runtime"] > 0 and tool["host_ratio"] > 0
    assert baseline["model_call"]["cost_split_us"]["world"] == 0  # the model server is on neither side
    assert "injected" not in baseline
    rows = {row[0]: row for row in baseline["table"]}
    assert rows["tool call: cost / floor"][2] == "<= 1.5x" and rows["model call: cost / floor"][2] == "<= 3x"
    assert set(baseline["met"]) == {"tool_call", "verify", "model_call"}


def test_injected_cpu_moves_the_ratios_of_its_paths_by_its_share(baseline: dict[str, Any]) -> None:
    floor = baseline["tool_call"]["floor_us"]
    # Five tool-call floors (that ratio should rise by about 5, well above its noise), and at least one whole
    # verification: a verification's cost (a fork each) moves by a few ms between two runs on a busy machine,
    # so only an injection of its own size tells one burn (+1x) from two (+2x) through that noise.
    inject = round(max(5 * floor, baseline["verify"]["cost_us"]))
    injected = _run("--inject-us", str(inject), "--inject-at", "tool_call", "--inject-at", "verify")
    assert injected["injected"] == {"us": inject, "at": ["tool_call", "verify"]}
    share = inject / injected["tool_call"]["floor_us"]
    moved = injected["tool_call"]["ratio"] - baseline["tool_call"]["ratio"]
    assert 0.6 * share < moved < 1.4 * share
    # A verification's ratio is ~15 over a floor of ~0.5 ms, so a run's floor moving by a tenth moves it by 1.5
    # with no change of its cost: its cost is checked to take the injection, and its ratio to rise with it.
    verify = injected["verify"]
    assert 0.5 * inject < verify["cost_us"] - baseline["verify"]["cost_us"] < 1.8 * inject  # burnt once, not twice
    assert verify["ratio"] - baseline["verify"]["ratio"] > 0.5 * inject / verify["floor_us"]
    # The model call's ratio does not take it (the episode's does: it makes three tool calls and a verification).
    share = inject / injected["tool_call"]["floor_us"]
    assert abs(injected["model_call"]["ratio"] - baseline["model_call"]["ratio"]) < 0.5 * share
    # Four injections an episode; two of them stand above what two small runs' episodes differ by on a busy machine.
    assert injected["episode"]["cost_us"] > baseline["episode"]["cost_us"] + 2 * inject


def test_cost_and_floor_run_in_turns_and_only_one_side_counts_a_world() -> None:
    from awm_runtime.bench._floor_parts import Side, interleaved_us

    order: list[str] = []

    def side(name: str) -> Any:
        async def one(i: int) -> None:
            order.append(f"{name}{i}")
        return one

    figures = asyncio.run(interleaved_us(5, Side(side("a")), Side(side("b")), block=2))
    assert order == ["a0", "a1", "b0", "b1", "a2", "a3", "b2", "b3", "a4", "b4"]
    assert len(figures) == 2 and all(there == 0.0 for _, there in figures)

    class World:  # two sides that both count one world's processes would count its CPU twice
        pass

    with pytest.raises(ValueError, match="at most one side"):
        asyncio.run(interleaved_us(1, Side(side("a"), World()), Side(side("b"), World())))
