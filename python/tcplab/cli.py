"""The `tcplab` command: run | ccas | demo | validate-scenario | sweep | report | plot |
results | study (the study commands live in `cli_study.py`).

User mistakes print one line `error: ...` on stderr and exit with status 2; anything else that
goes wrong prints `internal error: ...` and exits with 1 (set TCPLAB_TRACEBACK=1 to see the
traceback). Tables go to stdout through rich; `--json` prints exactly one JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from .cli_study import add_commands as add_study_commands
from .errors import Problem, ScenarioError, field_error
from .realstack.cli import add_commands as add_realstack_commands
from .scenario import MAX_SEED
from .units import parse_duration_ns


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage mistakes as a one-line ScenarioError instead of exiting
    with a multi-line usage message."""

    def error(self, message: str) -> NoReturn:
        raise ScenarioError(message.removeprefix("argument "))


def _seed_arg(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        seed = int(text, 0)
    except ValueError:
        raise field_error("--seed", text, "not an integer", f"0 to {MAX_SEED}") from None
    if not 0 <= seed <= MAX_SEED:
        raise field_error("--seed", text, "out of range", f"0 to {MAX_SEED}")
    return seed


def _duration_arg(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        duration_ns = parse_duration_ns(text)
    except Problem as exc:
        raise field_error("--duration", text, exc.problem, exc.allowed) from None
    if duration_ns <= 0:
        raise field_error("--duration", text, "must be greater than 0")
    return text


def _per_arg(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        per = float(text)
    except ValueError:
        raise field_error("--per", text, "not a number", "0 <= per < 1") from None
    if not 0.0 <= per < 1.0:
        raise field_error("--per", text, "must be in [0, 1)")
    return per


def _overrides(args: argparse.Namespace) -> list[str | tuple[str, Any]]:
    pairs: list[str | tuple[str, Any]] = list(args.set)
    seed = _seed_arg(args.seed)
    if seed is not None:
        pairs.append(("seed", seed))
    duration = _duration_arg(args.duration)
    if duration is not None:
        pairs.append(("duration", duration))
    return pairs


def _cmd_run(args: argparse.Namespace) -> int:
    from .loader import load_scenario
    from .runner import run_scenario
    from .series import check_series_path, write_series

    if args.series is not None:
        check_series_path(args.series)
    scenario = load_scenario(args.scenario, _overrides(args))
    result = run_scenario(scenario)
    if args.series is not None:
        write_series(result, args.series)
    if args.json:
        print(json.dumps(result.to_json_dict()))
    else:
        from .render import print_run

        print_run(result, args.series)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from .loader import load_scenario
    from .normalize import normalized_json

    print(normalized_json(load_scenario(args.scenario, _overrides(args)), indent=2))
    return 0


def _cmd_ccas(args: argparse.Namespace) -> int:
    from .catalogue import ccas, ccas_json_list, find_cca

    if args.name is None:
        if args.json:
            print(json.dumps(ccas_json_list()))
        else:
            from .render import print_catalogue

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
        from .render import print_cca

        print_cca(info)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo, write_outputs, write_report_outputs
    from .render import print_demo

    duration = _duration_arg(args.duration)
    rows = run_demo(duration=duration, per=_per_arg(args.per), max_workers=args.jobs)
    written = write_outputs(rows, Path(args.out))
    written += write_report_outputs(Path(args.out), duration, args.jobs)
    print_demo(rows, written)
    return 0


def _add_scenario_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO.toml", help="scenario file")
    parser.add_argument("--seed", help="master seed (replaces the scenario's)")
    parser.add_argument("--duration", help='simulated time, e.g. "60s"')
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='override a scenario key, e.g. "bottleneck.per=1e-4" or "flows.0.cca=reno"',
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tcplab", description="TCP congestion-control lab")
    parser.add_argument("--version", action="store_true", help="print versions and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="run one scenario")
    _add_scenario_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.add_argument("--series", metavar="OUT", help="write the series to OUT.parquet/.csv")
    run.set_defaults(handler=_cmd_run)

    validate = sub.add_parser(
        "validate-scenario", help="validate and print the normalized scenario JSON"
    )
    _add_scenario_options(validate)
    validate.set_defaults(handler=_cmd_validate)

    ccas = sub.add_parser("ccas", help="list the congestion-control algorithms")
    ccas.add_argument("name", nargs="?", metavar="NAME", help="show one algorithm in detail")
    ccas.add_argument("--json", action="store_true", help="print the catalogue as JSON")
    ccas.set_defaults(handler=_cmd_ccas)

    demo = sub.add_parser("demo", help="GEO satellite demo: every algorithm vs theory")
    demo.add_argument("--out", default="demo-out", metavar="DIR", help="output directory")
    demo.add_argument("--duration", help='simulated time (default "600s")')
    demo.add_argument("--per", help="forward packet error rate (default 1e-4)")
    demo.add_argument("--jobs", type=int, default=None, help="parallel runs (default: CPUs)")
    demo.set_defaults(handler=_cmd_demo)

    add_study_commands(sub)
    add_realstack_commands(sub)
    return parser


def _versions() -> str:
    from . import __version__, _core

    return (
        f"tcplab {__version__} (core {_core.core_version()}, model version {_core.model_version()})"
    )


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        print(_versions())
        return 0
    if args.command is None:
        raise ScenarioError(
            "missing command; allowed: run, ccas, demo, validate-scenario, sweep, report, plot, "
            "results, study, emulate, validate"
        )
    status: int = args.handler(args)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; returns the exit status (0 ok, 1 internal error, 2 user error)."""
    try:
        return _run(argv)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): silence the flush at exit, like other CLI tools
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:
        if os.environ.get("TCPLAB_TRACEBACK"):
            raise
        print(" ".join(f"internal error: {type(exc).__name__}: {exc}".split()), file=sys.stderr)
        return 1
