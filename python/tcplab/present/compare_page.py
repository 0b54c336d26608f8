"""The HTML page of `tcplab compare`: the sources, the table with differences and the
overlaid figures (inline SVG, captions), in the reports' style; one self-contained file."""

from __future__ import annotations

import datetime as _dt
import html
from collections.abc import Sequence

from .. import __version__
from .chart import Chart
from .compare import Side, Table
from .report import CHECK_JS, CSS
from .style import make_style
from .svg_pool import svgs_of


def table_html(t: Table) -> str:
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in t.head), "</tr>"]
    for row in t.rows:
        out.append("<tr>")
        cells = [html.escape(c) for c in row]
        out.append(f"<td class='t'>{cells[0]}</td>")
        out += [f"<td>{c}</td>" for c in cells[1:]]
        out.append("</tr>")
    out.append("</table>")
    if t.notes:
        out.append(
            "<ul class='meta'>" + "".join(f"<li>{html.escape(n)}</li>" for n in t.notes) + "</ul>"
        )
    return "".join(out)


def compare_page(sides: Sequence[Side], table: Table, charts: Sequence[Chart]) -> str:
    names = " vs ".join(s.label for s in sides)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>tcplab compare: {html.escape(names)}</title><style>{CSS}</style></head><body>",
        f"<h1>tcplab compare: {html.escape(names)}</h1>",
        f"<p class='meta'>generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC by tcplab "
        f"{__version__}</p>",
        "<h2>Sources</h2><table>",
    ]
    for s in sides:
        parts.append(
            f"<tr><th>{s.label}</th><td class='t'><code>{html.escape(s.spec)}</code></td>"
            f"<td class='t'>{html.escape(s.what)}</td></tr>"
        )
    parts.append("</table>")
    parts.append(f"<h2>{html.escape(table.title[:1].upper() + table.title[1:])}</h2>")
    parts.append(table_html(table))
    parts.append("<h2>Figures</h2>")
    style = make_style("web")
    for c, svg in zip(charts, svgs_of(charts, style), strict=True):
        parts.append(
            f"<figure class='fig' data-kind='{html.escape(c.name)}'>{svg}<figcaption><b>"
            f"{html.escape(c.title)}.</b> {html.escape(c.caption)}</figcaption></figure>"
        )
    parts.append(f"<script>{CHECK_JS}</script></body></html>")
    return "\n".join(parts)
