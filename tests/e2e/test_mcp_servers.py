"""Other people's MCP servers as worlds, run the way their users run them.

mcp-server-sqlite and mcp-server-time (PyPI), @modelcontextprotocol/server-memory and server-everything (npm):
each with its own tasks file, a scripted policy and a judge on loopback model servers, `--repeats 3`. Each task
is written so that a repeat that saw an earlier repeat's state fails: a table that already exists, an entity
the memory graph already holds, a logging switch already on. So all 3 complete only if every repeat started
from a fresh server (one process per episode, `{episode_dir}` for the files it keeps).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from awm_runtime.testing import FakeOpenAI, Reply
from tests.e2e.mcp_tools import npm_tool, pypi_tool
from tests.e2e.test_awm_run import awm_run, records


@dataclass(frozen=True)
class Server:
    """One third-party server: how to start it, its task, the scripted steps, and what the judge checks."""

    command: Callable[[], str]
    task: str
    criteria: list[str]
    steps: list[tuple[str, dict[str, Any]]]
    passes: Callable[[list[tuple[str, str]]], bool]  # (tool, result text) pairs -> complete?
    scenario: str  # named after the server's serverInfo.name
    world_env: tuple[str, ...] = ()


def _result(pairs: list[tuple[str, str]], tool: str) -> str:
    return next((text for name, text in pairs if name == tool), "")


SERVERS = {
    "sqlite": Server(
        command=lambda: f"{pypi_tool('mcp-server-sqlite')} --db-path {{episode_dir}}/shop.db",
        task="Create a coupons table, add the coupon SPRING15 for 15% off, then list the coupons.",
        criteria=["the coupons table was created", "listing the coupons shows exactly SPRING15 at 15"],
        steps=[("create_table", {"query": "CREATE TABLE coupons (code TEXT PRIMARY KEY, pct INTEGER)"}),
               ("write_query", {"query": "INSERT INTO coupons (code, pct) VALUES ('SPRING15', 15)"}),
               ("read_query", {"query": "SELECT code, pct FROM coupons"})],
        passes=lambda pairs: not any("error" in text.lower() for _, text in pairs)
        and _result(pairs, "read_query").count("SPRING15") == 1,
        scenario="sqlite"),
    "time": Server(
        command=lambda: f"{pypi_tool('mcp-server-time')} --local-timezone UTC",
        task="What time is it in Tokyo when it is 09:30 in UTC?",
        criteria=["the answer is 18:30 in Asia/Tokyo"],
        steps=[("convert_time", {"source_timezone": "UTC", "time": "09:30", "target_timezone": "Asia/Tokyo"})],
        passes=lambda pairs: "T18:30" in _result(pairs, "convert_time"),
        scenario="mcp_time"),
    "memory": Server(
        command=lambda: str(npm_tool("mcp-server-memory")),
        world_env=("MEMORY_FILE_PATH={episode_dir}/memory.jsonl",),
        task="Remember that Alice works at Acme, then show the whole knowledge graph.",
        criteria=["a new entity Alice was created", "the graph holds Alice and nothing else"],
        steps=[("create_entities", {"entities": [{"name": "Alice", "entityType": "person",
                                                  "observations": ["works at Acme"]}]}),
               ("read_graph", {})],
        passes=lambda pairs: "Alice" in _result(pairs, "create_entities")
        and len(json.loads(_result(pairs, "read_graph") or "{}").get("entities", [])) == 1,
        scenario="memory_server"),
    "everything": Server(
        command=lambda: str(npm_tool("mcp-server-everything")),
        task="Switch simulated logging on, then add 2 and 3.",
        criteria=["simulated logging was started (not stopped)", "the sum is 5"],
        steps=[("toggle-simulated-logging", {}), ("get-sum", {"a": 2, "b": 3})],
        passes=lambda pairs: _result(pairs, "toggle-simulated-logging").startswith("Started")
        and "is 5" in _result(pairs, "get-sum"),
        scenario="mcp_servers_everything"),
}
BY_TASK = {s.task: s for s in SERVERS.values()}


def scripted_policy(request: dict[str, Any]) -> Reply:
    """Native tool calls: the task's next scripted step, then a final answer."""
    messages = request.get("messages", [])
    task = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
    server = BY_TASK.get(task)
    if server is None:
        return Reply(content="ok")  # the preflight's probes
    done = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
    if done >= len(server.steps):
        return Reply(content="Done.")
    tool, args = server.steps[done]
    return Reply(content=None, tool_calls=[{"id": f"call_{done}", "type": "function",
                                            "function": {"name": tool, "arguments": json.dumps(args)}}])


JUDGED: list[str] = []


def trajectory_judge(request: dict[str, Any]) -> Reply:
    """Complete iff the tool results in the trajectory show the task's criteria met."""
    prompt = str(request["messages"][-1].get("content"))
    if "<<<EPISODE-DATA " not in prompt:
        return Reply(content="ok")
    JUDGED.append(prompt)
    task = prompt.split("Task:\n", 1)[1].split("\n\nCriteria from", 1)[0]
    boundary = prompt.split("\n<<<EPISODE-DATA ", 1)[1].split("\n", 1)[0]
    data = json.loads(prompt.split(f"\n<<<EPISODE-DATA {boundary}\n", 1)[1].split(f"\nEPISODE-DATA {boundary}>>>")[0])
    entries = data["trajectory"]
    pairs = [(call["tool"], after.get("text", "")) for entry, after in zip(entries, [*entries[1:], {}], strict=True)
             for call in entry.get("calls", ()) if after.get("from") == "world"]
    label = "complete" if BY_TASK[task].passes(pairs) else "incomplete"
    return Reply(content=json.dumps({"classification": label, "reason": f"{len(pairs)} calls"}))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with FakeOpenAI(key="policy-key-29", models=("policy-29",), responder=scripted_policy,
                    max_lifetime_s=500) as policy, \
            FakeOpenAI(key="judge-key-29", models=("judge-29",), responder=trajectory_judge,
                       max_lifetime_s=500) as judge:
        config = tmp_path_factory.mktemp("models") / "awm.toml"
        config.write_text(f'[models.scripted]\nmodel = "openai/policy-29"\napi_base = "{policy.url}"\n'
                          f'api_key_env = "POLICY_29"\nprotocol = "native"\n\n'
                          f'[models.loop-judge]\nmodel = "openai/judge-29"\napi_base = "{judge.url}"\n'
                          f'api_key_env = "JUDGE_29"\n')
        yield config


def run_world(server: Server, config: Path, tmp_path: Path, *extra: str) -> tuple[Path, list[dict[str, Any]]]:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task": server.task, "id": "t1", "success_criteria": server.criteria}) + "\n")
    out = tmp_path / "run"
    env_flags = [a for v in server.world_env for a in ("--world-env", v)]
    proc = awm_run("--worlds", f"mcp+stdio:{server.command()}", "--tasks-file", str(tasks), *env_flags,
                   "--policy", "scripted", "--expert", "none", "--judge", "loop-judge", "--config", str(config),
                   "--repeats", "3", "--concurrency", "3", "--out", str(out), "--quiet", *extra,
                   env={"POLICY_29": "policy-key-29", "JUDGE_29": "judge-key-29"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, records(out)


@pytest.mark.parametrize("name", list(SERVERS))
def test_each_repeat_of_a_third_party_server_starts_fresh(name: str, models: Path, tmp_path: Path) -> None:
    server = SERVERS[name]
    JUDGED.clear()
    out, recs = run_world(server, models, tmp_path)
    assert sorted(r["repeat"] for r in recs) == [0, 1, 2]
    assert all(r["scenario"] == server.scenario and r["task_idx"] == 0 for r in recs), [r["scenario"] for r in recs]
    assert all(r["tool_calls"] == len(server.steps) for r in recs)
    assert [r["outcome"] for r in recs] == ["complete"] * 3, [r["verdict_detail"] for r in recs]
    # The judge judged from the trajectory with the task's own criteria, and its tokens are in usage.
    assert len(JUDGED) == 3 and all(server.criteria[0] in p and "SQLite" not in p for p in JUDGED)
    assert all(r["verdict_detail"]["returned"]["judged_from"] == "trajectory" for r in recs)
    assert all(r["usage"]["judge"]["prompt_tokens"] > 0 and r["usage"]["judge"]["calls"] == 1 for r in recs)
    # No application and no user were invented in the policy's system prompt.
    system = recs[0]["messages"][0]["content"]
    assert "MCP server" in system and "user id 1" not in system and "application" not in system
    # The server's stderr is in the run directory, under the scenario's name; nothing was left in /tmp.
    assert (out / "worlds" / f"{server.scenario}.log").is_file()
    assert [p.name for p in (out / "worlds").iterdir()] == [f"{server.scenario}.log"]


def test_without_a_fresh_directory_the_sqlite_repeats_collide(models: Path, tmp_path: Path) -> None:
    """The control: one database file for every episode, and the later repeats find the table there."""
    shared = Server(**{**SERVERS["sqlite"].__dict__,
                       "command": lambda: f"{pypi_tool('mcp-server-sqlite')} --db-path {tmp_path}/shared.db"})
    BY_TASK[shared.task] = shared
    try:
        _, recs = run_world(shared, models, tmp_path, "--concurrency", "1")
    finally:
        BY_TASK[shared.task] = SERVERS["sqlite"]
    assert sorted(r["outcome"] for r in recs) == ["complete", "incomplete", "incomplete"]
