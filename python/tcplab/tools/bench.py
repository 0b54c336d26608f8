"""`python -m tcplab.tools.bench` (`make bench`): wall-clock speed on the two GEO benchmarks, a
GEO path through a distributed split-TCP PEP, how long `tcplab --version`, `--help` and
`run --help` take to start and `tcplab run` takes on the GEO scenario as a whole process, what
packet captures and the event log cost (`trace_bench`), the scaling table (`scaling`: cost per
delivered packet against flows, link rate and run length) and a published study end to end
with its report (`studybench`: runs per second, the share of the sweep spent in the core, the
report's time).

Each scenario runs `--repeat` times one after the other (never in parallel, so runs do not
compete for cores); the best wall time is reported, as is usual for benchmarks, because noise
only ever adds time. The ns-3 reference numbers come from the issue that motivated tcplab:
the 4 Mbit/s run took 12-20 s of wall time in ns-3, and the 50/20 Mbit/s run delivered about
360 packets per wall-clock second.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from .. import __version__, _core
from ..errors import ScenarioError
from ..limits import LIMITS
from ..results.parse import RunResult
from ..results.provenance import git_commit
from ..runner import run_scenario
from ..scenario.load import load_scenario
from .demo import builtin_scenario
from .scaling import cost_splits, print_scaling_report, run_scaling, scaling_targets
from .studybench import print_study_benchmarks, run_study_benchmarks, study_targets
from .trace_bench import describe as describe_trace
from .trace_bench import run_trace_benchmark

NS3_GEO4_WALL_S: Final = (12.0, 20.0)  # for 600 s simulated
NS3_GEO50_DELIVERED_PKTS_PER_S: Final = 360.0
NS3_SIMULATED_S: Final = 600.0
MSS_BYTES: Final[int] = LIMITS.tcp_defaults["mss_bytes"]

#: Overrides of the built-in GEO scenario (cubic, 250 ms one way, 2bdp queue, seed 1).
BENCHMARKS: Final[dict[str, list[tuple[str, Any]]]] = {
    "geo-4mbps": [("name", "geo-4mbps"), ("bottleneck.per", 1e-5)],
    "geo-50-20": [
        ("name", "geo-50-20"),
        ("bottleneck.rate", "50Mbps"),
        ("bottleneck.return_rate", "20Mbps"),
        ("bottleneck.per", 1e-5),
        ("flows.0.tcp.rwnd", "16MiB"),  # same as scenarios/geo-asym.toml
    ],
}


#: The distributed-PEP GEO path of scenarios/pep-geo.toml with a bulk flow: three TCP legs
#: (CUBIC, Hybla over the satellite, CUBIC) and two relays per packet.
PEP_GEO: Final[dict[str, Any]] = {
    "name": "pep-geo-bulk",
    "duration": "600s",
    "path": {
        "pep": "distributed",
        "segments": [
            {"name": "internet", "rate": "100Mbps", "delay": "10ms"},
            {
                "name": "satellite",
                "rate": "10Mbps",
                "return_rate": "2Mbps",
                "delay": "260ms",
                "per": 1e-5,
                "queue": "2bdp",
            },
            {"name": "access", "rate": "100Mbps", "delay": "5ms"},
        ],
    },
    "flows": [{"cca": "cubic", "pep": {"cca": "hybla", "initial_window": 10}}],
}


@dataclass(frozen=True)
class BenchRow:
    name: str
    simulated_s: float
    best_wall_s: float
    walls_s: tuple[float, ...]
    events: int
    events_per_s: float
    delivered_pkts_per_s: float
    ns3_reference: str
    speedup: str


def _row(name: str, runs: Sequence[RunResult]) -> BenchRow:
    best = min(runs, key=lambda r: r.wall_s)
    simulated_s = best.duration_ns / 1e9
    delivered_pkts = sum(flow.bytes_delivered for flow in best.flows) / MSS_BYTES
    delivered_pkts_per_s = delivered_pkts / best.wall_s
    if name not in ("geo-4mbps", "geo-50-20"):
        reference, speedup = "-", "-"
    elif name == "geo-4mbps":
        # ns-3's wall time grows with simulated time; scale the reference for short runs.
        low_s, high_s = (wall * simulated_s / NS3_SIMULATED_S for wall in NS3_GEO4_WALL_S)
        reference = f"ns-3: {low_s:.1f}-{high_s:.1f} s wall"
        speedup = f"{low_s / best.wall_s:.0f}-{high_s / best.wall_s:.0f}x"
    else:
        reference = f"ns-3: ~{NS3_GEO50_DELIVERED_PKTS_PER_S:.0f} delivered pkts/s"
        speedup = f"{delivered_pkts_per_s / NS3_GEO50_DELIVERED_PKTS_PER_S:.0f}x"
    return BenchRow(
        name=name,
        simulated_s=simulated_s,
        best_wall_s=best.wall_s,
        walls_s=tuple(r.wall_s for r in runs),
        events=best.events,
        events_per_s=best.events / best.wall_s,
        delivered_pkts_per_s=delivered_pkts_per_s,
        ns3_reference=reference,
        speedup=speedup,
    )


def run_benchmarks(repeat: int, duration: str | None) -> list[BenchRow]:
    base = builtin_scenario("geo-sat.toml")
    rows = []
    for name, overrides in BENCHMARKS.items():
        extra = [] if duration is None else [("duration", duration)]
        scenario = load_scenario(base, [*overrides, *extra])
        rows.append(_row(name, [run_scenario(scenario) for _ in range(repeat)]))
    pep = load_scenario(PEP_GEO, [] if duration is None else [("duration", duration)])
    rows.append(_row("pep-geo-bulk", [run_scenario(pep) for _ in range(repeat)]))
    return rows


@dataclass(frozen=True)
class StartupBench:
    """Best wall time of a command in a fresh interpreter, and of the bare interpreter with
    pydantic imported (what any command that reads a scenario needs anyway)."""

    command: str
    best_s: float
    baseline_s: float

    @property
    def above_baseline_s(self) -> float:
        return self.best_s - self.baseline_s


#: the commands whose start-up is measured: they must stay quick (STYLE: heavy imports lazy)
STARTUP_COMMANDS: Final = (("--version",), ("--help",), ("run", "--help"))


def _best_wall_s(argv: Sequence[str], repeat: int) -> float:
    import subprocess
    import time

    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def run_startup_benchmark(repeat: int = 10) -> list[StartupBench]:
    """`tcplab COMMAND` start-up against `python -c "import pydantic"`, best of `repeat`."""
    baseline = _best_wall_s([sys.executable, "-c", "import pydantic"], repeat)
    return [
        StartupBench(
            " ".join(("tcplab", *command)),
            _best_wall_s([sys.executable, "-m", "tcplab", *command], repeat),
            baseline,
        )
        for command in STARTUP_COMMANDS
    ]


def run_geo_process_benchmark(repeat: int = 3) -> float:
    """Best wall time of `tcplab run` on the shipped GEO scenario as a whole process
    (interpreter start, scenario checks, the run and the printed summary)."""
    from importlib import resources

    path = resources.files("tcplab").joinpath("data", "geo-sat.toml")
    return _best_wall_s([sys.executable, "-m", "tcplab", "run", str(path)], repeat)


def _print(rows: Sequence[BenchRow]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"tcplab {__version__} (core {_core.core_version()}) benchmarks")
    headers = ("scenario", "simulated s", "best wall s", "events/s", "delivered pkts/s")
    for header in (*headers, "reference", "speed-up"):
        table.add_column(header, justify="left" if header in ("scenario", "reference") else "right")
    for row in rows:
        table.add_row(
            row.name,
            f"{row.simulated_s:g}",
            f"{row.best_wall_s:.3f}",
            f"{row.events_per_s:,.0f}",
            f"{row.delivered_pkts_per_s:,.0f}",
            row.ns3_reference,
            row.speedup,
        )
    Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)


def _profile_status() -> str:
    """Whether the checkout's build profile matches its sources: the core's speed depends on
    it (`tools/pgo.py`), so the numbers say which build they are of."""
    from .golden import repo_root
    from .pgo import check

    try:
        problem = check(repo_root())
    except ScenarioError:
        return "unknown (not a source checkout)"
    return "current" if problem is None else f"stale: {problem}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcplab.tools.bench", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (best counts)")
    parser.add_argument("--duration", default=None, help='simulated time (default "600s")')
    parser.add_argument("--out", default="bench-out", help="directory for bench.json")
    parser.add_argument(
        "--no-study",
        action="store_true",
        help="skip the study benchmarks (geo-leaky end to end: several minutes)",
    )
    parser.add_argument(
        "--short-study",
        action="store_true",
        help="only the 60 s, one-seed variant of the study benchmark",
    )
    parser.add_argument(
        "--no-scaling", action="store_true", help="skip the scaling table (about a minute)"
    )
    parser.add_argument(
        "--held-load",
        action="store_true",
        help="add the held-load axis to the scaling table: n flows over n Gbit/s, for 10 to "
        "10,000 flows (about a minute more, and 5 GiB of memory)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        rows = run_benchmarks(args.repeat, args.duration)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print(rows)
    startup = run_startup_benchmark()
    for row in startup:
        print(
            f"start-up {row.command}: {row.best_s:.3f} s, {row.above_baseline_s:+.3f} s against "
            f"the interpreter with pydantic ({row.baseline_s:.3f} s); best of 10"
        )
    trace = run_trace_benchmark(args.repeat, args.duration)
    print(describe_trace(trace))
    geo_process_s = run_geo_process_benchmark()
    print(
        f"tcplab run geo-sat.toml (600 s simulated), whole process: {geo_process_s:.3f} s"
        " (best of 3)"
    )
    scaling = [] if args.no_scaling else run_scaling(args.duration, held=args.held_load)
    if scaling:
        print_scaling_report(scaling)
    studies = (
        []
        if args.no_study
        else run_study_benchmarks(full=not args.short_study, duration=args.duration)
    )
    if studies:
        print_study_benchmarks(studies)
    profile = _profile_status()
    print(f"build profile (PGO): {profile}")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "pgo_profile": profile,
        "tcplab_version": __version__,
        "core_version": _core.core_version(),
        "model_version": _core.model_version(),
        "git_commit": git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "repeat": args.repeat,
        "benchmarks": [asdict(row) for row in rows],
        "studies": [row.as_dict() for row in studies],
        "study_targets": [{**asdict(t), "met": t.met} for t in study_targets(studies)],
        "geo_run_process_s": geo_process_s,
        "tracing": {**asdict(trace), "null_ratio": trace.null_ratio},
        "scaling": [point.as_dict() for point in scaling],
        "scaling_targets": [{**asdict(t), "met": t.met} for t in scaling_targets(scaling)],
        "scaling_cost_splits": [asdict(split) for split in cost_splits(scaling)],
        "startup": [{**asdict(row), "above_baseline_s": row.above_baseline_s} for row in startup],
    }
    write_json(report, out_dir / "bench.json")
    print(f"wrote {out_dir / 'bench.json'}")
    return 0


def _strict(value: Any) -> Any:
    """`value` with every float that is not a number (a rate of nothing, the core's share of
    a command that ran no sweep) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def write_json(report: dict[str, Any], path: Path) -> None:
    """Write `report` as strict JSON (undefined numbers are null, not `NaN`, which JSON has
    not and strict readers refuse)."""
    text = json.dumps(_strict(report), indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
