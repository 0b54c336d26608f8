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
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from .. import __version__
from ..errors import ScenarioError
from ..results.metrics import METRIC_BY_NAME
from ..study.aggregate import aggregate
from ..study.paper import paper_of_file
from ..study.store import Store, param_columns
from .chart import Chart
from .charts import supported
from .labels import KeyLabel, format_value
from .plots import PLOTS, chart
from .study_view import StudyView, view_of
from .style import make_style
from .svg_pool import svg_of
from .tables import Interval, decimals, fixed

#: The reports' style sheet (the kernel agreement matrix's page uses it too).
CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f3f3f3}
td{white-space:nowrap}
td.t{text-align:left}.fig{margin:1.5em 0}.fig svg{width:100%;height:auto;display:block}
figcaption{font-size:.9em;color:#333;max-width:70em;margin-top:.3em}
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
    ("goodput_bps", "goodput (Mbit/s)"),
    ("rtt_mean_ms", "mean RTT (ms)"),
    ("retransmits", "retransmitted segments"),
    ("goodput_utilization", "utilization"),
    ("jain_fairness", "Jain's index"),
)


def _cell(v: object, label: KeyLabel | None = None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return html.escape(format_value(v, label))


def summary_table(agg: pd.DataFrame, view: StudyView) -> str:
    """Grid points as rows: the swept keys by their human names, then each metric's mean
    and 95 % interval at one precision per column. Rows whose repetitions all agree say so
    in the n column instead of "± 0" in every cell."""
    params = [p for p in param_columns(agg) if agg[p].nunique(dropna=False) > 1 or p == view.axes.x]
    variants = agg["variant"].fillna("").astype(str)
    head: list[tuple[str, str]] = [("variant", "variant")] if (variants != "").any() else []
    head += [(p, view.label(p).text) for p in params]
    metrics = [
        (m, label)
        for m, label in _TABLE_METRICS
        if f"{m}_mean" in agg
        and agg[f"{m}_mean"].notna().any()
        and (m != "jain_fairness" or view.multi_flow)
    ]
    refs = [
        (c, label, scale)
        for c, label, scale in (
            ("mathis_bps", "Mathis bound (Mbit/s)", 1e-6),
            ("base_rtt_ms", "propagation RTT (ms)", 1.0),
        )
        if c in agg and agg[c].notna().any()
    ]
    places = {m: decimals(agg[f"{m}_mean"] * METRIC_BY_NAME[m].scale) for m, _ in metrics} | {
        c: decimals(agg[c] * scale) for c, _, scale in refs
    }
    out = ["<table class='results'><tr>"]
    out += [f"<th>{html.escape(h)}</th>" for _, h in head]
    out.append("<th>n</th>")
    out += [f"<th>{html.escape(label)}</th>" for _, label in metrics]
    out += [f"<th>{html.escape(label)}</th>" for _, label, _ in refs]
    out.append("</tr>")
    for _, r in agg.iterrows():
        intervals = {m: _interval_of(r, m) for m, _ in metrics}
        same = int(r["n"]) > 1 and all(i.deterministic for i in intervals.values())
        out.append("<tr>")
        out += [
            f'<td class="t">{_cell(r[k], view.label(k) if k != "variant" else None)}</td>'
            for k, _ in head
        ]
        out.append(f"<td>{int(r['n'])}{' (deterministic)' if same else ''}</td>")
        for m, _ in metrics:
            i = intervals[m]
            note = " (deterministic)" if i.deterministic and not same else ""
            out.append(f"<td>{i.text(places[m])}{note}</td>")
        for c, _, scale in refs:
            out.append(f"<td>{fixed(float(r[c]) * scale, places[c])}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _interval_of(r: pd.Series, m: str) -> Interval:
    scale = METRIC_BY_NAME[m].scale
    return Interval(
        float(r[f"{m}_mean"]) * scale,
        float(r[f"{m}_ci95"]) * scale,
        float(r[f"{m}_ci_low"]) * scale,
        float(r[f"{m}_ci_high"]) * scale,
    )


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
    ]
    paper = paper_of_file(str(info.get("file_text") or ""))
    if paper is not None:
        out.append(f"<p class='paper'>The study reproduces: {html.escape(paper.citation())}</p>")
    out.append(f"<{h2}>Figures</{h2}>")
    view = view_of(runs, {**info, "study": study, "revision": revision})
    style = make_style("web")
    reruns: dict[str, Any] = {}  # the representative run, simulated again for its packets
    figures: list[tuple[str, Chart | str]] = []  # a chart to draw, or why it is not drawn
    svgs: list[str] = []
    try:
        for name in plots or [n for n, spec in PLOTS.items() if supported(spec, view)]:
            try:
                made = chart(name, runs, store, view=view, reruns=reruns)
            except ScenarioError as exc:
                if PLOTS[name].kind != "trace":
                    raise
                figures.append((name, str(exc)))
                continue
            figures.append((name, made))
            svgs.append(svg_of(made, style))
    finally:
        for rerun in reruns.values():
            rerun.close()
    drawn = iter(svgs)
    for name, c in figures:
        if not isinstance(c, Chart):
            out.append(
                f"<p class='meta' data-kind='{html.escape(name)}'>"
                f"{html.escape(PLOTS[name].title)}: not drawn ({html.escape(c)}).</p>"
            )
            continue
        anchor = html.escape(f"fig-{study}-{name}")
        out.append(
            f"<figure class='fig' id='{anchor}' data-kind='{html.escape(name)}'>{next(drawn)}"
            f"<figcaption><b>{html.escape(c.title)}.</b> {html.escape(c.caption)}"
            "</figcaption></figure>"
        )
    out.append(f"<{h2}>Results (mean over repetitions, 95 % confidence interval)</{h2}>")
    out.append(summary_table(agg, view))
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
    # one read connection for the report's dozens of queries (see `Store.reading`)
    with store.reading():
        names = [study] if isinstance(study, str) else study or store.study_names()
        for name in names:  # before the figures are drawn, not after
            store.check_series(name, revision if isinstance(study, str) else None)
        text = build_report(store, study, title=title, revision=revision)
    path.write_text(text, encoding="utf-8")
    return path
