"""One episode as an HTML page: its facts, verdict, timings, usage, and the transcript coloured by source.

Every text in a record comes from a dataset, a world or a model, so everything is escaped, and the
page's Content-Security-Policy allows no inline script besides: markup a model wrote stays text.
"""

from __future__ import annotations

import html
import json
from typing import Any

SOURCES = ("policy", "world", "expert", "nudge", "system")
PREVIEW = 110
OPEN_LIMIT = 1500  # a policy or nudge text longer than this starts folded


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW else flat[:PREVIEW - 1] + "…"


def _pretty(text: Any) -> str:
    """JSON texts (tool arguments, results) indented; anything else as it is."""
    if isinstance(text, dict | list):
        return json.dumps(text, indent=2, ensure_ascii=False)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(text)


def _folded(kind: str, summary: str, body: str, *, open_: bool = False) -> str:
    return (f'<details class="{kind}"{" open" if open_ else ""}><summary>{esc(summary)}</summary>'
            f"<pre>{esc(body)}</pre></details>")


def _tool_calls(calls: list[Any]) -> str:
    out = []
    for call in calls:
        fn = (call or {}).get("function") or {}
        name, args = str(fn.get("name", "?")), fn.get("arguments", "")
        out.append(_folded("call", f"call {name}({_preview(str(args))})", _pretty(args)))
    return "".join(out)


def message_html(m: dict[str, Any], index: int) -> str:
    source = str(m.get("source") or "system")
    source = source if source in SOURCES else "system"
    role = str(m.get("role") or "?")
    content = "" if m.get("content") is None else str(m.get("content"))
    head = [f'<span class="badge">{esc(source)}</span>', esc(role)]
    if m.get("turn") is not None:
        head.append(f"turn {esc(m['turn'])}")
    if m.get("name"):
        head.append(esc(m["name"]))
    if m.get("format_error"):
        head.append(f'<span class="flag">format error: {esc(m["format_error"])}</span>')
    if m.get("tool_error"):
        head.append('<span class="flag">tool error</span>')
    body = []
    if m.get("reasoning"):
        body.append(_folded("reasoning", f"reasoning ({len(str(m['reasoning']))} chars)", str(m["reasoning"])))
    if role == "tool":
        label = "expert answer" if source == "expert" else "feedback" if source == "system" else "result"
        body.append(_folded("result", f"{label}: {_preview(content)}", _pretty(content)))
    elif role == "system":
        body.append(_folded("prompt", f"system prompt ({len(content)} chars)", content))
    elif content:
        if len(content) > OPEN_LIMIT:
            body.append(_folded("long", f"{_preview(content)} ({len(content)} chars)", content))
        else:
            body.append(f'<pre class="content">{esc(content)}</pre>')
    if m.get("tool_calls"):
        body.append(_tool_calls(list(m["tool_calls"])))
    if not body:
        body.append('<p class="empty">(empty)</p>')
    return (f'<div class="msg src-{source}" data-source="{source}" data-role="{esc(role)}" id="m{index}">'
            f'<div class="head">{" · ".join(head)}</div>{"".join(body)}</div>')


def _facts(r: dict[str, Any]) -> list[tuple[str, Any]]:
    def ref(x: Any) -> str:
        if not isinstance(x, dict):
            return "none"
        return f"{x.get('alias') or x.get('model')}{' (simulated)' if x.get('simulated') else ''}"

    fe = r.get("format_errors") or {}
    group = r.get("group") if isinstance(r.get("group"), dict) else None
    facts = [("arm", r.get("arm")), ("scenario", r.get("scenario")), ("task", r.get("task_idx")),
             ("repeat", r.get("repeat")), ("seed", r.get("seed")), ("policy", ref(r.get("policy"))),
             ("expert", ref(r.get("expert"))), ("outcome", r.get("outcome")), ("end reason", r.get("end_reason")),
             ("verdict", r.get("verdict")), ("reward", r.get("reward")), ("ask style", r.get("ask_style")),
             ("turns", r.get("turns")), ("tool calls", r.get("tool_calls")), ("tool errors", r.get("tool_errors")),
             ("format errors", ", ".join(f"{k} {v}" for k, v in fe.items()) or 0),
             ("expert calls", r.get("expert_calls")), ("nudges", r.get("nudges"))]
    if group:
        facts += [("group", f"{r.get('group_id')} step {group.get('step')} ({group.get('phase') or 'fixed'}), "
                            f"{'with' if group.get('with_expert') else 'without'} expert"),
                  ("advantage", r.get("advantage"))]
    return [(k, "n/a" if v is None else v) for k, v in facts]


def _yes(value: Any) -> str:
    return "n/a" if value is None else "yes" if value else "no"


def _table(head: tuple[str, ...], rows: list[tuple[Any, ...]], cls: str = "") -> str:
    out = [f'<table class="{cls}"><tr>', *(f"<th>{esc(h)}</th>" for h in head), "</tr>"]
    out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows]
    return "".join(out) + "</table>"


def _fact_class(key: str, value: Any) -> str:
    cls = "v-" + key.replace(" ", "-")
    return f"{cls} o-{esc(value)}" if key == "outcome" else cls


def episode_body(r: dict[str, Any]) -> str:
    """The page body for one record (the page shell adds the header and scripts)."""
    messages = [m for m in r.get("messages") or [] if isinstance(m, dict)]
    counts = {s: sum(1 for m in messages if (m.get("source") or "system") == s) for s in SOURCES}
    facts = "".join(f'<div class="fact"><span>{esc(k)}</span><b class="{_fact_class(k, v)}">{esc(v)}</b></div>'
                    for k, v in _facts(r))
    parts = [f'<h1>Episode {esc(r.get("episode_id"))}</h1>',
             f'<p class="task">{esc(r.get("task"))}</p>', f'<div class="facts">{facts}</div>']
    if r.get("error"):
        err = r["error"] if isinstance(r["error"], dict) else {"message": r["error"]}
        parts.append(f'<p class="error">{esc(err.get("class", "error"))}: {esc(err.get("message"))}</p>')
    if r.get("end_detail"):
        parts.append(f'<p class="note">{esc(r["end_detail"])}</p>')
    legend = "".join(f'<label class="src-{s}"><input type="checkbox" data-toggle="{s}" checked> {s} ({counts[s]})'
                     f"</label>" for s in SOURCES)
    parts.append('<h2>Transcript</h2><div class="legend">' + legend
                 + '<button id="expand">expand all</button><button id="collapse">collapse all</button></div>')
    parts.append('<div id="transcript">' + "".join(message_html(m, i) for i, m in enumerate(messages)) + "</div>")
    if r.get("final_answer"):
        parts.append(f'<h2>Final answer</h2><pre class="content">{esc(r["final_answer"])}</pre>')
    panels = ["<div><h2>Verdict</h2>" + _table(("verdict", "outcome", "end reason"), [
        (r.get("verdict", "n/a"), r.get("outcome", "n/a"), r.get("end_reason") or "n/a")])
        + f'<pre id="verdict-detail">{esc(_pretty(r.get("verdict_detail") or {}))}</pre>'
        + f'<h3>Reward components</h3><pre>{esc(_pretty(r.get("reward_components") or {}))}</pre></div>']
    timings = r.get("timings") or {}
    panels.append("<div><h2>Timings</h2>" + _table(("phase", "seconds"), [
        (k, f"{v:.3f}" if isinstance(v, int | float) else v) for k, v in timings.items() if k != "started_at"],
        "timings") + "</div>")
    usage = r.get("usage") or {}
    usage_rows = [(role, u.get("calls", "n/a"), u.get("prompt_tokens", "n/a"), u.get("completion_tokens", "n/a"),
                   "unknown" if u.get("cost_known") is False or u.get("cost_usd") is None
                   else f"{u['cost_usd']:.6f}") for role, u in usage.items() if isinstance(u, dict)]
    side = "<h2>Token usage</h2>" + _table(("role", "calls", "prompt", "completion", "cost (USD)"), usage_rows, "usage")
    if r.get("expert_answers"):
        side += "<h3>Expert answers</h3>" + _table(("turn", "answered by", "latency (s)", "fallback"), [
            (a.get("turn"), a.get("answered_by"), a.get("latency_s"), _yes(a.get("fallback")))
            for a in r["expert_answers"]])
    if r.get("nudge_log"):
        side += "<h3>Nudges</h3>" + _table(("turn", "rule", "followed by an ask"), [
            (n.get("turn"), n.get("rule"), _yes(n.get("followed_by_ask"))) for n in r["nudge_log"]])
    panels.append(f"<div>{side}</div>")
    parts.append('<div class="panels">' + "".join(panels) + "</div>")
    return "\n".join(parts)
