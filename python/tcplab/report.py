"""Self-contained HTML reports: one file, no network access needed to view it.

Figures are inline SVG; tables are plain HTML; the study file is included verbatim. A short
script checks, in the browser, that every figure rendered with a non-empty size and records
the count (and any script error) on `<body>` — the headless-browser test reads those.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd  # type: ignore[import-untyped]

from . import __version__
from .aggregate import aggregate
from .errors import ScenarioError
from .plots import available, figure, to_svg
from .store import Store, param_columns

#: The reports' style sheet (the kernel agreement matrix's page uses it too).
CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}
td.t{text-align:left}.fig{margin:1em 0}.fig svg{max-width:100%;height:auto}
pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:.8em}
.meta{color:#555}
"""

#: In the browser: counts the figures that rendered with a size (`data-figures` on <body>)
#: and script errors (`data-errors`); the headless-browser tests read both.
CHECK_JS = """
(function(){
  var errors = 0;
  window.addEventListener('error', function(){
    errors += 1; document.body.dataset.errors = errors;
  });
  function check(){
    var figs = document.querySelectorAll('.fig svg'), ok = 0;
    for (var i = 0; i < figs.length; i++) {
      var r = figs[i].getBoundingClientRect();
      if (r.width > 10 && r.height > 10) ok += 1;
    }
    document.body.dataset.figures = ok;
    document.body.dataset.errors = errors;
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', check);
  else check();
})();
"""

_TABLE_METRICS = (
    ("goodput_bps", "goodput Mbit/s", 1e-6),
    ("rtt_mean_ms", "RTT ms", 1.0),
    ("retransmits", "retransmits", 1.0),
    ("goodput_utilization", "utilization", 1.0),
    ("jain_fairness", "Jain", 1.0),
)


def _fmt(v: object, scale: float = 1.0) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float | int) and not isinstance(v, bool):
        x = float(v) * scale
        if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e6):
            return f"{x:.3g}"
        return f"{x:.4g}"
    return html.escape(str(v))


def summary_table(agg: pd.DataFrame, runs: pd.DataFrame) -> str:
    params = param_columns(runs)
    head = ["variant", *params, "n"]
    cols = [(m, label, s) for m, label, s in _TABLE_METRICS if f"{m}_mean" in agg]
    out = ["<table><tr>"]
    out += [f"<th>{html.escape(h)}</th>" for h in head]
    out += [f"<th>{html.escape(label)} (mean ± 95% CI)</th>" for _, label, _ in cols]
    out += ["<th>Mathis Mbit/s</th><th>physical RTT ms</th></tr>"]
    for _, r in agg.iterrows():
        out.append("<tr>")
        out += [f'<td class="t">{_fmt(r[h])}</td>' for h in head]
        for m, _, s in cols:
            out.append(f"<td>{_fmt(r[f'{m}_mean'], s)} ± {_fmt(r[f'{m}_ci95'], s)}</td>")
        out.append(
            f"<td>{_fmt(r.get('mathis_bps'), 1e-6)}</td><td>{_fmt(r.get('base_rtt_ms'))}</td>"
        )
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _select(store: Store, study: str | Sequence[str] | None) -> list[str]:
    names = store.study_names()
    if not names:
        raise ScenarioError(f"{store.path}: the database holds no study")
    if study is None:
        if len(names) > 1:
            raise ScenarioError(
                f"--study: the database holds several studies; allowed: {', '.join(names)}"
            )
        return names
    wanted = [study] if isinstance(study, str) else list(study)
    for w in wanted:
        if w not in names:
            raise ScenarioError(
                f"--study = {w!r}: not in {store.path}; allowed: {', '.join(names)}"
            )
    return wanted


def _section(store: Store, study: str, plots: Sequence[str] | None, level: int) -> list[str]:
    runs = store.runs(study)
    agg = aggregate(runs)
    h, h2 = f"h{level}", f"h{level + 1}"
    out = [
        f"<{h}>tcplab study: {html.escape(study)}</{h}>",
        f"<p class='meta'>{len(runs)} runs, {len(agg)} grid points; "
        f"core {html.escape(str(runs['core_version'].iloc[0]))}; "
        f"simulation wall time {runs['wall_s'].sum():.1f} s in total.</p>",
        f"<{h2}>Figures</{h2}>",
    ]
    for name in plots or available(runs):
        svg = to_svg(figure(name, runs, store))
        out.append(
            f"<div class='fig' id='fig-{html.escape(study)}-{html.escape(name)}'>{svg}</div>"
        )
    out.append(f"<{h2}>Results (mean over repetitions, 95 % confidence interval)</{h2}>")
    out.append(summary_table(agg, runs))
    text = store.study_text(study)
    out.append(f"<{h2}>Study file</{h2}>")
    out.append(f"<pre>{html.escape(text) if text else '(not stored)'}</pre>")
    return out


def build_report(
    store: Store,
    study: str | Sequence[str] | None = None,
    plots: Sequence[str] | None = None,
    title: str | None = None,
) -> str:
    """The report of one study, or of several (one section each) under `title`."""
    names = _select(store, study)
    heading = title or (names[0] if len(names) == 1 else ", ".join(names))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>tcplab report: {html.escape(heading)}</title><style>{CSS}</style></head><body>",
    ]
    if len(names) > 1:
        parts.append(f"<h1>tcplab report: {html.escape(heading)}</h1>")
    parts.append(
        f"<p class='meta'>generated {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC by "
        f"tcplab {__version__} from {html.escape(store.path.name)}</p>"
    )
    for name in names:
        parts += _section(store, name, plots, 1 if len(names) == 1 else 2)
    parts.append(f"<script>{CHECK_JS}</script></body></html>")
    return "\n".join(parts)


def write_report(
    store: Store,
    out: str | Path,
    study: str | Sequence[str] | None = None,
    title: str | None = None,
) -> Path:
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ScenarioError(f"-o = {str(out)!r}: a report is an HTML file; allowed: *.html")
    path.write_text(build_report(store, study, title=title), encoding="utf-8")
    return path
