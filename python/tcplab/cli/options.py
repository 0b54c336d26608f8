"""Argument types and options shared by the command groups: the scenario options of `run`,
`check`, `emulate` and `validate` are declared here once, and usage mistakes become one-line
`ScenarioError`s (exit 2) instead of argparse's multi-line usage text.

Nothing heavy is imported here: `tcplab --help` builds every parser.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from ..errors import Problem, ScenarioError, field_error


class Parser(argparse.ArgumentParser):
    """argparse that reports usage mistakes as a one-line ScenarioError instead of exiting
    with a multi-line usage message."""

    def error(self, message: str) -> NoReturn:
        raise ScenarioError(message.removeprefix("argument "))


def seed_arg(text: str | None) -> int | None:
    if text is None:
        return None
    from ..limits import LIMITS

    try:
        seed = int(text, 0)
    except ValueError:
        raise field_error("--seed", text, "not an integer", f"0 to {LIMITS.max_seed}") from None
    if not 0 <= seed <= LIMITS.max_seed:
        raise field_error("--seed", text, "out of range", f"0 to {LIMITS.max_seed}")
    return seed


def duration_arg(text: str | None) -> str | None:
    if text is None:
        return None
    from ..units import parse_duration_ns

    try:
        duration_ns = parse_duration_ns(text)
    except Problem as exc:
        raise field_error("--duration", text, exc.problem, exc.allowed) from None
    if duration_ns <= 0:
        raise field_error("--duration", text, "must be greater than 0")
    return text


def per_arg(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        per = float(text)
    except ValueError:
        raise field_error("--per", text, "not a number", "0 <= per < 1") from None
    if not 0.0 <= per < 1.0:
        raise field_error("--per", text, "must be in [0, 1)")
    return per


def _ranged(text: str, convert: type[int] | type[float], low: float, high: float | None) -> Any:
    """`text` as a number in [low, high] (no upper end: None), or argparse's usage error
    naming what is allowed (argparse adds the option)."""
    allowed = f"{low:g} ..= {high:g}" if high is not None else f"{low:g}, {low + 1:g}, ..."
    kind = "an integer" if convert is int else "a number of seconds"
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: must be {kind}; allowed: {allowed}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{text}: out of range; allowed: {allowed}")
    return value


def count_arg(text: str) -> int:
    """A positive count (`--jobs`, `--repetitions`)."""
    count: int = _ranged(text, int, 1, 1024)
    return count


def index_arg(text: str) -> int:
    """A flow index (0, 1, ...)."""
    index: int = _ranged(text, int, 0, None)
    return index


def seconds_arg(text: str) -> float:
    """A wait in seconds (`--db-wait`)."""
    seconds: float = _ranged(text, float, 0, 86400)
    return seconds


def revision_arg(text: str) -> int:
    """A study revision (`--revision`)."""
    revision: int = _ranged(text, int, 1, None)
    return revision


def add_scenario_options(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """SCENARIO.toml, --seed, --duration and --set; `optional`: the scenario may be left out
    (`emulate --cleanup`, `validate --matrix`)."""
    parser.add_argument(
        "scenario",
        nargs="?" if optional else None,
        metavar="SCENARIO.toml",
        help="scenario file",
    )
    parser.add_argument("--seed", help="master seed (replaces the scenario's)")
    parser.add_argument("--duration", help='run time, e.g. "60s"')
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='override a scenario key, e.g. "bottleneck.per=1e-4" or "flows.0.cca=reno"',
    )


def overrides(args: argparse.Namespace) -> list[str | tuple[str, Any]]:
    """--set pairs, then --seed and --duration, in the form `load_scenario` takes."""
    pairs: list[str | tuple[str, Any]] = list(args.set)
    seed = seed_arg(args.seed)
    if seed is not None:
        pairs.append(("seed", seed))
    duration = duration_arg(args.duration)
    if duration is not None:
        pairs.append(("duration", duration))
    return pairs


def add_trace_options(parser: argparse.ArgumentParser, *, events: bool = True) -> None:
    """--pcap DIR and its filters (`run`, `emulate`); `events`: also --events FILE."""
    parser.add_argument(
        "--pcap",
        metavar="DIR",
        help="write pcapng captures at both ends of the bottleneck (or --pcap-link) into DIR",
    )
    if events:
        parser.add_argument(
            "--events",
            metavar="FILE.parquet",
            help="write every change of each sender's cwnd, ssthresh, CA state, ... to FILE",
        )
    parser.add_argument(
        "--pcap-link",
        action="append",
        default=[],
        metavar="SEGMENT",
        help="capture at this path segment instead of the bottleneck (repeatable)",
    )
    parser.add_argument(
        "--trace-flow",
        action="append",
        type=index_arg,
        default=None,
        metavar="N",
        help="record only flow N (repeatable; default: every flow)",
    )
    parser.add_argument(
        "--trace-window",
        metavar="FROM:TO",
        help='record only this time window, e.g. "10s:20s" (either end may be left out)',
    )
    parser.add_argument(
        "--snaplen",
        type=lambda t: _ranged(t, int, 64, None),
        metavar="BYTES",
        help="bytes kept of each captured frame (default: every header)",
    )


def trace_of(args: argparse.Namespace) -> Any:
    """The `Trace` the trace options ask for (None when neither --pcap nor --events)."""
    from ..trace.request import Trace, parse_window

    pcap, events = args.pcap, getattr(args, "events", None)
    if pcap is None and events is None:
        for option, given in (
            ("--pcap-link", args.pcap_link),
            ("--trace-flow", args.trace_flow),
            ("--trace-window", args.trace_window),
            ("--snaplen", args.snaplen),
        ):
            if given:
                raise field_error(option, given, "filters a trace", "with --pcap DIR or --events")
        return None
    if args.pcap_link and pcap is None:
        raise field_error("--pcap-link", args.pcap_link, "chooses capture points", "with --pcap")
    start, end = parse_window(args.trace_window) if args.trace_window else (None, None)
    return Trace(
        pcap=pcap,
        events=events,
        flows=args.trace_flow,
        start=start,
        end=end,
        links=tuple(args.pcap_link),
        snaplen_bytes=args.snaplen,
    )
