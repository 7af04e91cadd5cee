"""Text from worlds and models made safe for a terminal: control characters shown escaped, never obeyed."""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), and the bidirectional overrides
# and isolates that reorder what a terminal shows (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: Any, *, one_line: bool = False) -> str:
    """`text` with every control character as a visible escape (`\\x1b`, `\\u202e`). `one_line`: newlines and
    tabs too, for table cells and one-line messages."""
    text = str(text)
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, text)


def escape_event(_logger: Any, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog processor for terminal output: every string value made `printable`."""
    return {k: printable(v) if isinstance(v, str) else v for k, v in event.items()}
