"""Records and events are never lost to their own text: lone surrogates are written as U+FFFD, counted."""

from __future__ import annotations

import io
import json

import orjson
import pytest
import structlog

from awm_runtime import Message
from awm_runtime._encodable import dumps_encodable, encodable, encodable_text
from awm_runtime._types import EpisodeRecord, ModelRef
from awm_runtime.logs import configure_logging, record_line, reset_logging


def test_text_and_values_are_made_encodable_and_counted() -> None:
    assert encodable_text("plain") == ("plain", 0)
    assert encodable_text("caf\u00e9 \ud800 \udfff") == ("caf\u00e9 \ufffd \ufffd", 2)
    value = {"a\ud800": ["x", ("\udc00", 1)], "ok": {"n": 1}}
    clean, n = encodable(value)
    assert n == 2 and clean == {"a\ufffd": ["x", ("\ufffd", 1)], "ok": {"n": 1}}
    same = {"k": ["v"]}
    assert encodable(same)[0] is same  # nothing copied when nothing changes
    assert dumps_encodable({"t": "ok"}) == (b'{"t":"ok"}', 0)
    assert dumps_encodable({"t": "\ud800"}) == ('{"t":"\ufffd"}'.encode(), 1)
    with pytest.raises(orjson.JSONEncodeError):
        dumps_encodable({"t": {1, 2}})  # not a text problem: still an error


def _record(**fields: object) -> EpisodeRecord:
    base: dict[str, object] = dict(episode_id="e1", arm="a", scenario="s", task_idx=0, repeat=0,
                                   policy=ModelRef(alias="p", model="m"), outcome="complete", verdict="complete")
    return EpisodeRecord(**{**base, **fields})  # type: ignore[arg-type]


def test_a_record_whose_text_an_expert_or_judge_echoed_is_written_whole() -> None:
    record = _record(final_answer="done \ud800",
                     messages=[Message(role="user", content="advice: \udbff!", source="expert")],
                     verdict_detail={"reason": "you wrote \ud800"})
    row = json.loads(record_line(record))
    assert row["final_answer"] == "done \ufffd" and row["messages"][0]["content"] == "advice: \ufffd!"
    assert row["verdict_detail"]["reason"] == "you wrote \ufffd" and row["replaced_chars"] == 3
    assert record.replaced_chars == 3
    assert json.loads(record_line(_record()))["replaced_chars"] == 0


def test_an_event_with_a_lone_surrogate_is_logged_and_counted() -> None:
    out = io.StringIO()
    configure_logging(out)
    try:
        structlog.get_logger("t").info("echoed", text="x\ud800", obj=type("O", (), {"__str__": lambda _: "\udc01"})())
    finally:
        reset_logging()
    event = json.loads(out.getvalue())
    assert event["text"] == "x\ufffd" and event["obj"] == "\ufffd" and event["replaced_chars"] == 1
