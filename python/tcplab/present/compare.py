"""Two or more results side by side (`tcplab compare A B [C ...]`).

A source is
- `DB.duckdb` (its only study) or `DB.duckdb:STUDY` or `DB.duckdb:STUDY@REV`: a study
  revision, compared grid point by grid point with the others;
- `DB.duckdb:STUDY[@REV],KEY=VALUE,...[,seed=N]`: a grid point (all its seeds, or one run
  with `seed=`), `DB.duckdb:run=ID`: one run (id or unique prefix);
- `SERIES.parquet|csv`: a run's series as `tcplab run --series` or `tcplab emulate
  --series` wrote it (a simulation beside its emulation); its summary is computed from the
  series (interval means) and says so.

Runs and grid points give a table of metrics (mean ± 95 % CI over the runs, or the run's
value) with each source's difference from the first, and goodput, RTT and cwnd over time
of each source's first run (lowest seed) overlaid. Studies give, per grid point the studies
share, each metric and its difference from the first study, and the summary figures of the
studies overlaid (colour by line, dash and marker by source).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError
from ..results.metrics import METRIC_BY_NAME
from ..results.series import by_flow
from ..study.aggregate import aggregate, ceiling_of, summarize
from ..study.store import Store, param_columns
from .chart import Chart, Panel, Point, Series
from .charts import summary_chart
from .plotspecs import PLOTS
from .study_view import Selection, StudyView, select, view_of
from .style import COLOURS, DASHES, MARKERS, LineStyle
from .tables import Interval, decimals, fixed

SERIES_SUFFIXES: Final = (".parquet", ".csv")
#: Metrics a comparison of runs shows, in this order.
RUN_METRICS: Final = (
    "goodput_bps",
    "throughput_bps",
    "rtt_mean_ms",
    "rtt_p95_ms",
    "retransmits",
    "rto_count",
    "goodput_utilization",
    "jain_fairness",
)
#: Quantities over time overlaid for runs: (series column, axis label, scale).
SERIES_PANELS: Final = (
    ("goodput_bps", "goodput (Mbit/s)", 1e-6),
    ("rtt_ms", "RTT (ms)", 1.0),
    ("cwnd_bytes", "cwnd (kB)", 1e-3),
)
#: Summary kinds overlaid for studies.
STUDY_KINDS: Final = ("goodput", "rtt")


@dataclass
class Side:
    """One source of a comparison, resolved."""

    label: str  # "A", "B", ...
    spec: str  # as the user wrote it
    kind: Literal["run", "point", "study"]
    what: str  # in words: which runs
    runs: pd.DataFrame  # rows of the runs table (one synthesized row for a series file)
    series_of: Callable[[str], pd.DataFrame]
    view: StudyView | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def first_run(self) -> pd.Series:
        return self.runs.sort_values("seed", kind="stable").iloc[0]


def side_labels(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def resolve(specs: Sequence[str]) -> list[Side]:
    if len(specs) < 2:
        raise ScenarioError(
            "compare: needs two or more sources; allowed: tcplab compare A B [C ...]"
        )
    if len(specs) > 26:
        raise ScenarioError(f"compare: {len(specs)} sources; allowed: 2 to 26")
    sides = [
        _resolve(spec, label) for spec, label in zip(specs, side_labels(len(specs)), strict=True)
    ]
    studies = [s.kind == "study" for s in sides]
    if any(studies) and not all(studies):
        raise ScenarioError(
            "compare: a study revision can only be compared with other study revisions; "
            "allowed: all sources studies, or all runs/grid points"
        )
    return sides


def _split(spec: str) -> tuple[Path, str]:
    """The file of a source and its selector (after the first ':' that ends a file name)."""
    if Path(spec).exists():
        return Path(spec), ""
    at = spec.find(":")
    while at != -1:
        if Path(spec[:at]).is_file():
            return Path(spec[:at]), spec[at + 1 :]
        at = spec.find(":", at + 1)
    raise ScenarioError(
        f"compare source {spec!r}: no such file; allowed: DB.duckdb[:STUDY[@REV][,KEY=VALUE...]"
        "[,seed=N]], DB.duckdb:run=ID, SERIES.parquet|csv"
    )


def _resolve(spec: str, label: str) -> Side:
    path, selector = _split(spec)
    if path.suffix.lower() in SERIES_SUFFIXES:
        if selector:
            raise ScenarioError(
                f"compare source {spec!r}: a series file has no selector; allowed: {path}"
            )
        return _series_side(path, spec, label)
    store = Store(path, create=False)
    return _db_side(store, selector, spec, label)


def _db_side(store: Store, selector: str, spec: str, label: str) -> Side:
    items = [i.strip() for i in selector.split(",") if i.strip()] if selector else []
    study_part = items[0] if items and "=" not in items[0] else None
    pairs = [i.partition("=") for i in (items[1:] if study_part else items)]
    for key, sep, value in pairs:
        if not sep or not key or not value:
            raise ScenarioError(
                f"compare source {spec!r}: {key!r} is not KEY=VALUE; allowed: "
                "DB:STUDY[@REV],KEY=VALUE,...,seed=N or DB:run=ID"
            )
    fixed_pairs = {k: v for k, _, v in pairs}
    run = fixed_pairs.pop("run", None)
    seed_text = fixed_pairs.pop("seed", None)
    seed = _int(seed_text, spec, "seed") if seed_text is not None else None
    study, revision = _study_of(store, study_part, spec, run)
    runs = store.runs(study, revision)
    info = {**store.revision_info(study, revision), "study": study, "revision": revision}
    view = view_of(runs, info)
    where = f"{study} revision {revision}"
    if run is None and seed is None and not fixed_pairs:
        return Side(label, spec, "study", where, runs, store.series, view)
    sel = Selection(run=run, seed=seed, point=tuple(fixed_pairs.items()))
    chosen = select(runs, view, sel)
    points = chosen.groupby(["variant", *param_columns(chosen)], dropna=False).ngroups
    if points > 1:
        free = [
            k for k in ("variant", *param_columns(chosen)) if chosen[k].nunique(dropna=False) > 1
        ]
        raise ScenarioError(
            f"compare source {spec!r}: matches {points} grid points; allowed: fix "
            + ", ".join(f"{k}=VALUE" for k in free)
        )
    picked = runs.loc[chosen.index]
    settings = ", ".join(
        f"{view.label(k).name} {picked[k].iloc[0]}"
        for k in param_columns(picked)
        if runs[k].nunique(dropna=False) > 1
    )
    variant = str(picked["variant"].iloc[0] or "")
    kind: Literal["run", "point"] = "run" if len(picked) == 1 else "point"
    seeds = view.seeds_text(picked["seed"].tolist())
    what = f"{where}: " + ", ".join(p for p in (variant, settings, seeds) if p)
    return Side(label, spec, kind, what, picked, store.series, view)


def _int(text: str, spec: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ScenarioError(
            f"compare source {spec!r}: {name}={text} is not an integer; allowed: {name}=N"
        ) from None


def _study_of(store: Store, part: str | None, spec: str, run: str | None) -> tuple[str, int]:
    names = store.study_names()
    if not names:
        raise ScenarioError(f"compare source {spec!r}: the database holds no study")
    if part is None:
        if run is not None:  # the study that holds the run
            every = store.runs()
            hit = every[every["run_id"].astype(str).str.startswith(run)]
            if hit.empty:
                raise ScenarioError(
                    f"compare source {spec!r}: no run {run!r}; allowed: a run id of "
                    f"{store.path} (tcplab results DB --table runs lists them)"
                )
            return str(hit["study"].iloc[0]), int(hit["revision"].iloc[0])
        if len(names) > 1:
            raise ScenarioError(
                f"compare source {spec!r}: the database holds several studies; allowed: "
                + ", ".join(f"{store.path}:{n}" for n in names)
            )
        return names[0], store.resolve(names[0])
    name, _, rev = part.partition("@")
    if name not in names:
        raise ScenarioError(
            f"compare source {spec!r}: no study {name!r}; allowed: {', '.join(names)}"
        )
    revision = _int(rev, spec, "@REV") if rev else None
    return name, store.resolve(name, revision)


def _series_side(path: Path, spec: str, label: str) -> Side:
    from ..results.export import read_table
    from ..results.series import SERIES_COLUMNS, conform

    frame, provenance = read_table(path)
    missing = [c for c in SERIES_COLUMNS if c not in frame]
    if missing:
        raise ScenarioError(
            f"compare source {spec!r}: not a series file (no {', '.join(missing[:3])}); "
            "allowed: a file of tcplab run --series or tcplab emulate --series"
        )
    series = conform(frame)
    tcp = series[series["kind"] != "cbr"]
    per_t = tcp.groupby("t_s")
    goodput = per_t["goodput_bps"].sum()
    row = {
        "run_id": path.name,
        "seed": provenance.get("seed", 0),
        "variant": "",
        "n_flows": int(tcp["flow_id"].nunique()),
        "goodput_bps": float(goodput.mean()) if len(goodput) else math.nan,
        "throughput_bps": float(per_t["throughput_bps"].sum().mean()) if len(goodput) else math.nan,
        "rtt_mean_ms": float(tcp["rtt_ms"].mean()),
        "retransmits": float(tcp["retransmits"].sum()),
        "model_version": provenance.get("model_version"),
    }
    what = f"series file {path.name}"
    if provenance.get("scenario_hash"):
        what += f" (scenario {str(provenance['scenario_hash'])[:12]}, seed {row['seed']})"
    side = Side(label, spec, "run", what, pd.DataFrame([row]), lambda _run: series)
    side.notes.append(
        "summary from the series: goodput and throughput are the mean of the interval rates, "
        "RTT the mean of the interval means, retransmissions the sum over intervals"
    )
    return side


# ---------------------------------------------------------------- the table


@dataclass
class Table:
    """Rows of text cells; `head` names the columns."""

    title: str
    head: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def _stat(runs: pd.DataFrame, metric: str) -> Interval | None:
    col = pd.to_numeric(runs[metric], errors="coerce").dropna()
    if col.empty:
        return None
    s = summarize(col, metric, ceiling_of(runs, metric))
    scale = METRIC_BY_NAME[metric].scale
    return Interval(s["mean"] * scale, s["ci95"] * scale, s["ci_low"] * scale, s["ci_high"] * scale)


def _diff(value: float, base: float, places: int) -> str:
    if value != value or base != base:
        return "-"
    delta = value - base
    rel = f" ({delta / base * 100:+.1f} %)" if base != 0 else ""
    text = fixed(delta, places)
    return (text if text.startswith("-") or text == "0" else f"+{text}") + rel


def runs_table(sides: Sequence[Side]) -> Table:
    """Metrics as rows; each source's mean (± CI over its runs), then each later source's
    difference from the first."""
    first = sides[0]
    head = ["metric", *(f"{s.label} (n = {len(s.runs)})" for s in sides)]
    head += [f"{s.label} - {first.label}" for s in sides[1:]]
    rows: list[list[str]] = []
    for metric in RUN_METRICS:
        stats = [_stat(s.runs, metric) if metric in s.runs else None for s in sides]
        if all(st is None for st in stats):
            continue
        if metric == "jain_fairness" and all(
            int(s.runs["n_flows"].max()) <= 1 for s in sides if "n_flows" in s.runs
        ):
            continue
        places = decimals([st.mean for st in stats if st is not None])
        cells = [METRIC_BY_NAME[metric].label]
        for st in stats:
            if st is None:
                cells.append("-")
            else:
                cells.append(st.text(places) + (" (deterministic)" if st.deterministic else ""))
        base = stats[0].mean if stats[0] is not None else math.nan
        for st in stats[1:]:
            cells.append(_diff(st.mean if st is not None else math.nan, base, places))
        rows.append(cells)
    notes = [f"{s.label}: {s.spec} = {s.what}" for s in sides]
    notes += [f"{s.label}: {n}" for s in sides for n in s.notes]
    notes.append("mean ± 95 % confidence interval over a source's runs (its seeds)")
    return Table("summary metrics", head, rows, notes)


def studies_table(sides: Sequence[Side], metric: str = "goodput_bps") -> Table:
    """Per grid point that every study has: `metric` of each study and the differences
    from the first."""
    keys: list[str] | None = None
    aggs = []
    for s in sides:
        agg = aggregate(s.runs)
        cols = ["variant", *param_columns(s.runs)]
        keys = cols if keys is None else [k for k in keys if k in cols]
        aggs.append(agg)
    assert keys is not None
    merged: pd.DataFrame | None = None
    for s, agg in zip(sides, aggs, strict=True):
        part = agg[
            [*keys, f"{metric}_mean", f"{metric}_ci95", f"{metric}_ci_low", f"{metric}_ci_high"]
        ]
        part = part.rename(columns={c: f"{s.label}:{c}" for c in part.columns if c not in keys})
        merged = part if merged is None else merged.merge(part, on=keys, how="inner")
    assert merged is not None
    if merged.empty:
        raise ScenarioError(
            "compare: the studies have no grid point in common (variant and swept values); "
            "allowed: revisions of one study, or studies that sweep the same keys"
        )
    spec = METRIC_BY_NAME[metric]
    view = sides[0].view
    names = [view.label(k).name if view and k != "variant" else k for k in keys]
    head = [
        *names,
        *(s.label for s in sides),
        *(f"{s.label} - {sides[0].label}" for s in sides[1:]),
    ]
    means = [merged[f"{s.label}:{metric}_mean"] * spec.scale for s in sides]
    places = decimals(pd.concat(means).tolist())
    rows = []
    for _, r in merged.sort_values(keys).iterrows():
        cells = [str(r[k]) for k in keys]
        vals = []
        for s in sides:
            i = Interval(
                *(
                    float(r[f"{s.label}:{metric}_{x}"]) * spec.scale
                    for x in ("mean", "ci95", "ci_low", "ci_high")
                )
            )
            vals.append(i.mean)
            cells.append(i.text(places))
        cells += [_diff(v, vals[0], places) for v in vals[1:]]
        rows.append(cells)
    notes = [f"{s.label}: {s.spec} = {s.what}" for s in sides]
    only = [len(a) - len(merged) for a in aggs]
    if any(only):
        notes.append(
            "grid points not in every study are left out: "
            + ", ".join(f"{s.label} {n}" for s, n in zip(sides, only, strict=True) if n)
        )
    return Table(f"{spec.label} per grid point", head, rows, notes)


# ---------------------------------------------------------------- the figures


def _look(side: int, sub: int) -> LineStyle:
    """Colour by source, marker and dash by flow (or line)."""
    return LineStyle(
        COLOURS[side % len(COLOURS)], MARKERS[sub % len(MARKERS)], DASHES[sub % len(DASHES)]
    )


def series_chart(sides: Sequence[Side]) -> Chart:
    """Goodput, RTT and cwnd over time of each source's first run, overlaid."""
    panels = [
        Panel(title=ylabel.split(" (")[0], xlabel="time (s)", ylabel=ylabel)
        for _, ylabel, _ in SERIES_PANELS
    ]
    shown = []
    for i, side in enumerate(sides):
        run = side.first_run
        s = side.series_of(str(run["run_id"]))
        shown.append(f"{side.label}: run {run['run_id']} (seed {run['seed']})")
        columns = ("t_s", *(col for col, _, _ in SERIES_PANELS), *(("cca",) if "cca" in s else ()))
        flows = by_flow(s, columns)
        for j, (flow, f) in enumerate(flows):
            label = side.label if len(flows) == 1 else f"{side.label} flow {flow}"
            cca = str(f["cca"][0]) if "cca" in f and f["cca"] and f["cca"][0] else ""
            label += f" ({cca})" if cca else ""
            for panel, (col, _, scale) in zip(panels, SERIES_PANELS, strict=True):
                pts = [
                    Point(
                        float(t), float(y) * scale, note=f"{side.label} {run['run_id']} flow {flow}"
                    )
                    for t, y in zip(f["t_s"], f[col], strict=True)
                    if y == y
                ]
                panel.series.append(Series(label, _look(i, j), pts))
    caption = (
        "Each source's first run (lowest seed), every flow; colour by source, dash and marker "
        "by flow. " + "; ".join(shown) + ". " + " ".join(f"{s.label} = {s.what}." for s in sides)
    )
    return Chart(
        "compare-series", "Over time", panels, "source (flow)", caption, "series", columns=3
    )


def study_charts(sides: Sequence[Side]) -> list[Chart]:
    """The studies' summary figures overlaid: a study's lines keep their colour, each study
    its own dash and marker; panels by variant."""
    out = []
    for kind in STUDY_KINDS:
        spec = PLOTS[kind]
        charts = [summary_chart(spec, s.view) for s in sides if s.view is not None]
        base = charts[0]
        colours: dict[str, str] = {}
        panels: dict[str, Panel] = {}
        order: list[str] = []
        for i, (side, c) in enumerate(zip(sides, charts, strict=True)):
            for p in c.panels:
                if p.title not in panels:
                    panels[p.title] = Panel(
                        p.title,
                        p.xlabel,
                        p.ylabel,
                        xscale=p.xscale,
                        zero_at=p.zero_at,
                        categories=list(p.categories),
                        ylim=p.ylim,
                    )
                    order.append(p.title)
                target = panels[p.title]
                for s in p.series:
                    if s.reference:
                        if i == 0:
                            target.series.append(s)
                        continue
                    colour = colours.setdefault(s.label, COLOURS[len(colours) % len(COLOURS)])
                    look = LineStyle(colour, MARKERS[i % len(MARKERS)], DASHES[i % len(DASHES)])
                    target.series.append(
                        Series(f"{side.label}: {s.label}", look, s.points, s.joined)
                    )
        caption = f"{base.caption} Sources: " + " ".join(
            f"{s.label} = {s.what} (dash and marker {i + 1})." for i, s in enumerate(sides)
        )
        out.append(
            Chart(
                f"compare-{kind}",
                base.title,
                [panels[t] for t in order],
                f"source: {base.legend_title}",
                caption,
                base.kind,
            )
        )
    return out


def charts(sides: Sequence[Side]) -> list[Chart]:
    if all(s.kind == "study" for s in sides):
        return study_charts(sides)
    return [series_chart(sides)]


def table(sides: Sequence[Side]) -> Table:
    if all(s.kind == "study" for s in sides):
        return studies_table(sides)
    return runs_table(sides)


__all__ = ["Side", "Table", "charts", "resolve", "table"]
