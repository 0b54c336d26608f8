"""The study benchmarks of `make bench`: a published study end to end as a user runs it
(`tcplab study run geo-leaky`, sweep, summary table and report), and `tcplab report` alone
on the study's database.

Each runs in a fresh interpreter, one after the other. The child runs the command through
the CLI's own entry point and reports, besides its wall time, CPU seconds — what a loaded
machine (this one has 2 cores shared with other work) disturbs far less than wall time:

- the whole command's CPU time (all threads, and the child processes that drew the report's
  figures, from `getrusage`);
- the sweep's: the process's CPU time while `run_study` runs, and the part of it the
  worker threads spent inside the core (`SweepSummary.core_cpu_s`, each thread's own CPU
  clock around the core call) — their ratio is the share of the sweep that is simulation;
- the report's (`write_report`), and the sweep's runs per second of wall time.

The child observes the sweep and the report by wrapping the two functions the CLI calls,
without changing what they do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Final

#: The child: runs `tcplab ARGS...` and prints one JSON line of measurements.
_CHILD: Final = """
import json, resource, sys, time

def cpu():
    # the report's figure workers are child processes, joined before it returns
    return sum(
        r.ru_utime + r.ru_stime
        for r in (resource.getrusage(resource.RUSAGE_SELF),
                  resource.getrusage(resource.RUSAGE_CHILDREN))
    )

seen = {"sweeps": []}
started_wall, started_cpu = time.perf_counter(), cpu()
import tcplab.present.report as report
import tcplab.study.sweep as sweep

run_study, write_report = sweep.run_study, report.write_report

def timed_sweep(*args, **kwargs):
    w, c = time.perf_counter(), cpu()
    summary = run_study(*args, **kwargs)
    seen["sweeps"].append({
        "wall_s": time.perf_counter() - w, "cpu_s": cpu() - c, "ran": summary.ran,
        "core_cpu_s": summary.core_cpu_s})
    return summary

def timed_report(*args, **kwargs):
    w, c = time.perf_counter(), cpu()
    out = write_report(*args, **kwargs)
    seen["report"] = {"wall_s": time.perf_counter() - w, "cpu_s": cpu() - c}
    return out

sweep.run_study, report.write_report = timed_sweep, timed_report
from tcplab.cli.main import main
status = main(sys.argv[1:])
seen.update(status=status, wall_s=time.perf_counter() - started_wall, cpu_s=cpu() - started_cpu)
print(json.dumps(seen))
"""


@dataclass(frozen=True)
class StudyBench:
    """One command's measurements (see the module note); times in seconds."""

    command: str
    runs: int
    wall_s: float
    cpu_s: float
    sweep_wall_s: float
    sweep_cpu_s: float
    core_cpu_s: float
    report_wall_s: float
    report_cpu_s: float
    #: which of the benchmark's commands this is (`SHORT_ROLE`, `FULL_ROLE`, `REPORT_ROLE`);
    #: empty when the runs' length was changed, so the study's targets do not apply
    role: str = ""

    @property
    def core_share(self) -> float:
        """Share of the sweep's CPU time spent inside the core."""
        return self.core_cpu_s / self.sweep_cpu_s if self.sweep_cpu_s > 0 else float("nan")

    @property
    def core_percent(self) -> float:
        """`core_share` in percent (divided once, so a share on a target's limit is exact)."""
        return 100 * self.core_cpu_s / self.sweep_cpu_s if self.sweep_cpu_s > 0 else float("nan")

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.sweep_wall_s if self.sweep_wall_s > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "core_share": self.core_share, "runs_per_s": self.runs_per_s}


def _child(argv: Sequence[str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"tcplab {' '.join(argv)}: {done.stderr.strip()[-500:]}")
    out: dict[str, Any] = json.loads(lines[-1])
    if out.get("status") != 0:
        raise RuntimeError(f"tcplab {' '.join(argv)}: exit {out.get('status')}")
    return out


def measure(argv: Sequence[str], cwd: Path) -> StudyBench:
    """Run `tcplab ARGV` in a fresh interpreter in `cwd` and read its measurements."""
    m = _child(argv, cwd)
    sweeps = m.get("sweeps", [])
    report = m.get("report") or {"wall_s": 0.0, "cpu_s": 0.0}
    return StudyBench(
        command="tcplab " + " ".join(argv),
        runs=sum(s["ran"] for s in sweeps),
        wall_s=m["wall_s"],
        cpu_s=m["cpu_s"],
        sweep_wall_s=sum(s["wall_s"] for s in sweeps),
        sweep_cpu_s=sum(s["cpu_s"] for s in sweeps),
        core_cpu_s=sum(s["core_cpu_s"] or 0.0 for s in sweeps),
        report_wall_s=report["wall_s"],
        report_cpu_s=report["cpu_s"],
    )


#: The published study of the benchmark, and its cheap variant (one seed of 60 s runs).
STUDY: Final = "geo-leaky"
SHORT: Final = ("--duration", "60s", "--repetitions", "1")
SHORT_ROLE: Final = "60 s variant"
FULL_ROLE: Final = "whole study"
REPORT_ROLE: Final = "report alone"

#: What the study may cost on a 2-core machine: the whole study end to end (sweep, summary
#: table and report) in wall seconds; at least this percentage of the sweep's CPU time
#: inside the core; `tcplab report` alone on its database, whole process, in wall seconds;
#: and the 60 s variant's CPU seconds: a third of the 14.0 it took when these targets were
#: set (2026-11-27, README "Benchmark").
FULL_STUDY_MAX_WALL_S: Final = 90.0
SWEEP_MIN_CORE_PERCENT: Final = 85.0
REPORT_MAX_WALL_S: Final = 3.0
SHORT_VARIANT_MAX_CPU_S: Final = 14.0 / 3


@dataclass(frozen=True)
class Target:
    """One target of the study benchmark and what this run measured."""

    what: str
    measured: float
    limit: float
    #: True: met when `measured <= limit`; False: when `measured >= limit`
    at_most: bool
    unit: str

    @property
    def met(self) -> bool:
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit

    def describe(self) -> str:
        sign = "<=" if self.at_most else ">="
        verdict = "met" if self.met else "missed"
        return (
            f"{self.what}: {self.measured:.2f} {self.unit} "
            f"(target {sign} {self.limit:.2f} {self.unit}): {verdict}"
        )


def study_targets(rows: Sequence[StudyBench]) -> list[Target]:
    """The targets the rows measure (none for rows of shortened runs)."""
    out = []
    for r in rows:
        if r.role == SHORT_ROLE:
            out.append(Target(f"{r.role}, CPU", r.cpu_s, SHORT_VARIANT_MAX_CPU_S, True, "s"))
        elif r.role == FULL_ROLE:
            out.append(Target(f"{r.role}, wall", r.wall_s, FULL_STUDY_MAX_WALL_S, True, "s"))
            out.append(
                Target(
                    f"{r.role}, core share of the sweep's CPU",
                    r.core_percent,
                    SWEEP_MIN_CORE_PERCENT,
                    False,
                    "%",
                )
            )
        elif r.role == REPORT_ROLE:
            out.append(Target(f"{r.role}, wall", r.wall_s, REPORT_MAX_WALL_S, True, "s"))
    return out


def run_study_benchmarks(
    full: bool = True, jobs: int | None = None, duration: str | None = None
) -> list[StudyBench]:
    """The study's 60 s variant end to end; with `full`, the whole study (2,880 runs of
    600 s) end to end and then `tcplab report` alone on its database. `duration` replaces
    both runs' lengths (a quick check of the benchmark itself)."""
    jobs_args = ["--jobs", str(jobs or os.cpu_count() or 1)]
    short = [*SHORT[:1], duration, *SHORT[2:]] if duration else list(SHORT)
    whole = ["--duration", duration] if duration else []
    out = []

    def run(argv: list[str], cwd: Path, role: str) -> None:
        out.append(replace(measure(argv, cwd), role="" if duration else role))

    with tempfile.TemporaryDirectory(prefix="tcplab-bench-") as tmp:
        cwd = Path(tmp)
        base = ["study", "run", STUDY, "--no-progress", *jobs_args]
        run([*base, *short, "--db", "short.duckdb"], cwd, SHORT_ROLE)
        if full:
            run([*base, *whole, "--db", "full.duckdb"], cwd, FULL_ROLE)
            run(["report", "full.duckdb", "-o", "again.html"], cwd, REPORT_ROLE)
    return out


def print_study_benchmarks(rows: Sequence[StudyBench]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title="studies end to end (CPU seconds: this machine's 2 cores are shared, so wall "
        "times vary with the load)"
    )
    headers = (
        "command",
        "runs",
        "wall s",
        "CPU s",
        "sweep runs/s",
        "core share of sweep CPU",
        "report wall s",
        "report CPU s",
    )
    for header in headers:
        table.add_column(header, justify="left" if header == "command" else "right")
    for r in rows:
        table.add_row(
            r.command,
            f"{r.runs:,}",
            f"{r.wall_s:.1f}",
            f"{r.cpu_s:.1f}",
            f"{r.runs_per_s:.1f}" if r.runs else "-",
            f"{100 * r.core_share:.0f} %" if r.runs else "-",
            f"{r.report_wall_s:.2f}",
            f"{r.report_cpu_s:.2f}",
        )
    Console(highlight=False, width=None if sys.stdout.isatty() else 200).print(table)
    for target in study_targets(rows):
        print(f"study target, {target.describe()}")
