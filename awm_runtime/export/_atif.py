"""`atif`: one Agent Trajectory Interchange Format (Harbor RFC 0001, ATIF-v1.6) trajectory per episode.

Steps: the system prompt (`system`), the task, nudges and opening advice (`user`), and each policy
reply (`agent`, with its tool calls and, when recorded, the serving engine's completion token ids
and logprobs in `metrics`). What answered a reply — tool results, format-error feedback, the
expert's advice — is that step's `observation`. Each expert consultation is a subagent trajectory:
ATIF-v1.6 keeps subagents in documents of their own, referenced by `session_id` and a
`trajectory_path`; to keep one line per episode they are embedded under the parent's
`extra.subagent_trajectories`, and each ref's `trajectory_path` is a JSON pointer to it
(`#/extra/subagent_trajectories/N`). Verifier output goes to the root `extra`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from awm_runtime._version import __version__
from awm_runtime.export._read import ExportStats, RunSource, action_of
from awm_runtime.policies.protocols import loads_lenient

SCHEMA_VERSION = "ATIF-v1.6"
AGENT_NAME = "awm-runtime"
_POINTER = "#/extra/subagent_trajectories/"


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = loads_lenient(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"unparsed_arguments": raw}


def _tool_calls(m: dict[str, Any], protocol: str | None, call_id: str) -> list[dict[str, Any]]:
    """Native calls as recorded; a text-protocol call under the id the runtime gave it (`call_<n>`)."""
    if m.get("tool_calls"):
        return [{"tool_call_id": c.get("id") or f"{call_id}_{i}",
                 "function_name": (c.get("function") or {}).get("name") or "",
                 "arguments": _arguments((c.get("function") or {}).get("arguments"))}
                for i, c in enumerate(m["tool_calls"])]
    action = action_of(m, protocol)
    if action["kind"] == "call":
        return [{"tool_call_id": call_id, "function_name": action["tool"], "arguments": action["arguments"]}]
    if action["kind"] == "list_tools":
        return [{"tool_call_id": call_id, "function_name": "list_tools", "arguments": {}}]
    return []


def _metrics(m: dict[str, Any]) -> dict[str, Any] | None:
    ids, logprobs = m.get("token_ids"), m.get("logprobs")
    if not ids and not logprobs:
        return None
    out: dict[str, Any] = {}
    if ids:
        out["completion_tokens"] = len(ids)
        out["completion_token_ids"] = ids
    if logprobs and all(isinstance(x, int | float) for x in logprobs):
        out["logprobs"] = logprobs
    return out


def _subagent(record: dict[str, Any], n: int, question: str, advice: str,
              answer: dict[str, Any]) -> dict[str, Any]:
    expert = record.get("expert") or {}
    return {
        "schema_version": SCHEMA_VERSION, "session_id": f"{record['episode_id']}-expert-{n}",
        "agent": {"name": f"{AGENT_NAME}-expert", "version": __version__, "model_name": expert.get("model"),
                  "extra": {"alias": expert.get("alias")}},
        "steps": [{"step_id": 1, "source": "user", "message": question},
                  {"step_id": 2, "source": "agent", "message": advice, "model_name": answer.get("answered_by")}],
        "extra": {k: answer.get(k) for k in ("turn", "answered_by", "latency_s", "fallback")},
    }


class _Builder:
    def __init__(self, record: dict[str, Any], source: RunSource) -> None:
        self.record, self.protocol = record, source.protocol(record)
        self.steps: list[dict[str, Any]] = []
        self.subagents: list[dict[str, Any]] = []
        self.answers = {a.get("turn"): a for a in record.get("expert_answers") or []}
        self.agent: dict[str, Any] | None = None  # the last agent step: what follows answers it
        self.assistants = 0

    def step(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message,
                **{k: v for k, v in fields.items() if v is not None}}
        self.steps.append(step)
        return step

    def consult(self, m: dict[str, Any], question: str) -> dict[str, Any]:
        n = len(self.subagents)
        self.subagents.append(_subagent(self.record, n, question, m.get("content") or "",
                                        self.answers.get(m.get("turn"), {})))
        return {"session_id": self.subagents[-1]["session_id"], "trajectory_path": f"{_POINTER}{n}"}

    def policy(self, m: dict[str, Any]) -> None:
        calls = _tool_calls(m, self.protocol, f"call_{self.assistants}")
        extra = {"format_error": m["format_error"]} if m.get("format_error") else None
        self.agent = self.step("agent", m.get("content") or "", reasoning_content=m.get("reasoning"),
                               tool_calls=calls or None, metrics=_metrics(m), extra=extra)

    def result(self, m: dict[str, Any]) -> None:
        assert self.agent is not None
        calls = self.agent.get("tool_calls") or []
        ids = [c["tool_call_id"] for c in calls]
        result: dict[str, Any] = {"content": m.get("content") or ""}
        call_id = m.get("tool_call_id") if m.get("tool_call_id") in ids else (ids[0] if ids else None)
        if call_id is not None and not any(r.get("source_call_id") == call_id
                                           for r in (self.agent.get("observation") or {}).get("results", [])):
            result["source_call_id"] = call_id
        if m.get("source") == "expert":
            call = next((c for c in calls if c["tool_call_id"] == call_id), None)
            args = call["arguments"] if call else {}
            question = "\n\n".join(str(args[k]) for k in ("question", "context") if args.get(k))
            result["subagent_trajectory_ref"] = [self.consult(m, question)]
        self.agent.setdefault("observation", {"results": []})["results"].append(result)

    def add(self, m: dict[str, Any]) -> None:
        source, role = m.get("source"), m.get("role")
        if role == "assistant":
            self.assistants += 1
        if role == "system":
            self.step("system", m.get("content") or "")
        elif source == "policy":
            self.policy(m)
        elif source == "nudge":
            self.step("user", m.get("content") or "", extra={"awm_source": "nudge"})
        elif source == "expert" and self.agent is None:  # opening advice, before the policy's first reply
            ref = self.consult(m, "(opening advice, before the agent's first action)")
            self.step("user", m.get("content") or "", extra={"awm_source": "expert", "subagent_trajectory_ref": ref})
        elif self.agent is not None and source in ("world", "expert", "system"):
            self.result(m)
        else:  # the task
            self.step("user", m.get("content") or "")


def trajectory(record: dict[str, Any], source: RunSource) -> dict[str, Any]:
    b = _Builder(record, source)
    for m in record.get("messages") or []:
        b.add(m)
    policy = record.get("policy") or {}
    usage = record.get("usage") or {}
    known = all((u or {}).get("cost_known") is not False for u in usage.values())
    cost = sum(float((u or {}).get("cost_usd") or 0.0) for u in usage.values()) if known else None
    pol = usage.get("policy") or {}
    started = (record.get("timings") or {}).get("started_at")
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "session_id": record["episode_id"],
        "agent": {"name": AGENT_NAME, "version": __version__, "model_name": policy.get("model"),
                  "tool_definitions": source.tools(record),
                  "extra": {"alias": policy.get("alias"), "protocol": b.protocol}},
        "steps": b.steps,
        "final_metrics": {"total_prompt_tokens": int(pol.get("prompt_tokens") or 0),
                          "total_completion_tokens": int(pol.get("completion_tokens") or 0),
                          "total_cached_tokens": 0, "total_steps": len(b.steps),
                          "total_cost_usd": None if cost is None else round(cost, 8)},  # None: a call had no price
        "extra": {
            **{k: record.get(k) for k in ("run_id", "arm", "scenario", "task_idx", "repeat", "seed", "task",
                                           "outcome", "verdict", "reward", "ask_style", "group_id", "advantage")},
            "verdict_detail": record.get("verdict_detail"), "reward_components": record.get("reward_components"),
            "format_errors": record.get("format_errors"), "error": record.get("error"),
            "started_at": datetime.fromtimestamp(started, UTC).isoformat() if started else None,
            "subagent_trajectories": b.subagents,
            "expert_usage": usage.get("expert"),
        },
        "notes": "final_metrics counts the policy's tokens; the expert's are in extra.expert_usage",
    }
    return out


def atif(records: Iterable[dict[str, Any]], stats: ExportStats, source: RunSource) -> Iterator[dict[str, Any]]:
    for record in records:
        stats.records += 1
        if not record.get("messages"):
            stats.skipped["no messages (the episode never started)"] += 1
            continue
        stats.lines += 1
        yield trajectory(record, source)


def validate(traj: dict[str, Any], *, where: str = "") -> list[str]:
    """What makes `traj` an invalid ATIF trajectory (RFC 0001): [] when it is valid. Subagents included."""
    problems: list[str] = []
    at = where or str(traj.get("session_id"))
    for key in ("schema_version", "session_id", "agent", "steps"):
        if key not in traj:
            problems.append(f"{at}: no {key}")
    agent = traj.get("agent") or {}
    if not agent.get("name") or not agent.get("version"):
        problems.append(f"{at}: agent needs name and version")
    steps = traj.get("steps") or []
    if not steps:
        problems.append(f"{at}: no steps")
    seen_calls: set[str] = set()
    for i, step in enumerate(steps):
        if step.get("step_id") != i + 1:
            problems.append(f"{at}: steps[{i}].step_id is {step.get('step_id')!r}, expected {i + 1}")
        if step.get("source") not in ("system", "user", "agent"):
            problems.append(f"{at}: step {i + 1} has source {step.get('source')!r}")
        if not isinstance(step.get("message"), str):
            problems.append(f"{at}: step {i + 1} has no message")
        if step.get("source") != "agent":
            problems += [f"{at}: step {i + 1}: {f} is only for agent steps"
                         for f in ("model_name", "reasoning_content", "tool_calls", "metrics") if f in step]
        ids = [c.get("tool_call_id") for c in step.get("tool_calls") or []]
        for c in step.get("tool_calls") or []:
            if not isinstance(c.get("arguments"), dict) or not c.get("function_name"):
                problems.append(f"{at}: step {i + 1}: a tool call needs function_name and object arguments")
        dup = seen_calls & set(ids)
        if dup or len(set(ids)) != len(ids):
            problems.append(f"{at}: step {i + 1}: tool_call_id reused ({sorted(dup) or ids})")
        seen_calls.update(ids)
        for r in (step.get("observation") or {}).get("results", []):
            sid = r.get("source_call_id")
            if sid is not None and sid not in ids:
                problems.append(f"{at}: step {i + 1}: source_call_id {sid!r} matches no tool_call_id of the step")
            for ref in r.get("subagent_trajectory_ref") or []:
                problems += _check_ref(traj, ref, at, i + 1)
    subs = (traj.get("extra") or {}).get("subagent_trajectories") or []
    for n, sub in enumerate(subs):
        problems += validate(sub, where=f"{at}{_POINTER}{n}")
    return problems


def _check_ref(traj: dict[str, Any], ref: dict[str, Any], at: str, step_id: int) -> list[str]:
    path = ref.get("trajectory_path") or ""
    subs = (traj.get("extra") or {}).get("subagent_trajectories") or []
    if not ref.get("session_id"):
        return [f"{at}: step {step_id}: a subagent ref needs a session_id (v1.6)"]
    if path.startswith(_POINTER):
        n = int(path[len(_POINTER):])
        if n >= len(subs) or subs[n].get("session_id") != ref["session_id"]:
            return [f"{at}: step {step_id}: subagent ref {path} does not resolve to session {ref['session_id']}"]
    return []
