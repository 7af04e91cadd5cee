"""HTML building blocks of the report: escaped tables, figures with captions, sections and notes."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import Any

from awm_runtime.report import _sections as sec


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def figure(fig_id: str, png: bytes, alt: str, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="{esc(fig_id)}"><img alt="{esc(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def _numeric(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    text = str(value)
    return text == sec.NA or (bool(text) and (text[0].isdigit() or text[0] in "+-<"))


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, table_id: str = "", text_cols: int = 0) -> str:
    """An escaped HTML table; all-numeric columns align right, the last `text_cols` columns are monospace."""
    width = len(head)
    numeric = [bool(rows) and all(_numeric(r[i]) for r in rows if i < len(r)) for i in range(width)]
    attr = f' id="{esc(table_id)}"' if table_id else ""
    out = [f"<table{attr}><thead><tr>",
           *(f'<th class="num">{esc(h)}</th>' if numeric[i] else f"<th>{esc(h)}</th>" for i, h in enumerate(head)),
           "</tr></thead><tbody>"]
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            cls = "text" if text_cols and i >= width - text_cols else "num" if numeric[i] else ""
            cells.append(f'<td class="{cls}">{esc(c)}</td>' if cls else f"<td>{esc(c)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def section(sec_id: str, title: str, *parts: str) -> str:
    return f'<section id="{esc(sec_id)}"><h2>{esc(title)}</h2>' + "".join(parts) + "</section>"


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'
