"""awm-report --html as a user runs it, on run directories made by real awm-run subprocesses."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

Awm = Callable[..., subprocess.CompletedProcess[str]]

TWO_ARM_FIGURES = {"fig-completion", "fig-forest", "fig-heatmap", "fig-expert-timing", "fig-followed-by",
                   "fig-distributions", "fig-format-errors", "fig-economics"}


class Page(HTMLParser):
    """The figures (id -> img alt and src), tables (id -> rows of cell texts) and every tag of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.figures: dict[str, dict[str, str]] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._figure: str | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "figure":
            self._figure = a.get("id")
        elif tag == "img" and self._figure:
            self.figures[self._figure] = {"alt": a.get("alt", ""), "src": a.get("src", "")}
        elif tag == "table" and a.get("id"):
            self._table = a["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None
        elif tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def decode_png(src: str) -> Any:
    """The embedded image as pixels; fails unless it is a real PNG of a drawn plot."""
    from matplotlib.image import imread

    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    pixels = imread(io.BytesIO(base64.b64decode(src[len(prefix):], validate=True)), format="png")
    assert pixels.shape[0] > 150 and pixels.shape[1] > 300
    assert pixels.std() > 0.05  # not a blank canvas
    return pixels


def render(awm: Awm, tmp_path: Path, *runs: Path, extra: tuple[str, ...] = ()) -> tuple[str, Page]:
    out = tmp_path / "report.html"
    proc = awm("report", *map(str, runs), "--html", str(out), *extra)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stdout
    text = out.read_text(encoding="utf-8")
    return text, Page(text)


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


def assert_self_contained(text: str, page: Page) -> None:
    assert not [t for t, _ in page.tags if t in ("script", "link", "iframe")]
    assert not re.search(r'(src|href)="(?!data:|#)', text), "the page must not fetch anything"


def test_two_arm_report_has_every_plot_and_the_run_s_numbers(awm: Awm, two_arm_run: Path,
                                                              tmp_path: Path) -> None:
    text, page = render(awm, tmp_path, two_arm_run)
    assert_self_contained(text, page)
    assert set(page.figures) == TWO_ARM_FIGURES
    for fig_id, fig in page.figures.items():
        assert fig["alt"], fig_id
        decode_png(fig["src"])
    recs = records(two_arm_run)
    rows = {r[0]: r for r in page.tables["table-completion"][1:]}
    assert set(rows) == {"solo", "asked"}
    for arm, row in rows.items():
        mine = [r for r in recs if r["arm"] == arm]
        complete = sum(r["outcome"] == "complete" for r in mine)
        accountable = sum(r["outcome"] != "error" for r in mine)
        assert row[3] == str(len(mine))
        assert row[4].startswith(f"{100 * complete / accountable:.1f}% [") and row[4].endswith(f"of {accountable}")
        assert row[5].startswith(f"{100 * complete / len(mine):.1f}% [")
    paired = page.tables["table-forest-0"]
    assert [r[0] for r in paired[1:]] == ["completion (accountable)", "completion (strict)", "reward (accountable)"]
    summary = json.loads((two_arm_run / "summary.json").read_text())
    c = summary["paired"][0]
    assert f"solo → asked (Δ = asked − solo): {c['pairs']} pairs used ({c['tasks']} tasks)" in text
    assert "missing: 0 in solo, 0 in asked; duplicates: 0" in text
    for row, metric in zip(paired[1:], ("completion", "strict_completion", "reward"), strict=True):
        assert row[2].startswith(f"{c[metric + '_p_text']} ({c[metric + '_test']})"), row  # each row names its test
    assert "Method: " in text and "McNemar" in text and "Method" not in page.figures["fig-forest"]["alt"]
    economics = {r[0]: r for r in page.tables["table-economics"][1:]}
    assert set(economics) == {"solo", "asked"}
    assert economics["solo"][1] == "unknown" and "$0" not in text  # simulated models have no price
    assert re.fullmatch(r"[0-9.e-]+ / [0-9.e-]+", economics["asked"][4])  # policy call p50 / p95
    assert economics["asked"][-1] == "not reported"  # simulated models report no reasoning tokens
    assert "Wilson score, n/a" not in text
    expert = {r[0]: r for r in page.tables["table-expert"][1:]}
    assert expert["asked"][1] == str(sum(r["expert_calls"] for r in recs if r["arm"] == "asked")) != "0"
    assert expert["solo"][1] == "0"
    kinds = page.tables["table-format-errors"][0][2:]
    assert kinds and set(kinds) <= {"invalid_json", "unclosed_tag", "missing_name", "unknown_tool",
                                    "schema_violation", "empty_reply", "multiple_calls"}
    assert "Config and versions" in text and json.loads((two_arm_run / "manifest.json").read_text())["run_id"] in text
    assert "Simulated models took part" in text
    assert "fig-groups" not in text


def test_group_report_plots_reward_and_completion_by_step_and_phase(awm: Awm, group_run: Path,
                                                                     tmp_path: Path) -> None:
    text, page = render(awm, tmp_path, group_run)
    assert_self_contained(text, page)
    assert {"fig-completion", "fig-groups", "fig-heatmap", "fig-distributions"} <= set(page.figures)
    assert "fig-forest" not in page.figures and "nothing to pair" in text
    for fig in page.figures.values():
        decode_png(fig["src"])
    steps = json.loads((group_run / "summary.json").read_text())["groups"]["steps"]
    rows = page.tables["table-groups"][1:]
    assert [(int(r[1]), r[2]) for r in rows] == [(s["step"], s["phase"]) for s in steps]
    for row, step in zip(rows, steps, strict=True):
        assert row[4] == f"{step['expert_members'] * step['groups']} : {step['solo_members'] * step['groups']}"


def test_several_runs_are_compared_on_the_tasks_they_share(awm: Awm, two_arm_run: Path, group_run: Path,
                                                           tmp_path: Path) -> None:
    text, page = render(awm, tmp_path, two_arm_run, group_run)
    shared = {(r["scenario"], r["task_idx"]) for r in records(two_arm_run)} & \
        {(r["scenario"], r["task_idx"]) for r in records(group_run)}
    assert len(shared) == 2
    assert f"compared on {len(shared)} shared tasks" in text
    assert "fig-forest-runs" in page.figures and "fig-forest-0" in page.figures
    decode_png(page.figures["fig-forest-runs"]["src"])
    first, second = f"{two_arm_run.parent.name}/run", f"{group_run.parent.name}/run"  # both are named run
    labels = [r[0] for r in page.tables["table-completion"][1:]]
    assert labels == [f"{first}/solo", f"{first}/asked", f"{second}/main"]
    compared = [k for k in page.tables if k.startswith("table-forest-runs-")]
    # each arm of the first run against the second run's arm, on the shared tasks only (a run's own arms are
    # compared within it), the later run's arm minus the earlier's
    assert len(compared) == 2
    assert f"{first}/solo → {second}/main (Δ = {second}/main − {first}/solo)" in text


def test_arm_filter_and_bad_input(awm: Awm, two_arm_run: Path, tmp_path: Path) -> None:
    _text, page = render(awm, tmp_path, two_arm_run, extra=("--arm", "asked"))
    assert [r[0] for r in page.tables["table-completion"][1:]] == ["asked"]
    proc = awm("report", str(tmp_path / "nope"), "--html", str(tmp_path / "x.html"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "episodes.jsonl" in proc.stderr
    proc = awm("report", str(two_arm_run), "--html", str(tmp_path / "missing" / "x.html"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr


def test_without_matplotlib_the_error_names_the_extra(awm: Awm, two_arm_run: Path, tmp_path: Path) -> None:
    code = ("import sys; sys.modules['matplotlib'] = None; from awm_runtime.cli import report_main; "
            "raise SystemExit(report_main())")
    proc = subprocess.run([sys.executable, "-c", code, str(two_arm_run), "--html", str(tmp_path / "r.html")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("awm-report: error: awm-report --html needs matplotlib, which is not installed: "
                                   "pip install 'awm-runtime[report]'")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("flag", [(), ("--json",)])
def test_text_and_json_output_take_several_runs(awm: Awm, two_arm_run: Path, group_run: Path,
                                                flag: tuple[str, ...]) -> None:
    proc = awm("report", str(two_arm_run), str(group_run), *flag)
    assert proc.returncode == 0, proc.stderr
    if flag:
        data = json.loads(proc.stdout)
        assert [d["run"] for d in data["runs"]] == [str(two_arm_run), str(group_run)]
        assert "shared_tasks" in data["runs_compared"]
    else:
        assert str(two_arm_run) in proc.stdout and "awm-run summary" in proc.stdout
        assert "runs compared on" in proc.stdout


def test_in_chromium_at_1280_px_the_forest_plot_fits_and_the_economics_section_shows(
        awm: Awm, two_arm_run: Path, tmp_path: Path) -> None:
    """The report as a reader sees it: headless chromium, a 1280 px window, 100% zoom. The forest plot is
    shown at (nearly) its natural size, so its 10 pt labels stay about 14 px tall; the economics section
    is there. Screenshots go to $AWM_SCREENSHOTS (for the docs) or the test's folder."""
    import asyncio
    import os

    from tests.e2e.test_awm_view import chromium

    out = tmp_path / "report.html"
    assert awm("report", str(two_arm_run), "--html", str(out)).returncode == 0
    shots = Path(os.environ.get("AWM_SCREENSHOTS") or tmp_path)

    async def look() -> dict[str, Any]:
        async with chromium(tmp_path / "profile") as context:
            page = await context.new_page()
            await page.set_viewport_size({"width": 1280, "height": 900})
            await page.goto(out.as_uri())
            forest = page.locator("#fig-forest img")
            sizes = await forest.evaluate("img => [img.naturalWidth, img.clientWidth, document.body.scrollWidth]")
            await page.locator("#fig-forest").screenshot(path=str(shots / "issue26-forest.png"))
            economics = page.locator("#economics")
            visible = await economics.is_visible()
            text = await economics.inner_text()
            await economics.screenshot(path=str(shots / "issue26-economics.png"))
            return {"sizes": sizes, "visible": visible, "text": text}

    seen = asyncio.run(look())
    natural, shown, page_width = seen["sizes"]
    assert natural <= 1040 and shown >= 0.95 * natural, seen["sizes"]  # not shrunk: labels legible at 100%
    assert page_width <= 1280  # nothing forces a horizontal scroll
    assert seen["visible"] and "USD per completed task" in seen["text"] and "policy call p50 / p95" in seen["text"]
    assert (shots / "issue26-forest.png").stat().st_size > 10_000


def test_runs_with_different_seeds_are_compared_unpaired_and_say_so(awm: Awm, tmp_path: Path) -> None:
    runs = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"
        proc = awm("run", "--expert", "none", "--scenarios", "codeforge_devtools", "--tasks", "0-5", "--seed", seed,
                   "--out", str(out), "--quiet", "--preflight", "off")
        assert proc.returncode == 0, proc.stderr[-2000:]
        runs.append(out)
    text, page = render(awm, tmp_path, *runs)
    (table_id,) = [k for k in page.tables if k.startswith("table-forest-runs-")]
    assert "UNPAIRED" in text and "share no (task, repeat, seed)" in text
    assert "the same task, repeat and seed" not in text.split('id="paired"')[1].split("</h4>")[0]
    rows = page.tables[table_id][1:]
    assert "(Fisher exact (unpaired))" in rows[0][2]


def test_duplicate_keys_are_an_error_that_names_them(awm: Awm, two_arm_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "dup"
    shutil.copytree(two_arm_run, copy)
    lines = (copy / "episodes.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    (copy / "episodes.jsonl").write_text("".join(lines) + lines[0])
    for extra in (("--html", str(tmp_path / "x.html")), ()):
        proc = awm("report", str(copy), *extra)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "1 duplicate episode key(s)" in proc.stderr
        assert f"{first['arm']}:{first['scenario']}/{first['task_idx']} repeat {first['repeat']}" in proc.stderr
