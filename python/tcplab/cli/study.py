"""Study commands of the `tcplab` CLI: sweep | report | plot | results | study.

tcplab sweep STUDY.toml [--jobs N] [--db results.duckdb] [--executor local|dask --scheduler URL]
    [--new-revision | --replace] [--plan]
tcplab report results.duckdb [--study NAME] [--revision N] -o report.html
tcplab plot results.duckdb [--study NAME] [--revision N] --kind goodput -o fig.png|svg|pdf
    [--style web|paper|slides] [--size WxH] [--font-size PT] [--data FIG.csv]
    [--run ID | --seed N | --point KEY=VALUE ...]
tcplab plot results.duckdb|CAPTURE-DIR|FILE.pcapng|EVENTS.parquet --kind tseq|cwnd-events
    -o fig.svg [--flow N] [--window FROM:TO] [--pcap-link SEGMENT]
tcplab results results.duckdb [--study NAME] [--revision N] [--table runs|flows|aggregate]
    [--format csv|parquet|json] [-o FILE]
tcplab results EXPORT.csv|.parquet|.json [--format ...] [-o FILE]    (read an export back)
tcplab study list | show NAME | run NAME [--jobs N] [--db FILE] [--report FILE]

Reading commands show one revision of a study (by default its latest) and say which on
stderr. Heavy libraries (pandas, DuckDB, matplotlib) are imported inside the commands.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError
from ..files import check_output_file
from ..present.plotspecs import PLOTS
from . import figures
from .options import count_arg, index_arg, revision_arg, seconds_arg

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    from rich.console import Console

    from ..study.grid import Study
    from ..study.store import Store
    from ..study.sweep import SweepSummary

EXPORT_FORMATS = ("csv", "parquet", "json")
TABLES = ("runs", "flows", "aggregate")


def _open_db(path: str) -> Store:
    from ..study.store import Store

    return Store(path, create=False)


def _say(text: str) -> None:
    """A note for people on stderr (stdout may be an export)."""
    from rich.console import Console

    Console(stderr=True, highlight=False).print(text, soft_wrap=True)


def revision_line(store: Store, study: str, revision: int) -> str:
    """`STUDY revision N of M (model version V, definition HASH, R of G runs)`."""
    revs = store.revisions(study)
    row = revs[revs["revision"] == revision].iloc[0]
    model = row["model_version"]
    model_text = "unknown" if model is None or model != model else str(int(model))
    definition = row["definition_hash"] or "unknown (stored before revisions)"
    grid = row["n_runs"]
    of = f" of {int(grid)}" if grid == grid and grid is not None else ""
    return (
        f"{study} revision {revision} of {int(revs['revision'].max())} (model version "
        f"{model_text}, definition {definition}, {int(row['runs'])}{of} runs)"
    )


def _selected(store: Store, study: str | None, revision: int | None) -> list[tuple[str, int]]:
    """The (study, revision) pairs a reading command shows: one study (the only one, or
    `--study`) at `--revision` or its latest; with neither and several studies, each study's
    latest revision."""
    names = store.study_names()
    if not names:
        raise ScenarioError(f"{store.path}: the database holds no study")
    if study is None:
        if revision is not None:
            if len(names) > 1:
                raise ScenarioError(
                    f"--revision: needs --study when the database holds several studies; "
                    f"allowed: {', '.join(names)}"
                )
            study = names[0]
        else:
            return [(name, store.resolve(name)) for name in names]
    return [(study, store.resolve(study, revision))]


def _one_selected(store: Store, study: str | None, revision: int | None) -> tuple[str, int]:
    """The one (study, revision) a command on a single study shows (see `_selected`)."""
    chosen = _selected(store, study, revision)
    if len(chosen) > 1:
        raise ScenarioError(
            "--study: the database holds several studies; allowed: "
            + ", ".join(name for name, _ in chosen)
        )
    return chosen[0]


def _scaled(study: Study, args: argparse.Namespace) -> Study:
    """Apply --duration / --repetitions to a study (a cheaper version of a preset)."""
    from ..study.grid import study_from_dict

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
    if study.paper is not None:
        raw["study"]["paper"] = study.paper.to_toml_dict()
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


def _cell_key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Group values as a dictionary key: a missing value (NaN, which equals nothing) as one
    marker."""
    return tuple("\0missing" if v is None or v != v else v for v in values)


def _print_summary(console: Console, study: Study, store: Store, summary: SweepSummary) -> None:
    from rich.table import Table

    from ..study.aggregate import aggregate
    from ..study.axes import study_axes

    status = "interrupted — rerun the same command to resume" if summary.interrupted else "done"
    console.print(
        f"[bold]{study.name}[/] {summary.revision_note}: {summary.total} runs, "
        f"{summary.ran} simulated now, {summary.skipped} already stored "
        f"({summary.linked} shared with other studies or revisions); "
        f"{summary.wall_s:.1f} s wall, {summary.runs_per_s:.1f} runs/s — {status}"
    )
    if summary.interrupted:
        # the table is what the sweep would show at its end; Ctrl-C means "stop now"
        return
    runs = store.runs(study.name, summary.revision)
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
        title=f"{study.name} revision {summary.revision}: goodput Mbit/s (mean over "
        f"repetitions) / mean RTT ms{columns_are}"
    )
    for k in row_keys:
        table.add_column(names[k])
    columns = sorted(agg[column].dropna().unique()) if column else [None]
    for value in columns:
        table.add_column(str(value) if value is not None else "all", justify="right")
    # each cell's points, found in one pass (not one scan of the table per cell)
    cells_of: dict[tuple[Any, ...], pd.DataFrame] = {}
    if column:
        for at, part in agg.groupby([*row_keys, column], sort=False, dropna=False):
            cells_of[_cell_key(at if isinstance(at, tuple) else (at,))] = part
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
            cell = cells_of.get(_cell_key((*values, value))) if column else g
            if cell is None or cell.empty:
                cells.append("-")
                continue
            gp = float(cell["goodput_bps_mean"].mean()) / 1e6
            rtt = float(cell["rtt_mean_ms_mean"].mean()) if "rtt_mean_ms_mean" in cell else math.nan
            cells.append(f"{gp:.3f} / {rtt:.0f}")
        table.add_row(*cells)
    console.print(table)


def _on_change(args: argparse.Namespace) -> str:
    if getattr(args, "new_revision", False) and getattr(args, "replace", False):
        raise ScenarioError(
            "--new-revision, --replace: choose one; allowed: --new-revision (keep the old "
            "revision) or --replace (discard it)"
        )
    if getattr(args, "new_revision", False):
        return "new"
    return "replace" if getattr(args, "replace", False) else "refuse"


def _revision_runs(store: Any, study: Study, model: int) -> int:
    """How many runs the revision of `study`'s definition under `model` holds (0: none)."""
    plan = study.revision_plan(model)
    found = store.query(
        "SELECT count(m.run_id) FROM study_revisions s JOIN revision_runs m "
        "ON m.study = s.study AND m.revision = s.revision "
        "WHERE s.study = ? AND s.definition_hash = ? AND s.model_version = ?",
        [plan.study, plan.definition_hash, model],
    )
    return int(found[0][0])


def _print_plan(study: Study, args: argparse.Namespace) -> int:
    """The grid, the variants and the run count; how many are stored when the database
    exists. Runs nothing and creates nothing."""
    from rich.console import Console

    from .. import _core
    from ..study.sweep import LAZY_FROM_RUNS, plan, stored_count

    model = _core.model_version()
    lazy = study.n_runs > LAZY_FROM_RUNS
    specs = [] if lazy else plan(study, model)
    out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    out.print(f"study {study.name}: {study.description}" if study.description else study.name)
    for axis in study.axes:
        shown = ", ".join(str(v) for v in axis.values)
        out.print(f"  sweep {axis.path}: {len(axis.values)} values: {shown}")
    named = [v for v in study.variants if v.name]
    if named:
        out.print(f"  variants ({len(named)}):")
        for v in named:
            sets = ", ".join(f"{k} = {val}" for k, val in v.overrides) or "(the base scenario)"
            out.print(f"    {v.name}: {sets}")
    out.print(
        f"  {study.n_points} grid points x {study.repetitions} repetitions (seeds "
        f"{study.base_seed}..{study.base_seed + study.repetitions - 1}) = {study.n_runs} runs"
        + (f", {len(specs)} distinct" if specs and len(specs) != study.n_runs else "")
    )
    db = Path(args.db)
    if lazy:
        out.print(
            f"  more than {LAZY_FROM_RUNS} runs: the sweep plans the grid as it goes and "
            f"skips the runs stored in {db}"
        )
        if db.exists():
            from ..study.store import Store

            stored = _revision_runs(Store(db, create=False), study, model)
            out.print(
                f"  {db}: {stored} of {study.n_runs} stored in this definition's revision "
                f"(model version {model}); runs other studies stored are found as it goes"
            )
        return 0
    if db.exists():
        from ..study.store import Store

        stored = stored_count(Store(db, create=False), specs)
        out.print(
            f"  {db}: {stored} of {len(specs)} already stored (model version {model}), "
            f"{len(specs) - stored} to simulate"
        )
    else:
        out.print(f"  {db}: does not exist yet; {len(specs)} to simulate (model version {model})")
    return 0


def _sweep(study: Study, args: argparse.Namespace) -> int:
    from rich.console import Console

    from .. import _core
    from ..present.console import wide_console
    from ..study.store import Store
    from ..study.sweep import LAZY_FROM_RUNS, plan, plan_chunks, run_study

    on_change = _on_change(args)
    if getattr(args, "report", None):
        _check_report_path("--report", args.report)
    check_output_file("--db", args.db)
    force = getattr(args, "force", False)
    # the grid is validated before the database is created or touched: the whole grid, or
    # the first chunk of one too large to expand before it starts
    specs = None
    if study.n_runs > LAZY_FROM_RUNS:
        next(plan_chunks(study, _core.model_version(), force=force), None)
    else:
        specs = plan(study, _core.model_version(), force=force)
    console = Console(stderr=True)
    store = Store(args.db, wait_s=args.db_wait)
    summary = run_study(
        study,
        store,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        console=console,
        progress=not args.no_progress,
        on_change=on_change,
        wait_s=args.db_wait,
        specs=specs,
        force=force,
    )
    _print_summary(wide_console(), study, store, summary)
    if args.report and not summary.interrupted:
        # imported once the runs are done: its libraries (pandas) would otherwise load
        # before the first run, while the sweep's workers load them alongside their runs
        from ..present.report import write_report

        path = write_report(store, args.report, study.name, revision=summary.revision)
        console.print(f"wrote {path}")
    return 130 if summary.interrupted else 0


def _check_report_path(option: str, out: str) -> None:
    if Path(out).suffix.lower() not in (".html", ".htm"):
        raise ScenarioError(f"{option} = {out!r}: a report is an HTML file; allowed: *.html")
    check_output_file(option, out)


def cmd_sweep(args: argparse.Namespace) -> int:
    from ..study.grid import load_study

    study = _scaled(load_study(args.study), args)
    if args.plan:
        return _print_plan(study, args)
    return _sweep(study, args)


def cmd_report(args: argparse.Namespace) -> int:
    from ..present.report import write_report

    _check_report_path("-o", args.output)
    store = _open_db(args.db)
    with store.reading():
        study, revision = _one_selected(store, args.study, args.revision)
        line = revision_line(store, study, revision)
        path = write_report(store, args.output, study, revision=revision)
    # said once it worked: a damaged file is then the one line on stderr
    _say(f"report of {line}")
    print(f"wrote {path}")
    return 0


def _trace_window(args: argparse.Namespace) -> tuple[int | None, int | None]:
    from ..errors import Problem, field_error
    from ..trace.request import parse_window
    from ..units import DURATION_ALLOWED, parse_duration_ns

    if args.window is None:
        return (None, None)
    ends: list[int | None] = []
    for text in parse_window(args.window):
        try:
            ends.append(None if text is None else parse_duration_ns(text))
        except Problem as exc:
            raise field_error("--window", args.window, exc.problem, DURATION_ALLOWED) from None
    lo, hi = ends
    if lo is not None and hi is not None and hi <= lo:
        raise field_error("--window", args.window, "ends before it starts")
    return (lo, hi)


def _trace_options_only(args: argparse.Namespace) -> None:
    """--flow, --window and --pcap-link belong to the packet-level kinds."""
    if PLOTS[args.kind].kind == "trace":
        return
    for option, value in (
        ("--flow", args.flow),
        ("--window", args.window),
        ("--pcap-link", args.pcap_link),
    ):
        if value is not None:
            raise ScenarioError(
                f"{option}: --kind {args.kind} is drawn from the study's stored results; "
                "allowed: with --kind tseq or cwnd-events"
            )


def cmd_plot(args: argparse.Namespace) -> int:
    from ..present.draw import render, save
    from ..present.plots import chart, check_selection
    from ..present.plotspecs import check_figure_path

    check_figure_path(args.output)
    check_output_file("-o", args.output)
    figures.check_data_path(args.data)
    style = figures.style_of(args)
    selection = figures.selection_of(args)
    check_selection(PLOTS[args.kind], selection)
    _trace_options_only(args)
    window = _trace_window(args)
    if PLOTS[args.kind].kind == "trace" and not args.db.lower().endswith(".duckdb"):
        from ..present.trace_plot import chart_from_files

        if not selection.empty or args.study or args.revision:
            raise ScenarioError(
                "--run/--seed/--point/--study/--revision choose runs of a results database; "
                f"allowed: with a .duckdb source, not {args.db!r}"
            )
        c = chart_from_files(args.kind, args.db, args.flow, window, args.pcap_link)
        save(render(c, style), args.output, style)
        print(f"wrote {args.output}")
        figures.write_data(c, args.data)
        return 0
    if args.pcap_link is not None:
        raise ScenarioError(
            "--pcap-link: a stored run is captured at its bottleneck; allowed: with a "
            "capture directory as the source"
        )
    store = _open_db(args.db)
    study, revision = _one_selected(store, args.study, args.revision)
    _say(f"plot of {revision_line(store, study, revision)}")
    runs = store.runs(study, revision)
    if PLOTS[args.kind].kind == "trace":
        from ..present.study_view import view_of
        from ..present.trace_plot import chart_from_run

        info = {**store.revision_info(study, revision), "study": study, "revision": revision}
        view = view_of(runs, info)
        c = chart_from_run(args.kind, store, view, runs, selection, args.flow, window)
    else:
        c = chart(args.kind, runs, store, selection)
    c.title = f"{c.title} ({study}, revision {revision})"
    save(render(c, style), args.output, style)
    print(f"wrote {args.output}")
    figures.write_data(c, args.data)
    return 0


def _export_format(fmt: str | None, out: str | None) -> str:
    """The format to write: `--format`, else what `-o`'s extension says, else CSV; a format
    and an extension that disagree are refused."""
    from ..results.export import format_of

    said = format_of(out) if out else None
    if out and said is None:
        raise ScenarioError(f"-o = {out!r}: unknown file extension; allowed: .csv, .parquet, .json")
    if fmt is None:
        return said or "csv"
    if said is not None and said != fmt:
        raise ScenarioError(
            f"-o = {out!r}: the extension says {said} but --format is {fmt}; allowed: "
            f"-o FILE.{fmt}, or --format {said}"
        )
    return fmt


def export_provenance(
    store: Store, chosen: list[tuple[str, int]], table: str, runs: pd.DataFrame
) -> dict[str, Any]:
    """What an exported table is of: the database, each study revision (its effective
    definition included), and the provenance of its runs (distinct values; per-run values are
    columns of the `runs` table); plus who exported it, where and when."""
    from ..results.provenance import Build, utc_now

    build = Build.current()

    def distinct(column: str) -> list[Any]:
        if column not in runs:
            return []
        return sorted({v for v in runs[column].tolist() if v == v and v is not None}, key=str)

    revisions = []
    for study, revision in chosen:
        info = store.revision_info(study, revision)
        revisions.append(
            {
                "study": study,
                "revision": revision,
                "model_version": info.get("model_version"),
                "definition_hash": info.get("definition_hash"),
                "definition": info.get("definition"),
            }
        )
    started = distinct("started_utc")
    import socket

    return {
        "table": table,
        "database": str(store.path),
        "studies": revisions,
        "n_runs": len(runs),
        "model_versions": distinct("model_version"),
        "run_tcplab_versions": distinct("tcplab_version"),
        "run_git_commits": distinct("git_commit"),
        "run_hosts": distinct("host"),
        "first_started_utc": str(started[0]) if started else None,
        "last_started_utc": str(started[-1]) if started else None,
        "wall_s_total": float(runs["wall_s"].sum()) if "wall_s" in runs else None,
        "exported_utc": utc_now(),
        "exported_by": {**build.to_dict(), "host": socket.gethostname()},
    }


def cmd_results(args: argparse.Namespace) -> int:
    from ..results.export import format_of, read_table, write_table

    fmt = _export_format(args.format, args.output)
    if args.output:
        check_output_file("-o", args.output)
    if fmt == "parquet" and not args.output:
        raise ScenarioError(
            "-o: parquet is binary and needs an output file; allowed: -o FILE.parquet"
        )
    if format_of(args.db) is not None:  # an exported table: read it back
        df, provenance = read_table(args.db)
        _say(f"{args.db}: {len(df)} rows; provenance: {', '.join(provenance) or 'none'}")
        write_table(df, args.output, fmt, provenance)
        if args.output:
            print(f"wrote {args.output} ({len(df)} rows)")
        return 0
    store = _open_db(args.db)
    chosen = _selected(store, args.study, args.revision)
    lines = [revision_line(store, study, revision) for study, revision in chosen]
    study_arg, revision_arg = chosen[0] if len(chosen) == 1 else (None, None)
    runs = store.runs(study_arg, revision_arg)
    if args.table == "flows":
        df = store.flows(study_arg, revision_arg)
    elif args.table == "aggregate":
        from ..study.aggregate import aggregate

        df = aggregate(runs)
    else:
        df = runs
    provenance = export_provenance(store, chosen, args.table, runs)
    for line in lines:
        _say(f"{args.table} of {line}")
    write_table(df, args.output, fmt, provenance)
    if args.output:
        print(f"wrote {args.output} ({len(df)} rows)")
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from ..study.grid import load_study
    from ..study.presets import presets

    found = presets()
    if args.action == "list":
        table = Table(title="published studies shipped as presets")
        for col in ("name", "runs", "paper", "description"):
            table.add_column(col)
        for name, paths in found.items():
            parts = [load_study(p) for p in paths]
            desc = " | ".join(st.description for st in parts)
            papers = {st.paper.citation() for st in parts if st.paper is not None}
            paper = " | ".join(sorted(papers)) or "-"
            table.add_row(name, str(sum(st.n_runs for st in parts)), paper, desc)
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
    from ..present.report import write_report
    from ..study.store import Store

    args.db = args.db or f"{args.name}.duckdb"
    report = args.report or f"{args.name}.html"
    _check_report_path("--report", report)
    args.report = None
    status = 0
    names = []
    for p in paths:
        study = _scaled(load_study(p), args)
        names.append(study.name)
        status = _sweep(study, args)
        if status:
            return status
    path = write_report(Store(args.db), report, names, title=args.name)
    Console(stderr=True).print(f"wrote {path}")
    return status


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=count_arg, default=None, help="parallel runs (default: all CPUs)")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--scheduler", metavar="URL", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--duration", help='override the simulated time of every run, e.g. "60s"')
    p.add_argument(
        "--repetitions", type=count_arg, default=None, help="override repetitions (seeds)"
    )
    p.add_argument(
        "--db-wait",
        type=seconds_arg,
        default=60.0,
        metavar="SECONDS",
        help="how long a commit waits while another process holds the database (default 60)",
    )
    p.add_argument(
        "--new-revision",
        action="store_true",
        help="the study's definition changed: store it as a new revision beside the old",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="the study's definition changed: discard the latest revision (and the runs no "
        "other revision uses) and store this one in its place",
    )


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", help="study name (needed if the database holds several)")
    p.add_argument(
        "--revision",
        type=revision_arg,
        default=None,
        help="study revision (default: the latest)",
    )


def add_commands(sub: Any) -> None:
    """Register the study commands on the main parser's subparsers."""
    sw = sub.add_parser("sweep", help="run a study (a scenario with a [sweep] table)")
    sw.add_argument("study", metavar="STUDY.toml")
    sw.add_argument(
        "--force", action="store_true", help="run points beyond the resource budget too"
    )
    sw.add_argument(
        "--db", default="results.duckdb", help="results database (default results.duckdb)"
    )
    sw.add_argument("--report", metavar="OUT.html", help="also write the HTML report")
    sw.add_argument(
        "--plan",
        action="store_true",
        help="print the grid, the variants and the run count (and how many are stored); "
        "run nothing",
    )
    _add_run_options(sw)
    sw.set_defaults(handler=cmd_sweep)

    rp = sub.add_parser("report", help="write a self-contained HTML report of a study")
    rp.add_argument("db", metavar="RESULTS.duckdb")
    _add_selection(rp)
    rp.add_argument("-o", "--output", default="report.html", metavar="OUT.html")
    rp.set_defaults(handler=cmd_report)

    pl = sub.add_parser("plot", help="draw one figure of a study, a capture or an event log")
    pl.add_argument(
        "db",
        metavar="SOURCE",
        help="a results .duckdb; for --kind tseq also a capture directory or a .pcapng or "
        ".pcap file, for --kind cwnd-events an event log .parquet",
    )
    _add_selection(pl)
    pl.add_argument("--kind", choices=tuple(PLOTS), default="goodput")
    pl.add_argument("-o", "--output", required=True, metavar="FIG.png|svg|pdf")
    figures.add_figure_options(pl)
    pl.add_argument(
        "--flow",
        type=index_arg,
        metavar="N",
        help="tseq/cwnd-events: this flow (of a capture: its N-th TCP connection)",
    )
    pl.add_argument(
        "--window", metavar="FROM:TO", help='tseq/cwnd-events: this time window, e.g. "10s:20s"'
    )
    pl.add_argument(
        "--pcap-link",
        metavar="SEGMENT",
        help="tseq of a capture directory: the segment whose captures to read",
    )
    pl.set_defaults(handler=cmd_plot)

    rs = sub.add_parser("results", help="export results (with provenance) as CSV, Parquet or JSON")
    rs.add_argument("db", metavar="RESULTS.duckdb|EXPORT")
    _add_selection(rs)
    rs.add_argument("--table", choices=TABLES, default="runs")
    rs.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        default=None,
        help="default: the extension of -o, else csv",
    )
    rs.add_argument("-o", "--output", metavar="FILE")
    rs.set_defaults(handler=cmd_results)

    st = sub.add_parser("study", help="the published studies: list | show NAME | run NAME")
    st.add_argument("action", choices=("list", "show", "run"))
    st.add_argument("name", nargs="?")
    st.add_argument("--db", help="results database (default NAME.duckdb)")
    st.add_argument("--report", metavar="OUT.html", help="report file (default NAME.html)")
    _add_run_options(st)
    st.set_defaults(handler=cmd_study)
