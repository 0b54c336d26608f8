"""Real-stack commands of the `tcplab` CLI.

tcplab emulate SCENARIO.toml [--seed N] [--duration D] [--set K=V ...] [--json]
    [--series OUT.parquet|csv] [--keep] [--pep auto|transparent|explicit]
    [--link auto|emu|netem] [--spin-us N] [--rt-prio N]
tcplab emulate --cleanup [--all]        remove leftover tcplab-* namespaces
tcplab emulate --calibrate [--json] [--seconds S]   measure the emulator's accuracy
tcplab validate SCENARIO.toml [--seed N] [--duration D] [--set K=V ...] [--ccas a,b] [--json]

Heavy imports happen inside the handlers, so `tcplab --help` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError

if TYPE_CHECKING:
    from .calibrate import CalibrationReport
    from .options import EmulateOptions
    from .validate import Agreement


def _notes() -> Callable[[str], None]:
    """Print each distinct note once (`validate` emulates once per algorithm)."""
    seen: set[str] = set()

    def note(message: str) -> None:
        if message not in seen:
            seen.add(message)
            print(f"note: {message}", file=sys.stderr)

    return note


def _options(args: argparse.Namespace) -> EmulateOptions:
    from .options import EmulateOptions

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


def _overrides(args: argparse.Namespace) -> list[str | tuple[str, Any]]:
    from .. import cli as main_cli  # the shared --seed/--duration/--set parsing

    return main_cli._overrides(args)


def cmd_emulate(args: argparse.Namespace) -> int:
    if args.cleanup:
        return _cleanup(args.all)
    if args.calibrate:
        return _calibrate(args)
    if args.scenario is None:
        raise ScenarioError(
            "emulate: missing SCENARIO.toml; allowed: a scenario file, --cleanup, --calibrate"
        )
    from ..loader import load_scenario
    from ..normalize import normalize
    from ..series import check_series_path, write_series
    from .emulate import emulate_normalized

    if args.series is not None:
        check_series_path(args.series)
    scenario = load_scenario(args.scenario, _overrides(args))
    emulation = emulate_normalized(normalize(scenario), _options(args))
    if args.series is not None:
        write_series(emulation.result, args.series)
    if args.json:
        print(json.dumps(emulation.to_json_dict()))
    else:
        from ..render import print_run

        print_run(emulation.result, args.series)
        if emulation.kept:
            print(f"namespaces kept: {' '.join(emulation.kept)} (tcplab emulate --cleanup)")
    return 0


def _cleanup(include_running: bool) -> int:
    from .cleanup import cleanup_leftovers
    from .features import check_root

    check_root()
    removed, kept = cleanup_leftovers(include_running=include_running)
    print(f"removed {len(removed)} namespace(s){': ' + ' '.join(removed) if removed else ''}")
    if kept:
        print(f"kept {len(kept)} of running emulations (--all removes them too): {' '.join(kept)}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate

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
    for header in ("configured ms", "mean ms", "error ms", "p99 ms", "max ms", "emulator late µs"):
        delays.add_column(header, justify="right")
    for d in report.delays:
        late = "-" if d.emulator_late_mean_ns is None else f"{d.emulator_late_mean_ns / 1e3:.1f}"
        delays.add_row(
            f"{d.configured_ns / 1e6:g}",
            f"{d.added_mean_ns / 1e6:.3f}",
            f"{d.error_ns / 1e6:+.3f}",
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


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import validate

    algorithms = (
        None if args.ccas is None else [a.strip() for a in args.ccas.split(",") if a.strip()]
    )
    rows = validate(
        args.scenario, overrides=_overrides(args), algorithms=algorithms, options=_options(args)
    )
    if args.json:
        print(json.dumps([row.to_json_dict() for row in rows]))
    else:
        print_agreement(rows)
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


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", help="master seed (replaces the scenario's)")
    parser.add_argument("--duration", help='run time, e.g. "60s"')
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='override a scenario key, e.g. "bottleneck.per=1e-4"',
    )
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
    em.add_argument("scenario", nargs="?", metavar="SCENARIO.toml", help="scenario file")
    _add_common(em)
    em.add_argument("--series", metavar="OUT", help="write the series to OUT.parquet/.csv")
    em.add_argument("--cleanup", action="store_true", help="remove leftover tcplab-* namespaces")
    em.add_argument("--all", action="store_true", help="with --cleanup: also of running emulations")
    em.add_argument("--calibrate", action="store_true", help="measure the emulator's accuracy")
    em.add_argument("--seconds", type=float, default=2.0, help="with --calibrate: per point")
    em.set_defaults(handler=cmd_emulate)

    va = sub.add_parser("validate", help="simulation vs kernel TCP, side by side (needs root)")
    va.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file")
    _add_common(va)
    va.add_argument("--ccas", help="comma-separated algorithms (default: all the kernel offers)")
    va.set_defaults(handler=cmd_validate)
