"""`sft`: one TRL tool-calling conversation per episode (`messages` + `tools` as a JSON string)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from awm_runtime.export._read import ExportStats, RunSource
from awm_runtime.export._rows import has_malformed, meta, tools_columns, trl_messages


def sft(records: Iterable[dict[str, Any]], stats: ExportStats, source: RunSource, *,
        outcomes: set[str]) -> Iterator[dict[str, Any]]:
    for record in records:
        stats.records += 1
        messages = record.get("messages") or []
        if record.get("outcome") not in outcomes:
            stats.skipped[f"outcome {record.get('outcome')}"] += 1
        elif not any(m.get("source") == "policy" for m in messages):
            stats.skipped["no policy reply"] += 1
        elif has_malformed(messages):  # TRL would train on the malformed reply: no per-message loss switch
            stats.skipped["malformed policy reply (TRL trains every assistant turn)"] += 1
        elif (tools := tools_columns(record, source)) is None:
            stats.skipped["no tool schemas (run predates tools.jsonl)"] += 1
        else:
            stats.lines += 1
            yield {"messages": trl_messages(messages), **tools, **meta(record, source)}
