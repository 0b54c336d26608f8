"""The agreement matrix as a console table, a Markdown table (DIR/matrix.md, to paste into
the README) and a self-contained HTML report (DIR/matrix.html: the table, then per cell the
per-seed values and a figure of the per-second cwnd and goodput of both sides, one column
per seed). Figures are drawn with matplotlib and inlined as SVG through `draw.to_svg`, and
the page carries `report`'s style and figure check, like the study reports.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import field_error
from .matrix import (
    TO_EMULATE,
    TOLERANCE_RATIO,
    MatrixRow,
    MatrixSummary,
    PlannedCase,
    kernel_minutes,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PASS_MARKS = {True: "✓", False: "✗", None: "?"}
#: Marks a cell whose kernel runs came from another kernel, emulator or tcplab (--sim-only).
STALE_MARK = "†"


def _num(value: float | None, fmt: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, fmt)


def _pair(a: float | None, b: float | None, fmt: str, scale: float = 1.0) -> str:
    return f"{_num(a, fmt, scale)} / {_num(b, fmt, scale)}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f} %"


def _retrans(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def _models(row: MatrixRow) -> str:
    parts = [f"{row.models[name]:.3f}" if name in row.models else "-" for name in ("Mathis",)]
    if row.cca == "cubic":
        parts.append(f"{row.models['CUBIC']:.3f}" if "CUBIC" in row.models else "-")
    return " / ".join(parts)


def _seeds(row: MatrixRow) -> str:
    n = len(row.seeds)
    return str(n) if row.n_kernel in (0, n) else f"{row.n_kernel}/{n}"


def _mark(row: MatrixRow) -> str:
    return PASS_MARKS[row.passed] + (STALE_MARK if row.stale else "")


HEADERS = (
    "cca",
    "path",
    "PER",
    "seeds",
    "goodput sim / kernel Mbit/s",
    "ratio",
    "mean RTT sim / kernel ms",
    "ratio",
    "retrans sim / kernel",
    "goodput spread sim / kernel",
    "Mathis / CUBIC model Mbit/s",
    "pass",
)


def row_cells(row: MatrixRow) -> list[str]:
    """One table row (console, Markdown and HTML share it)."""
    return [
        row.cca,
        row.path,
        f"{row.per:g}",
        _seeds(row),
        _pair(row.sim_goodput_bps, row.kernel_goodput_bps, ".3f", 1e-6),
        _num(row.goodput_ratio, ".3f"),
        _pair(row.sim_rtt_ms, row.kernel_rtt_ms, ".1f"),
        _num(row.rtt_ratio, ".3f"),
        f"{_retrans(row.sim_retransmits)} / {_retrans(row.kernel_retransmits)}",
        f"{_pct(row.sim_spread)} / {_pct(row.kernel_spread)}",
        _models(row),
        _mark(row),
    ]


def legend(summary: MatrixSummary) -> list[str]:
    """What the table shows, in sentences (under every rendering of it)."""
    i = summary.identity
    passed, failed, missing = summary.counts
    lines = [
        f"{summary.duration_s:g} s per case, seeds 1..{summary.seeds}; kernel {i.kernel_release}, "
        f"{i.emulator}, tcplab {i.tcplab_version}; kernel runs cached in {summary.db}.",
        "Means over the seeds that have a kernel run; ratio = kernel / simulator. "
        f"Pass ✓: goodput and mean RTT ratios both within 1 ± {TOLERANCE_RATIO:g}; "
        "? : no kernel run. Spread: (max - min) / mean of the per-seed goodput. Mathis "
        "(C = sqrt(3/2)) for every row, CUBIC's response function (RFC 9438 §5.1) for cubic, "
        "at the base RTT.",
        f"{passed} passed, {failed} failed, {missing} without a kernel run.",
    ]
    if any(row.stale for row in summary.rows):
        lines.append(
            f"{STALE_MARK}: kernel runs made by another kernel, emulator or tcplab than this one "
            "(--sim-only takes the newest there is)."
        )
    return lines


def print_matrix(summary: MatrixSummary) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    table = Table(title="simulator vs Linux kernel: agreement matrix")
    for header in HEADERS:
        table.add_column(header, justify="left" if header in ("cca", "path") else "right")
    for row in summary.rows:
        table.add_row(*row_cells(row))
    console.print(table)
    for line in legend(summary):
        console.print(line)


def markdown(summary: MatrixSummary) -> str:
    """The table as Markdown with its legend, ready to paste into the README."""
    lines = [
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(row_cells(row)) + " |" for row in summary.rows]
    return "\n".join([*lines, "", *legend(summary)]) + "\n"


def print_plan(planned: Sequence[PlannedCase], db: str, as_json: bool) -> None:
    """The cases, whether each kernel run is cached, and the kernel time still needed."""
    to_run = sum(p.status in TO_EMULATE for p in planned)
    if as_json:
        doc = {
            "db": db,
            "cases": [
                {
                    "cca": p.case.cca,
                    "path": p.case.path,
                    "per": p.case.per,
                    "seed": p.case.seed,
                    "duration_s": p.case.duration_s,
                    "scenario_hash": p.case.scenario_hash,
                    "kernel": p.status,
                }
                for p in planned
            ],
            "to_run": to_run,
            "kernel_minutes": kernel_minutes(planned),
        }
        print(json.dumps(doc))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    table = Table(title=f"agreement matrix: {len(planned)} cases (kernel runs in {db})")
    for header in ("cca", "path", "PER", "seed", "duration s", "scenario", "kernel run"):
        table.add_column(header, justify="right" if header in ("PER", "seed") else "left")
    for p in planned:
        c = p.case
        table.add_row(
            c.cca,
            c.path,
            f"{c.per:g}",
            str(c.seed),
            f"{c.duration_s:g}",
            c.scenario_hash[:12],
            p.status,
        )
    console.print(table)
    kept = sum(p.status == "stale, kept" for p in planned)
    counts = [f"{sum(p.status == 'cached' for p in planned)} cached"]
    counts += [f"{kept} kept from another kernel or emulator build"] if kept else []
    console.print(
        f"{', '.join(counts)}, {to_run} to run "
        f"(~{kernel_minutes(planned)} min of kernel time, one case at a time)"
    )


# ---------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------


def case_figure(row: MatrixRow) -> Figure:
    """Per seed (columns): per-second cwnd (top) and goodput (bottom), both sides."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(row.seeds)
    fig, axs = plt.subplots(2, n, figsize=(3.6 * n + 0.8, 5.0), squeeze=False, sharex="col")
    fig.suptitle(f"{row.cca}, {row.path}, PER {row.per:g}")
    for col, seed in enumerate(row.seeds):
        top, bottom = axs[0][col], axs[1][col]
        top.plot(seed.t_s, [v / 1e3 for v in seed.sim_cwnd_bytes], lw=1, label="simulator")
        bottom.plot(seed.t_s, [v / 1e6 for v in seed.sim_goodput_series_bps], lw=1)
        if seed.has_kernel:
            kernel_cwnd = [v / 1e3 for v in seed.kernel_cwnd_bytes]
            top.plot(seed.kernel_t_s, kernel_cwnd, lw=1, label="kernel")
            bottom.plot(seed.kernel_t_s, [v / 1e6 for v in seed.kernel_goodput_series_bps], lw=1)
        top.set_title(f"seed {seed.seed}" + ("" if seed.has_kernel else " (no kernel run)"))
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        if col == 0:
            top.set_ylabel("cwnd (kB)")
            bottom.set_ylabel("goodput (Mbit/s)")
            top.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _table_html(
    headers: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int = 0
) -> str:
    """A table; the first `text_columns` columns are left-aligned text (names)."""
    out = ["<table><tr>", *(f"<th>{html.escape(h)}</th>" for h in headers), "</tr>"]
    for cells in rows:
        out.append("<tr>")
        out += [
            f'<td class="t">{html.escape(c)}</td>'
            if i < text_columns
            else f"<td>{html.escape(c)}</td>"
            for i, c in enumerate(cells)
        ]
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _seed_rows(row: MatrixRow) -> list[list[str]]:
    return [
        [
            str(s.seed) + (STALE_MARK if s.kernel_stale else ""),
            _pair(s.sim_goodput_bps, s.kernel_goodput_bps, ".3f", 1e-6),
            _pair(s.sim_rtt_ms, s.kernel_rtt_ms, ".1f"),
            f"{s.sim_retransmits} / {_retrans(s.kernel_retransmits)}",
        ]
        for s in row.seeds
    ]


def build_html(summary: MatrixSummary) -> str:
    from .. import __version__
    from ..present.draw import to_svg
    from ..present.report import CHECK_JS, CSS

    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>tcplab: simulator vs kernel</title><style>{CSS}</style></head><body>",
        "<h1>Simulator vs Linux kernel: agreement matrix</h1>",
        f"<p class='meta'>tcplab {html.escape(__version__)}</p>",
        _table_html(HEADERS, [row_cells(row) for row in summary.rows], text_columns=2),
        *(f"<p class='meta'>{html.escape(line)}</p>" for line in legend(summary)),
    ]
    for i, row in enumerate(summary.rows):
        anchor = f"case-{i}"
        parts.append(
            f"<h2 id='{anchor}'>{html.escape(row.cca)}, {html.escape(row.path)}, "
            f"PER {row.per:g} {html.escape(_mark(row))}</h2>"
        )
        parts.append(
            _table_html(
                ("seed", "goodput sim / kernel Mbit/s", "mean RTT sim / kernel ms", "retrans"),
                _seed_rows(row),
            )
        )
        parts.append(f"<div class='fig'>{to_svg(case_figure(row))}</div>")
    parts.append(f"<script>{CHECK_JS}</script></body></html>")
    return "\n".join(parts)


def write_outputs(summary: MatrixSummary, out_dir: Path) -> list[Path]:
    """DIR/matrix.md, DIR/matrix.html and DIR/matrix.json (the `--json` document)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise field_error("--out", str(out_dir), f"cannot create: {exc.strerror}") from None
    md, page, doc = out_dir / "matrix.md", out_dir / "matrix.html", out_dir / "matrix.json"
    md.write_text(markdown(summary), encoding="utf-8")
    page.write_text(build_html(summary), encoding="utf-8")
    doc.write_text(json.dumps(summary.to_json_dict()) + "\n", encoding="utf-8")
    return [md, page, doc]
