"""Secret redaction: known keys anywhere in an event, key-shaped strings by pattern."""

from __future__ import annotations

import io
import json
from typing import Any

import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from awm_runtime.logs import REDACTED, Redactor, configure_logging, redact, reset_logging

SECRET = "my-very-secret-key-42"


def test_known_secrets_and_key_shapes_are_removed_from_text() -> None:
    text = (f"auth failed for {SECRET}; header Bearer abcdefgh12345678; sk-proj-ABCDEFGH1234; "
            "url https://x/v1?key=AIzaSyA-1234567890abcdefghij&alt=json api_key='zz-top-secret'")
    out = redact(text, [SECRET])
    for leaked in (SECRET, "abcdefgh12345678", "sk-proj-ABCDEFGH1234", "AIzaSyA-1234567890abcdefghij", "zz-top-secret"):
        assert leaked not in out
    assert out.count(REDACTED) >= 5 and "alt=json" in out


def test_redactor_walks_nested_events_and_secret_fields() -> None:
    r = Redactor([SECRET])
    event = r.scrub({"event": "x", "headers": {"Authorization": "Bearer whatever123"}, "api_key": "k",
                     "nested": [f"a {SECRET} b", {"deep": SECRET}], "prompt_tokens": 12, "error": ValueError(SECRET)})
    dumped = json.dumps(event)
    assert SECRET not in dumped and event["prompt_tokens"] == 12 and event["api_key"] == REDACTED


def test_the_structlog_pipeline_redacts_before_rendering() -> None:
    buf = io.StringIO()
    configure_logging(buf, secrets=[SECRET])
    try:
        structlog.get_logger("t").warning("model_failed", error=f"401 for key {SECRET}", key_in_url=f"?key={SECRET}")
    finally:
        reset_logging()
    line = buf.getvalue()
    assert SECRET not in line and json.loads(line)["event"] == "model_failed"


def test_ordinary_words_that_look_a_bit_like_keys_survive() -> None:
    text = "helpdesk-ticketing-system monkey=business primary_key_column"
    assert redact(text) == text


def test_registered_keys_never_reach_a_run_directory_file(tmp_path: Any) -> None:
    """Redaction in depth: the values of the keys the process holds are scrubbed from every run-directory
    write (episodes.jsonl, manifest/summary JSON, events.jsonl), whatever field they hide in."""
    from awm_runtime.logs import EventStream, RunDirWriter, register_secrets, scrub_secrets

    key = "sk-in-depth-0123456789abcdef"
    register_secrets([key, "short"])
    assert scrub_secrets(f"tool said {key}!") == f"tool said {REDACTED}!"
    assert scrub_secrets("short stays: not a key") == "short stays: not a key"
    writer = RunDirWriter(tmp_path)
    writer.append(json.dumps({"messages": [{"content": f"found {key}"}]}).encode() + b"\n")
    writer.write_json("summary.json", {"note": key, "nested": [{"k": key}]})
    writer.close()
    stream = EventStream(tmp_path / "events.jsonl")
    stream.msg(json.dumps({"event": "x", "text": key}))
    stream.close()
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        assert key.encode() not in data and REDACTED.encode() in data, path


_PIECES = ["sk-", "AIza", "Bearer ", "key=", "api_key: ", SECRET, "abcdefgh12345678", "tokens", "plain", " ", "\x00"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(
    st.sampled_from(["event", "error", "detail", "api_key", "token", "prompt_tokens", "tool", "secret", "n"]),
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.lists(st.sampled_from(_PIECES), max_size=6).map("".join), st.text(max_size=20)),
    max_size=8))
def test_the_flat_event_shortcut_never_skips_what_the_walk_would_change(event: dict[str, Any]) -> None:
    """A flat event is passed through unwalked only when the full walk would leave it as it is."""
    r = Redactor([SECRET])
    if r._clean(event):
        assert r.scrub(dict(event)) == event
    assert SECRET not in json.dumps(r(None, "info", dict(event)))
