"""Self-contained HTML reports: one file, no network access needed to view it.

Each section is one study revision (by default the latest): which revision, its model
version and provenance, figures, the table of results, the effective definition (the grid as
it ran, every override included) and the study file as first stored. Figures are inline SVG;
tables are plain HTML. A short script checks, in the browser, that every figure rendered
with a non-empty size and records the count (and any script error) on `<body>` — the
headless-browser test reads those.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd  # type: ignore[import-untyped]

from .. import __version__
from ..errors import ScenarioError
from ..results.metrics import METRIC_BY_NAME
from ..study.aggregate import aggregate
from ..study.store import Store, param_columns
from .plots import available, figure, to_svg

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
    "goodput_bps",
    "rtt_mean_ms",
    "retransmits",
    "goodput_utilization",
    "jain_fairness",
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


def _interval(r: pd.Series, m: str, scale: float) -> str:
    """`mean ± half` for a symmetric interval, `mean +a/-b` where the metric's range clipped
    it, the mean alone for one run, and `mean (deterministic)` when every repetition gave the
    same value."""
    mean, half = r[f"{m}_mean"], r[f"{m}_ci95"]
    if half != half or half is None:  # NaN: one run
        return _fmt(mean, scale)
    if half == 0:
        return f"{_fmt(mean, scale)} (deterministic)"
    low, high = r[f"{m}_ci_low"], r[f"{m}_ci_high"]
    if math.isclose(mean - low, half) and math.isclose(high - mean, half):
        return f"{_fmt(mean, scale)} ± {_fmt(half, scale)}"
    return f"{_fmt(mean, scale)} +{_fmt(high - mean, scale)}/-{_fmt(mean - low, scale)}"


def summary_table(agg: pd.DataFrame, runs: pd.DataFrame) -> str:
    params = param_columns(runs)
    head = ["variant", *params, "n"]
    cols = [METRIC_BY_NAME[m] for m in _TABLE_METRICS if f"{m}_mean" in agg]
    out = ["<table><tr>"]
    out += [f"<th>{html.escape(h)}</th>" for h in head]
    out += [f"<th>{html.escape(m.label)} (mean, 95% CI)</th>" for m in cols]
    out += ["<th>Mathis Mbit/s</th><th>physical RTT ms</th></tr>"]
    for _, r in agg.iterrows():
        out.append("<tr>")
        out += [f'<td class="t">{_fmt(r[h])}</td>' for h in head]
        for m in cols:
            out.append(f"<td>{_interval(r, m.name, m.scale)}</td>")
        out.append(
            f"<td>{_fmt(r.get('mathis_bps'), 1e-6)}</td><td>{_fmt(r.get('base_rtt_ms'))}</td>"
        )
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _select(
    store: Store, study: str | Sequence[str] | None, revision: int | None
) -> list[tuple[str, int]]:
    names = store.study_names()
    if not names:
        raise ScenarioError(f"{store.path}: the database holds no study")
    if study is None:
        if len(names) > 1:
            raise ScenarioError(
                f"--study: the database holds several studies; allowed: {', '.join(names)}"
            )
        wanted = names
    else:
        wanted = [study] if isinstance(study, str) else list(study)
    for w in wanted:
        if w not in names:
            raise ScenarioError(
                f"--study = {w!r}: not in {store.path}; allowed: {', '.join(names)}"
            )
    if revision is not None and len(wanted) > 1:
        raise ScenarioError("--revision: needs one study; allowed: --study NAME --revision N")
    return [(w, store.resolve(w, revision)) for w in wanted]


def _provenance_rows(runs: pd.DataFrame, info: dict[str, object]) -> str:
    def values(column: str) -> str:
        if column not in runs:
            return "-"
        found = sorted({str(v) for v in runs[column].tolist() if v == v and v is not None})
        return html.escape(", ".join(found)) if found else "unknown"

    model = info.get("model_version")
    rows = [
        ("model version", "unknown" if model is None else str(model)),
        ("definition hash", html.escape(str(info.get("definition_hash") or "unknown"))),
        ("revision created", html.escape(str(info.get("created") or "unknown"))),
        ("runs' tcplab versions", values("tcplab_version")),
        ("runs' core versions", values("core_version")),
        ("runs' git commits", values("git_commit")),
        ("runs' hosts", values("host")),
        (
            "runs started",
            html.escape(
                f"{runs['started_utc'].min()} … {runs['started_utc'].max()} UTC"
                if "started_utc" in runs and runs["started_utc"].notna().any()
                else "unknown"
            ),
        ),
        ("simulation wall time", f"{runs['wall_s'].sum():.1f} s in total"),
    ]
    cells = "".join(f"<tr><th>{k}</th><td class='t'>{v}</td></tr>" for k, v in rows)
    return f"<table>{cells}</table>"


def _section(
    store: Store, study: str, revision: int, plots: Sequence[str] | None, level: int
) -> list[str]:
    runs = store.runs(study, revision)
    if runs.empty:
        raise ScenarioError(f"study {study!r} revision {revision}: no runs stored yet")
    info = store.revision_info(study, revision)
    latest = store.resolve(study)
    agg = aggregate(runs)
    h, h2 = f"h{level}", f"h{level + 1}"
    grid = info.get("n_runs")
    of = f" of {grid}" if grid is not None else ""
    out = [
        f"<{h}>tcplab study: {html.escape(study)}, revision {revision}</{h}>",
        f"<p class='meta'>revision {revision} of {latest}; {len(runs)}{of} runs, "
        f"{len(agg)} grid points; model version "
        f"{html.escape(str(info.get('model_version') or 'unknown'))}.</p>",
        f"<{h2}>Figures</{h2}>",
    ]
    for name in plots or available(runs):
        svg = to_svg(figure(name, runs, store))
        out.append(
            f"<div class='fig' id='fig-{html.escape(study)}-{html.escape(name)}'>{svg}</div>"
        )
    out.append(f"<{h2}>Results (mean over repetitions, 95 % confidence interval)</{h2}>")
    out.append(summary_table(agg, runs))
    out.append(f"<{h2}>Provenance</{h2}>")
    out.append(_provenance_rows(runs, info))
    definition = info.get("definition")
    out.append(f"<{h2}>Effective definition (as run, overrides included)</{h2}>")
    out.append(
        "<pre>"
        + (
            html.escape(json.dumps(definition, indent=1, sort_keys=True))
            if definition
            else "(unknown: stored before study revisions were recorded)"
        )
        + "</pre>"
    )
    text = info.get("file_text")
    out.append(f"<{h2}>Study file (as stored with this revision)</{h2}>")
    out.append(f"<pre>{html.escape(str(text)) if text else '(not stored)'}</pre>")
    return out


def build_report(
    store: Store,
    study: str | Sequence[str] | None = None,
    plots: Sequence[str] | None = None,
    title: str | None = None,
    revision: int | None = None,
) -> str:
    """The report of one study revision (default: the latest), or of several studies (each
    at its latest revision, one section each) under `title`."""
    chosen = _select(store, study, revision)
    names = [name for name, _ in chosen]
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
    for name, number in chosen:
        parts += _section(store, name, number, plots, 1 if len(names) == 1 else 2)
    parts.append(f"<script>{CHECK_JS}</script></body></html>")
    return "\n".join(parts)


def write_report(
    store: Store,
    out: str | Path,
    study: str | Sequence[str] | None = None,
    title: str | None = None,
    revision: int | None = None,
) -> Path:
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ScenarioError(f"-o = {str(out)!r}: a report is an HTML file; allowed: *.html")
    path.write_text(build_report(store, study, title=title, revision=revision), encoding="utf-8")
    return path
