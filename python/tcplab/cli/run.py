"""Single-scenario commands: run | check | ccas | demo.

Each handler imports what it uses, so `tcplab run` pays for the scenario model, the core and
the console, and only `--series` brings in pandas/pyarrow. `tcplab run` never holds a run's
series in memory: `--series FILE` gets them as the run goes, otherwise they are not kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import field_error
from .options import (
    add_scenario_options,
    add_trace_options,
    count_arg,
    duration_arg,
    overrides,
    per_arg,
    trace_of,
)


def cmd_run(args: argparse.Namespace) -> int:
    from ..runner import run_scenario
    from ..scenario.load import load_scenario

    if args.series is not None:
        from ..results.series import check_series_path

        check_series_path(args.series)
    trace = trace_of(args)
    scenario = load_scenario(args.scenario, overrides(args))
    progress = None
    if args.progress or sys.stderr.isatty():
        from ..present.progress import RunProgress

        progress = RunProgress(sys.stderr)
    # the series go to the file as the run goes, or nowhere: never held whole in memory
    try:
        result = run_scenario(
            scenario, series=args.series, trace=trace, force=args.force, progress=progress
        )
    except KeyboardInterrupt:
        if trace is not None and trace.pcap is not None:
            # the core closes each capture at a block boundary when it stops: a valid file
            print(
                f"note: the pcapng captures in {trace.pcap} end where the run was interrupted",
                file=sys.stderr,
            )
        raise
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        print(json.dumps(result.to_json_dict()))
    else:
        from ..present.console import print_run

        print_run(result, args.series)
        if result.trace is not None:
            from ..present.console import print_trace

            print_trace(result.trace)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..scenario.load import load_scenario
    from ..scenario.normalize import normalized_json

    print(normalized_json(load_scenario(args.scenario, overrides(args)), indent=2))
    return 0


def cmd_validate_scenario(args: argparse.Namespace) -> int:
    """The old name of `check`, kept so scripts keep working; says so once on stderr."""
    print("note: `tcplab validate-scenario` is now `tcplab check`", file=sys.stderr)
    return cmd_check(args)


def cmd_ccas(args: argparse.Namespace) -> int:
    from ..catalogue import ccas, ccas_json_list, find_cca

    if args.name is None:
        if args.json:
            print(json.dumps(ccas_json_list()))
        else:
            from ..present.console import print_catalogue

            print_catalogue(ccas())
        return 0
    catalogue = ccas()
    info = find_cca(catalogue, args.name)
    if info is None:
        allowed = ", ".join(c.name for c in catalogue) or "none (the core lists no algorithms)"
        raise field_error("ccas NAME", args.name, "unknown algorithm", allowed)
    if args.json:
        print(json.dumps(next(e for e in ccas_json_list() if e.get("name") == info.name)))
    else:
        from ..present.console import print_cca

        print_cca(info)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from ..files import check_output_dir
    from ..present.console import print_demo
    from ..tools.demo import run_demo, write_outputs, write_report_outputs

    check_output_dir("--out", args.out)
    duration = duration_arg(args.duration)
    rows = run_demo(duration=duration, per=per_arg(args.per), max_workers=args.jobs)
    written = write_outputs(rows, Path(args.out))
    written += write_report_outputs(Path(args.out), duration, args.jobs)
    print_demo(rows, written)
    return 0


def add_commands(sub: Any) -> None:
    """Register run, check (and its old name), ccas and demo."""
    run = sub.add_parser("run", help="run one scenario")
    add_scenario_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--series", metavar="OUT", help="write the series to OUT.parquet/.csv")
    run.add_argument(
        "--force", action="store_true", help="run even beyond the resource budget (events, memory)"
    )
    run.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr every 2 s (the default when stderr is a terminal)",
    )
    add_trace_options(run)
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="check a scenario and print its normalized JSON")
    add_scenario_options(check)
    check.set_defaults(handler=cmd_check)
    # no help: the old name is accepted but not listed
    old = sub.add_parser("validate-scenario")
    add_scenario_options(old)
    old.set_defaults(handler=cmd_validate_scenario)

    ccas = sub.add_parser("ccas", help="list the congestion-control algorithms")
    ccas.add_argument("name", nargs="?", metavar="NAME", help="show one algorithm in detail")
    ccas.add_argument("--json", action="store_true", help="print the catalogue as JSON")
    ccas.set_defaults(handler=cmd_ccas)

    demo = sub.add_parser("demo", help="GEO satellite demo: every algorithm vs theory")
    demo.add_argument("--out", default="demo-out", metavar="DIR", help="output directory")
    demo.add_argument("--duration", help='simulated time (default "600s")')
    demo.add_argument("--per", help="forward packet error rate (default 1e-4)")
    demo.add_argument("--jobs", type=count_arg, default=None, help="parallel runs (default: CPUs)")
    demo.set_defaults(handler=cmd_demo)
