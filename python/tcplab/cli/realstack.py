"""Real-stack commands of the `tcplab` CLI (the machinery is `tcplab.realstack`).

tcplab emulate SCENARIO.toml [--seed N] [--duration D] [--set K=V ...] [--json]
    [--series OUT.parquet|csv] [--keep] [--pep auto|transparent|explicit]
    [--link auto|emu|netem] [--spin-us N] [--rt-prio N]
tcplab emulate --cleanup [--all]        remove leftover tcplab-* namespaces
tcplab emulate --calibrate [--json] [--seconds S]   measure the emulator's accuracy
tcplab validate SCENARIO.toml [--seed N] [--duration D] [--set K=V ...] [--ccas a,b] [--json]
tcplab validate --matrix [--ccas a,b] [--per 0,1e-3] [--paths geo,terrestrial] [--seeds N]
    [--duration D] [--set K=V ...] [--db FILE] [--out DIR] [--json]
    [--plan | --sim-only | --rerun-kernel | --keep-stale]  the built-in agreement grid (matrix.py)

Heavy imports happen inside the handlers, so `tcplab --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError
from .options import add_scenario_options, add_trace_options, overrides, trace_of

if TYPE_CHECKING:
    from ..realstack.calibrate import CalibrationReport
    from ..realstack.options import EmulateOptions
    from ..realstack.validate import Agreement


def _notes() -> Callable[[str], None]:
    """Print each distinct note once (`validate` emulates once per algorithm)."""
    seen: set[str] = set()

    def note(message: str) -> None:
        if message not in seen:
            seen.add(message)
            print(f"note: {message}", file=sys.stderr)

    return note


def _options(args: argparse.Namespace) -> EmulateOptions:
    from ..realstack.options import EmulateOptions

    if not 0 <= args.spin_us <= 1000:
        raise ScenarioError(f"--spin-us = {args.spin_us}: out of range; allowed: 0 to 1000")
    if not 0 <= args.rt_prio <= 99:
        raise ScenarioError(f"--rt-prio = {args.rt_prio}: out of range; allowed: 0 to 99")
    return EmulateOptions(
        pep=args.pep,
        keep=args.keep,
        spin_us=args.spin_us,
        rt_prio=args.rt_prio,
        link=args.link,
        note=_notes(),
    )


def cmd_emulate(args: argparse.Namespace) -> int:
    if args.cleanup:
        return _cleanup(args.all)
    if args.calibrate:
        return _calibrate(args)
    if args.scenario is None:
        raise ScenarioError(
            "emulate: missing SCENARIO.toml; allowed: a scenario file, --cleanup, --calibrate"
        )
    from ..realstack.emulate import emulate_normalized
    from ..results.series import check_series_path, write_series
    from ..scenario.load import load_scenario
    from ..scenario.normalize import normalize

    if args.series is not None:
        check_series_path(args.series)
    capture = trace_of(args)
    scenario = load_scenario(args.scenario, overrides(args))
    options = replace(_options(args), capture=capture)
    emulation = emulate_normalized(normalize(scenario), options)
    if args.series is not None:
        write_series(emulation.result, args.series)
    if args.json:
        print(json.dumps(emulation.to_json_dict()))
    else:
        from ..present.console import print_run

        print_run(emulation.result, args.series)
        if emulation.result.trace is not None:
            from ..present.console import print_trace

            print_trace(emulation.result.trace)
        if emulation.kept:
            print(f"namespaces kept: {' '.join(emulation.kept)} (tcplab emulate --cleanup)")
    return 0


def _cleanup(include_running: bool) -> int:
    from ..realstack.cleanup import cleanup_leftovers
    from ..realstack.features import check_root

    check_root()
    removed, kept = cleanup_leftovers(include_running=include_running)
    print(f"removed {len(removed)} namespace(s){': ' + ' '.join(removed) if removed else ''}")
    if kept:
        print(f"kept {len(kept)} of running emulations (--all removes them too): {' '.join(kept)}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from ..realstack.calibrate import calibrate

    if not 0.5 <= args.seconds <= 600:
        raise ScenarioError(f"--seconds = {args.seconds}: out of range; allowed: 0.5 to 600")
    report = calibrate(_options(args), seconds=args.seconds)
    if args.json:
        print(json.dumps(report.to_json_dict()))
    else:
        print_calibration(report)
    return 0


def print_calibration(report: CalibrationReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    rates = Table(title="emulator rate (UDP at 120 % of the link rate, 1500-byte packets)")
    for header in ("configured Mbit/s", "achieved Mbit/s", "error %"):
        rates.add_column(header, justify="right")
    for r in report.rates:
        rates.add_row(
            f"{r.configured_bps / 1e6:g}",
            f"{r.achieved_bps / 1e6:.4f}",
            f"{r.error_ratio * 100:+.3f}",
        )
    delays = Table(title="added one-way delay (10 Mbit/s, 10 % load, serialization removed)")
    headers = (
        "configured ms",
        "mean ms",
        "error ms",
        "median ms",
        "p99 ms",
        "max ms",
        "emulator late µs",
    )
    for header in headers:
        delays.add_column(header, justify="right")
    for d in report.delays:
        late = "-" if d.emulator_late_mean_ns is None else f"{d.emulator_late_mean_ns / 1e3:.1f}"
        delays.add_row(
            f"{d.configured_ns / 1e6:g}",
            f"{d.added_mean_ns / 1e6:.3f}",
            f"{d.error_ns / 1e6:+.3f}",
            f"{d.added_p50_ns / 1e6:.3f}",
            f"{d.added_p99_ns / 1e6:.3f}",
            f"{d.added_max_ns / 1e6:.3f}",
            late,
        )
    losses = Table(title="packet error rate (Bernoulli, seeded)")
    for header in ("PER", "sent", "lost", "expected", "z (sigma)"):
        losses.add_column(header, justify="right")
    for lo in report.losses:
        losses.add_row(
            f"{lo.per:g}", str(lo.sent), str(lo.lost), f"{lo.expected:.0f}", f"{lo.z:+.2f}"
        )
    for table in (rates, delays, losses):
        console.print(table)


#: Options that only `validate --matrix` takes (dest, as written).
_MATRIX_ONLY = (
    ("per", "--per"),
    ("paths", "--paths"),
    ("seeds", "--seeds"),
    ("db", "--db"),
    ("out", "--out"),
    ("sim_only", "--sim-only"),
    ("plan", "--plan"),
    ("rerun_kernel", "--rerun-kernel"),
    ("keep_stale", "--keep-stale"),
    ("import_kernel", "--import-kernel"),
    ("export_kernel", "--export-kernel"),
)


def cmd_validate(args: argparse.Namespace) -> int:
    if args.matrix:
        return _matrix(args)
    for dest, option in _MATRIX_ONLY:
        if getattr(args, dest) not in (None, False):
            raise ScenarioError(f"{option}: only with --matrix; allowed: --matrix {option} ...")
    if args.scenario is None:
        raise ScenarioError("validate: missing SCENARIO.toml; allowed: a scenario file, --matrix")
    from ..realstack.validate import validate

    algorithms = (
        None if args.ccas is None else [a.strip() for a in args.ccas.split(",") if a.strip()]
    )
    rows = validate(
        args.scenario, overrides=overrides(args), algorithms=algorithms, options=_options(args)
    )
    if args.json:
        print(json.dumps([row.to_json_dict() for row in rows]))
    else:
        print_agreement(rows)
    return 0


def _matrix(args: argparse.Namespace) -> int:
    """`validate --matrix`: see `matrix` (cases, cache, summary) and `matrix_report`."""
    if args.scenario is not None:
        raise ScenarioError(
            f"--matrix: takes no SCENARIO.toml (got {args.scenario!r}); the matrix's paths are "
            "built in; allowed: --paths geo,terrestrial"
        )
    if args.seed is not None:
        raise ScenarioError("--seed: not with --matrix; allowed: --seeds N (seeds 1..N)")
    if args.link == "netem":
        raise ScenarioError(
            "--link netem: the matrix emulates with tcplab-emu (its cache is keyed by the "
            "emulator's build); allowed: emu, auto"
        )
    if args.sim_only and args.rerun_kernel:
        raise ScenarioError("--sim-only with --rerun-kernel: contradictory; allowed: either")
    if args.keep_stale and args.rerun_kernel:
        raise ScenarioError("--keep-stale with --rerun-kernel: contradictory; allowed: either")
    if args.plan and (args.sim_only or args.rerun_kernel or args.out or args.export_kernel):
        raise ScenarioError(
            "--plan: runs nothing; allowed with --ccas, --per, --paths, --seeds, "
            "--duration, --set, --db, --import-kernel, --json"
        )
    from pathlib import Path

    from ..realstack import matrix
    from ..realstack.kernel_cache import DEFAULT_PATH, CacheKey, KernelCache, current_identity

    kernel_needed = not (args.plan or args.sim_only)
    algorithms = matrix.parse_ccas(args.ccas, kernel_needed=kernel_needed)
    paths = matrix.parse_paths(args.paths)
    pers = matrix.parse_pers(args.per)
    seeds = matrix.parse_seeds(args.seeds)
    duration = matrix.parse_duration(args.duration)
    db = args.db or DEFAULT_PATH
    if args.out is not None:
        from ..files import check_output_dir

        check_output_dir("--out", args.out)
    cases = matrix.cases(algorithms, paths, pers, seeds, duration, list(args.set))
    identity = current_identity()
    from ..realstack import kernel_records

    if args.import_kernel is not None:
        with KernelCache(db) as cache:
            added = kernel_records.import_records(cache, args.import_kernel)
        print(f"matrix: imported {added} kernel run(s) into {db}", file=sys.stderr, flush=True)
    # without a cache of its own, --sim-only compares with the kernel runs shipped with tcplab
    recorded = args.sim_only and args.db is None and not Path(db).exists()
    if args.plan:
        if Path(db).exists():
            with KernelCache(db, read_only=True) as cache:
                planned = matrix.plan(cases, cache, identity, args.keep_stale)
        else:
            planned = matrix.plan(cases, None, identity)
        from ..realstack.matrix_report import print_plan

        print_plan(planned, db, args.json)
        return 0
    from dataclasses import replace

    options = replace(_options(args), link="emu")

    def progress(message: str) -> None:
        print(f"matrix: {message}", file=sys.stderr, flush=True)

    from ..realstack.emulate import emulate_normalized

    with KernelCache(
        ":memory:" if recorded else db, read_only=args.sim_only and not recorded
    ) as cache:
        if recorded:
            kernel_records.import_records(cache, kernel_records.RECORDED, "recorded runs")
            db = f"{kernel_records.RECORDED.name} (the recorded runs shipped with tcplab)"
            progress(f"kernel runs: {db}")
        planned = matrix.plan(cases, cache, identity, args.keep_stale)
        if not args.sim_only and (
            args.rerun_kernel or any(p.status in matrix.TO_EMULATE for p in planned)
        ):
            from ..realstack import features

            features.check_base()  # before simulating: say what the machine lacks at once
        failures: list[str] = []
        try:
            results = matrix.run_matrix(
                cases,
                cache,
                identity,
                emulate=lambda normalized: emulate_normalized(normalized, options),
                sim_only=args.sim_only,
                rerun_kernel=args.rerun_kernel,
                keep_stale=args.keep_stale,
                progress=progress,
                failures=failures,
            )
        except KeyboardInterrupt:
            progress(
                f"interrupted; {len(cache.keys())} kernel run(s) are in {db}: the same command "
                "continues where this one stopped"
            )
            raise
        if args.export_kernel is not None:
            used = {
                CacheKey(r.case.scenario_hash, r.case.seed, r.kernel.identity)
                for r in results
                if r.kernel is not None
            }
            n = kernel_records.export_records(cache, args.export_kernel, used)
            progress(f"wrote {n} kernel run(s) to {args.export_kernel}")
    summary = matrix.MatrixSummary(
        tuple(matrix.summarize(results)), identity, cases[0].duration_s, seeds, db
    )
    from ..realstack.matrix_report import print_matrix, write_outputs

    written = write_outputs(summary, Path(args.out)) if args.out is not None else []
    if args.json:
        print(json.dumps(summary.to_json_dict()))
    else:
        print_matrix(summary)
        if written:
            print("wrote " + ", ".join(str(path) for path in written))
    if failures:
        # the table is written (those cases marked without a kernel run); the status says so
        print(
            f"error: {len(failures)} kernel run(s) failed; the same command tries them again: "
            + "; ".join(failures),
            file=sys.stderr,
        )
        return 1
    return 0


def print_agreement(rows: list[Agreement]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
    table = Table(title="simulation vs kernel (emulated links)")
    for header in ("cca", "flow", "metric", "simulated", "emulated", "ratio", "difference"):
        table.add_column(header, justify="left" if header in ("cca", "metric") else "right")

    def num(value: float | None, fmt: str = ".3f") -> str:
        return "-" if value is None else format(value, fmt)

    for row in rows:
        metric = f"{row.metric} ({row.unit})" if row.unit else row.metric
        table.add_row(
            row.cca,
            str(row.flow),
            metric,
            num(row.simulated),
            num(row.emulated),
            num(row.ratio),
            num(row.difference, "+.3f"),
        )
    console.print(table)
    for row in rows:
        if row.models:
            models = ", ".join(f"{name} {value:.3f}" for name, value in row.models.items())
            console.print(f"theory, {row.cca} flow {row.flow} ({row.unit}): {models}")
    if any("CUBIC" in row.models for row in rows):
        from ..present.console import CUBIC_MODEL

        console.print(f"CUBIC: {CUBIC_MODEL}")


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_scenario_options(parser, optional=True)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--pep",
        choices=("auto", "transparent", "explicit"),
        default="auto",
        help="how PEPs intercept connections (auto: TPROXY if available)",
    )
    parser.add_argument(
        "--link",
        choices=("auto", "emu", "netem"),
        default="auto",
        help="who models the links: tc netem + tbf, tcplab-emu, or auto (netem if the "
        "kernel has it and the scenario fits it; --calibrate always measures tcplab-emu)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the namespaces afterwards")
    parser.add_argument("--spin-us", type=int, default=50, help="emulator busy-wait (µs)")
    parser.add_argument(
        "--rt-prio", type=int, default=10, help="emulator SCHED_FIFO priority (0: off)"
    )


def add_commands(sub: Any) -> None:
    """Register `emulate` and `validate` on the main parser's subparsers."""
    em = sub.add_parser("emulate", help="run a scenario on the kernel's TCP (needs root)")
    _add_common(em)
    em.add_argument("--series", metavar="OUT", help="write the series to OUT.parquet/.csv")
    add_trace_options(em, events=False)
    em.add_argument("--cleanup", action="store_true", help="remove leftover tcplab-* namespaces")
    em.add_argument("--all", action="store_true", help="with --cleanup: also of running emulations")
    em.add_argument("--calibrate", action="store_true", help="measure the emulator's accuracy")
    em.add_argument("--seconds", type=float, default=2.0, help="with --calibrate: per point")
    em.set_defaults(handler=cmd_emulate)

    va = sub.add_parser("validate", help="simulation vs kernel TCP, side by side (needs root)")
    _add_common(va)
    va.add_argument("--ccas", help="comma-separated algorithms (default: all the kernel offers)")
    va.add_argument(
        "--matrix",
        action="store_true",
        help="the built-in agreement matrix: algorithms x PER x paths x seeds (cached)",
    )
    va.add_argument("--per", help="with --matrix: PERs, e.g. 0,1e-3 (default 0,1e-5,...,1e-2)")
    va.add_argument("--paths", help="with --matrix: geo,terrestrial (default both)")
    va.add_argument("--seeds", help="with --matrix: seeds 1..N per case (default 3)")
    va.add_argument(
        "--db", metavar="FILE", help="with --matrix: kernel-run cache (validate-matrix.duckdb)"
    )
    va.add_argument(
        "--out", metavar="DIR", help="with --matrix: write matrix.md, matrix.html, matrix.json"
    )
    va.add_argument(
        "--sim-only", action="store_true", help="with --matrix: no kernel runs, cached ones only"
    )
    va.add_argument(
        "--plan", action="store_true", help="with --matrix: list the cases and what is cached"
    )
    va.add_argument(
        "--rerun-kernel", action="store_true", help="with --matrix: emulate cached cases again"
    )
    va.add_argument(
        "--keep-stale",
        action="store_true",
        help="with --matrix: use runs another kernel or emulator build made (marked as such) "
        "and emulate only the cases with none",
    )
    va.add_argument(
        "--import-kernel",
        metavar="FILE",
        help="with --matrix: add kernel runs from a file written by --export-kernel to --db",
    )
    va.add_argument(
        "--export-kernel",
        metavar="FILE",
        help="with --matrix: write the kernel runs the table used (gzipped JSON lines)",
    )
    va.set_defaults(handler=cmd_validate)
