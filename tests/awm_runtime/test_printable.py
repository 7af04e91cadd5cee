"""World- and model-controlled text never drives the terminal: control characters are shown escaped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from awm_runtime._printable import escape_event, printable


def test_escape_sequences_are_shown_not_obeyed() -> None:
    hostile = "\x1b[2J\x1b[H\x1b]0;pwned\x07title\x9b31m\u202egnp.exe\r\x08"
    shown = printable(hostile, one_line=True)
    assert shown == "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07title\\x9b31m\\u202egnp.exe\\x0d\\x08"
    assert printable("a\nb\tc") == "a\nb\tc" and printable("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"
    assert printable("naïve 名前 ✓") == "naïve 名前 ✓"
    assert escape_event(None, "", {"event": "x\x1b", "n": 3}) == {"event": "x\\x1b", "n": 3}


@given(st.text())
def test_nothing_printable_lets_a_control_character_through(text: str) -> None:
    shown = printable(text, one_line=True)
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c in "\u202a\u202b\u202c\u202d\u202e" for c in shown)
