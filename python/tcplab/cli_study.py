"""Study commands of the `tcplab` CLI: sweep | report | plot | results | study.

tcplab sweep STUDY.toml [--jobs N] [--db results.duckdb] [--executor local|dask --scheduler URL]
tcplab report results.duckdb [--study NAME] -o report.html
tcplab plot results.duckdb [--study NAME] --kind goodput -o fig.png|svg|pdf
tcplab results results.duckdb [--study NAME] [--table runs|flows|aggregate]
    --format csv|parquet|json [-o FILE]
tcplab study list | show NAME | run NAME [--jobs N] [--db FILE] [--report FILE]
"""

from __future__ import annotations

import argparse
import importlib.resources
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .aggregate import aggregate
from .axes import study_axes
from .errors import ScenarioError
from .plots import PLOTS, figure, save
from .render import wide_console
from .report import write_report
from .store import Store
from .study import Study, load_study, study_from_dict
from .sweep import SweepSummary, run_study

EXPORT_FORMATS = ("csv", "parquet", "json")
TABLES = ("runs", "flows", "aggregate")


def preset_dir() -> Path:
    return Path(str(importlib.resources.files("tcplab") / "studies"))


def presets() -> dict[str, list[Path]]:
    """Preset studies: `studies/NAME.toml`, or `studies/NAME/*.toml` for a study in parts
    (run into one database, reported together)."""
    root = preset_dir()
    found: dict[str, list[Path]] = {}
    for p in sorted(root.iterdir()):
        if p.suffix == ".toml":
            found[p.stem] = [p]
        elif p.is_dir() and any(p.glob("*.toml")):
            found[p.name] = sorted(p.glob("*.toml"))
    return found


def _count(value: str) -> int:
    """A positive count argument (`--jobs`, `--repetitions`); argparse names the option."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r}: must be an integer; allowed: 1 ..= 1024"
        ) from None
    if not 1 <= n <= 1024:
        raise argparse.ArgumentTypeError(f"{n}: out of range; allowed: 1 ..= 1024")
    return n


def _open_db(path: str) -> Store:
    return Store(path, create=False)


def _scaled(study: Study, args: argparse.Namespace) -> Study:
    """Apply --duration / --repetitions to a study (a cheaper version of a preset)."""
    raw: dict[str, Any] = dict(study.base)
    sweep: dict[str, Any] = {a.path: list(a.values) for a in study.axes}
    if getattr(args, "duration", None):
        raw["duration"] = args.duration
    reps = getattr(args, "repetitions", None) or study.repetitions
    sweep["repetitions"] = reps
    variants = [v for v in study.variants if v.name]
    if variants:
        sweep["variants"] = [{"name": v.name, "set": dict(v.overrides)} for v in variants]
    raw["sweep"] = sweep
    raw["study"] = {
        "name": study.name,
        "description": study.description,
        "base_seed": study.base_seed,
    }
    return study_from_dict(raw, default_name=study.name, text=study.text, base_dir=study.base_dir)


def short_names(keys: list[str]) -> dict[str, str]:
    """The shortest dotted suffix of each swept key that tells it from the others: "rate"
    for path.segments.1.rate; "pep.cca" and "flows.0.cca" for flows.0.pep.cca beside
    flows.0.cca."""
    parts = {k: k.split(".") for k in keys}
    depth = dict.fromkeys(keys, 1)
    while True:
        names = {k: ".".join(parts[k][-depth[k] :]) for k in keys}
        clash = [k for k in keys if list(names.values()).count(names[k]) > 1]
        grow = [k for k in clash if depth[k] < len(parts[k])]
        if not grow:
            return names
        for k in grow:
            depth[k] += 1
            if parts[k][-depth[k]].isdigit() and depth[k] < len(parts[k]):
                depth[k] += 1  # "flows.0.cca", not "0.cca"


def _print_summary(console: Console, study: Study, store: Store, summary: SweepSummary) -> None:
    status = "interrupted — rerun the same command to resume" if summary.interrupted else "done"
    console.print(
        f"[bold]{study.name}[/]: {summary.total} runs, {summary.ran} simulated now, "
        f"{summary.skipped} already stored ({summary.linked} shared with other studies); "
        f"{summary.wall_s:.1f} s wall, {summary.runs_per_s:.1f} runs/s — {status}"
    )
    runs = store.runs(study.name)
    if runs.empty:
        return
    df, axes = study_axes(runs)
    agg = aggregate(df)
    # Columns: the algorithm (the first line key); rows: variant, the other line keys, x.
    column = axes.lines[0] if axes.lines else None
    row_keys = ["variant", *axes.lines[1:], *([axes.x] if axes.x else [])]
    names = short_names([*row_keys, *([column] if column else [])])
    columns_are = f"; columns: {names[column]}" if column else ""
    table = Table(
        title=f"{study.name}: goodput Mbit/s (mean over repetitions) / mean RTT ms{columns_are}"
    )
    for k in row_keys:
        table.add_column(names[k])
    columns = sorted(agg[column].dropna().unique()) if column else [None]
    for value in columns:
        table.add_column(str(value) if value is not None else "all", justify="right")
    for group, g in agg.groupby(row_keys, sort=True, dropna=False):
        values = group if isinstance(group, tuple) else (group,)
        cells = [
            axes.format_x(v, digits=4)
            if k == axes.x
            else f"{v:g}"
            if isinstance(v, float)
            else str(v)
            for k, v in zip(row_keys, values, strict=True)
        ]
        for value in columns:
            cell = g[g[column] == value] if column else g
            if cell.empty:
                cells.append("-")
                continue
            gp = float(cell["goodput_bps_mean"].mean()) / 1e6
            rtt = float(cell["rtt_mean_ms_mean"].mean()) if "rtt_mean_ms_mean" in cell else math.nan
            cells.append(f"{gp:.3f} / {rtt:.0f}")
        table.add_row(*cells)
    console.print(table)


def _sweep(study: Study, args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    with Store(args.db) as store:
        summary = run_study(
            study,
            store,
            jobs=args.jobs,
            executor=args.executor,
            scheduler=args.scheduler,
            console=console,
            progress=not args.no_progress,
        )
        _print_summary(wide_console(), study, store, summary)
        if args.report and not summary.interrupted:
            path = write_report(store, args.report, study.name)
            console.print(f"wrote {path}")
    return 130 if summary.interrupted else 0


def cmd_sweep(args: argparse.Namespace) -> int:
    return _sweep(_scaled(load_study(args.study), args), args)


def cmd_report(args: argparse.Namespace) -> int:
    with _open_db(args.db) as store:
        path = write_report(store, args.output, args.study)
    print(f"wrote {path}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    with _open_db(args.db) as store:
        runs = store.runs(args.study)
        if args.study is None and runs["study"].nunique() > 1:
            raise ScenarioError(
                "--study: the database holds several studies; allowed: "
                + ", ".join(sorted(runs["study"].unique()))
            )
        save(figure(args.kind, runs, store), args.output)
    print(f"wrote {args.output}")
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    with _open_db(args.db) as store:
        if args.table == "flows":
            df = store.flows(args.study)
        elif args.table == "aggregate":
            df = aggregate(store.runs(args.study))
        else:
            df = store.runs(args.study)
    fmt = args.format
    out = args.output
    if fmt == "parquet" and not out:
        raise ScenarioError(
            "-o: parquet is binary and needs an output file; allowed: -o FILE.parquet"
        )
    if fmt == "csv":
        text = df.to_csv(index=False)
    elif fmt == "json":
        text = df.to_json(orient="records", indent=1)
    else:
        df.to_parquet(out, index=False)
        print(f"wrote {out} ({len(df)} rows)")
        return 0
    if out:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out} ({len(df)} rows)")
    else:
        sys.stdout.write(text)
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    found = presets()
    if args.action == "list":
        table = Table(title="published studies shipped as presets")
        for col in ("name", "runs", "description"):
            table.add_column(col)
        for name, paths in found.items():
            parts = [load_study(p) for p in paths]
            desc = " | ".join(st.description for st in parts)
            table.add_row(name, str(sum(st.n_runs for st in parts)), desc)
        Console().print(table)
        return 0
    if not args.name:
        raise ScenarioError(f"study {args.action}: missing NAME; allowed: {', '.join(found)}")
    if args.name not in found:
        raise ScenarioError(f"study = {args.name!r}: no such preset; allowed: {', '.join(found)}")
    paths = found[args.name]
    if args.action == "show":
        for p in paths:
            sys.stdout.write(p.read_text(encoding="utf-8"))
        return 0
    args.db = args.db or f"{args.name}.duckdb"
    report = args.report or f"{args.name}.html"
    args.report = None
    status = 0
    names = []
    for p in paths:
        study = _scaled(load_study(p), args)
        names.append(study.name)
        status = _sweep(study, args)
        if status:
            return status
    with Store(args.db) as store:
        path = write_report(store, report, names, title=args.name)
    Console(stderr=True).print(f"wrote {path}")
    return status


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=_count, default=None, help="parallel runs (default: all CPUs)")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--scheduler", metavar="URL", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--duration", help='override the simulated time of every run, e.g. "60s"')
    p.add_argument("--repetitions", type=_count, default=None, help="override repetitions (seeds)")


def add_commands(sub: Any) -> None:
    """Register the study commands on the main parser's subparsers."""
    sw = sub.add_parser("sweep", help="run a study (a scenario with a [sweep] table)")
    sw.add_argument("study", metavar="STUDY.toml")
    sw.add_argument(
        "--db", default="results.duckdb", help="results database (default results.duckdb)"
    )
    sw.add_argument("--report", metavar="OUT.html", help="also write the HTML report")
    _add_run_options(sw)
    sw.set_defaults(handler=cmd_sweep)

    rp = sub.add_parser("report", help="write a self-contained HTML report of a study")
    rp.add_argument("db", metavar="RESULTS.duckdb")
    rp.add_argument("--study", help="study name (needed if the database holds several)")
    rp.add_argument("-o", "--output", default="report.html", metavar="OUT.html")
    rp.set_defaults(handler=cmd_report)

    pl = sub.add_parser("plot", help="draw one figure of a study")
    pl.add_argument("db", metavar="RESULTS.duckdb")
    pl.add_argument("--study")
    pl.add_argument("--kind", choices=tuple(PLOTS), default="goodput")
    pl.add_argument("-o", "--output", required=True, metavar="FIG.png|svg|pdf")
    pl.set_defaults(handler=cmd_plot)

    rs = sub.add_parser("results", help="export results as CSV, Parquet or JSON")
    rs.add_argument("db", metavar="RESULTS.duckdb")
    rs.add_argument("--study")
    rs.add_argument("--table", choices=TABLES, default="runs")
    rs.add_argument("--format", choices=EXPORT_FORMATS, default="csv")
    rs.add_argument("-o", "--output", metavar="FILE")
    rs.set_defaults(handler=cmd_results)

    st = sub.add_parser("study", help="the published studies: list | show NAME | run NAME")
    st.add_argument("action", choices=("list", "show", "run"))
    st.add_argument("name", nargs="?")
    st.add_argument("--db", help="results database (default NAME.duckdb)")
    st.add_argument("--report", metavar="OUT.html", help="report file (default NAME.html)")
    _add_run_options(st)
    st.set_defaults(handler=cmd_study)
