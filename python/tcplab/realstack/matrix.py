"""`tcplab validate --matrix`: the simulator against the Linux kernel over a built-in grid.

The grid (defined here and nowhere else): every algorithm both the kernel and the simulator
have (`validate.comparable_ccas`), x forward packet error rate `PERS`, x path `PATHS` (package
data `tcplab/data/matrix-*.toml`: a GEO path, 4 Mbit/s each way and 250 ms one way, and a
terrestrial one, 10 Mbit/s and 10 ms one way; both with a 2xBDP DropTail queue and 1 Gbit/s,
0.01 ms access links), x seeds 1..N, `DEFAULT_DURATION` each. One case is one (algorithm,
path, PER, seed): its effective normalized scenario is simulated and emulated as is, so
both sides see the same input and seed.

Kernel runs take real time and are cached (`kernel_cache`): a rerun simulates again and only
emulates what is not cached (or everything with `rerun_kernel`); `sim_only` never emulates.
They run one at a time, seed by seed (every case's first seed before any second one), so an
interrupted matrix already covers the whole grid.

Per (algorithm, path, PER) the seeds are summarized (`MatrixRow`): mean goodput, mean RTT and
retransmissions of each side over the seeds that have a kernel run, the ratios kernel /
simulator of the goodput and RTT means, and the pass mark: both ratios within
1 ± `TOLERANCE_RATIO`. `matrix_report` renders the rows (console, Markdown, HTML).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from ..catalogue import ccas as simulator_ccas
from ..errors import Problem, ScenarioError, field_error
from ..results.parse import RunResult
from ..runner import run_normalized_parallel
from ..scenario.load import Overrides, load_scenario, override_pairs
from ..scenario.normalize import normalize
from ..units import parse_duration_ns
from .emulate import Emulation
from .errors import EmulationError
from .kernel_cache import CacheKey, Identity, KernelCache
from .validate import goodput_models

#: Path name → base scenario in the package data.
PATHS: Final = {"geo": "matrix-geo.toml", "terrestrial": "matrix-terrestrial.toml"}
#: Forward packet error rates.
PERS: Final = (0.0, 1e-5, 1e-4, 1e-3, 1e-2)
DEFAULT_SEEDS: Final = 3
MAX_SEEDS: Final = 100
DEFAULT_DURATION: Final = "120s"
#: Pass: kernel / simulator of the mean goodput and of the mean RTT within 1 ± this.
TOLERANCE_RATIO: Final = 0.10
#: Wall time of a kernel case beyond its duration: namespaces, iperf3's set-up and end
#: (measured on this VM: 126 s for a 120 s case).
KERNEL_OVERHEAD_S: Final = 6.0


def base_scenario(path: str) -> dict[str, Any]:
    """A path's base scenario (raw TOML dict)."""
    from ..tools.demo import builtin_scenario

    return builtin_scenario(PATHS[path])


# ---------------------------------------------------------------------------------------
# Options: one-line errors naming the option and the allowed values
# ---------------------------------------------------------------------------------------


def _items(option: str, text: str) -> list[str]:
    items = list(dict.fromkeys(item.strip() for item in text.split(",") if item.strip()))
    if not items:
        raise field_error(option, text, "empty list", "comma-separated values")
    return items


def parse_paths(text: str | None) -> list[str]:
    if text is None:
        return list(PATHS)
    items = _items("--paths", text)
    for item in items:
        if item not in PATHS:
            raise field_error("--paths", item, "unknown path", ", ".join(PATHS))
    return items


def parse_pers(text: str | None) -> list[float]:
    if text is None:
        return list(PERS)
    out: list[float] = []
    for item in _items("--per", text):
        try:
            per = float(item)
        except ValueError:
            raise field_error("--per", item, "not a number", "0 <= per < 1, e.g. 0,1e-3") from None
        if not 0.0 <= per < 1.0:
            raise field_error("--per", item, "out of range", "0 <= per < 1, e.g. 0,1e-3")
        if per not in out:
            out.append(per)
    return out


def parse_seeds(text: str | None) -> int:
    if text is None:
        return DEFAULT_SEEDS
    try:
        seeds = int(text)
    except ValueError:
        raise field_error("--seeds", text, "not an integer", f"1 to {MAX_SEEDS}") from None
    if not 1 <= seeds <= MAX_SEEDS:
        raise field_error("--seeds", text, "out of range", f"1 to {MAX_SEEDS}")
    return seeds


def parse_duration(text: str | None) -> str:
    """A positive whole number of seconds: iperf3 runs whole seconds (`-t`), and the
    simulated side must run exactly as long."""
    if text is None:
        return DEFAULT_DURATION
    try:
        duration_ns = parse_duration_ns(text)
    except Problem as exc:
        raise field_error("--duration", text, exc.problem, exc.allowed) from None
    if duration_ns <= 0 or duration_ns % 10**9:
        raise field_error(
            "--duration",
            text,
            "the kernel runs whole seconds",
            'a whole number of seconds, e.g. "30s"',
        )
    return text


def parse_ccas(text: str | None, *, kernel_needed: bool) -> list[str]:
    """The algorithms: by default every one both the kernel and the simulator have (in the
    kernel's order). Named ones must be in both — or, when no kernel runs (`--plan`,
    `--sim-only`), in the simulator."""
    from .validate import comparable_ccas

    requested = None if text is None else _items("--ccas", text)
    if kernel_needed or requested is None:
        return comparable_ccas(requested)
    known = [info.name for info in simulator_ccas()]
    for name in requested:
        if name not in known:
            raise field_error("--ccas", name, "unknown to the simulator", ", ".join(known))
    return requested


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixCase:
    """One cell of the grid with one seed, and the effective scenario both sides run."""

    cca: str
    path: str
    per: float
    seed: int
    normalized: Mapping[str, Any] = field(compare=False, repr=False)

    @cached_property
    def scenario_hash(self) -> str:
        from ..study.grid import scenario_hash

        return scenario_hash(self.normalized)

    @property
    def group(self) -> tuple[str, str, float]:
        return (self.cca, self.path, self.per)

    @property
    def duration_s(self) -> float:
        return int(self.normalized["duration_ns"]) / 1e9

    @property
    def label(self) -> str:
        return f"{self.cca} {self.path} PER {self.per:g} seed {self.seed}"

    def key(self, identity: Identity) -> CacheKey:
        return CacheKey(self.scenario_hash, self.seed, identity)


def cases(
    algorithms: Sequence[str],
    paths: Sequence[str],
    pers: Sequence[float],
    seeds: int,
    duration: str = DEFAULT_DURATION,
    overrides: Overrides = (),
) -> list[MatrixCase]:
    """Every case, in display order (algorithm, path, PER, seed); `overrides` (`--set`) go on
    top of each path's base scenario, before the case's own values."""
    extra = override_pairs(overrides)
    out = []
    for cca in algorithms:
        for path in paths:
            base = base_scenario(path)
            for per in pers:
                for seed in range(1, seeds + 1):
                    pairs: list[tuple[str, Any]] = [
                        *extra,
                        ("flows.0.cca", cca),
                        ("bottleneck.per", per),
                        ("seed", seed),
                        ("duration", duration),
                    ]
                    normalized = normalize(load_scenario(base, pairs))
                    out.append(MatrixCase(cca, path, per, seed, normalized))
    return out


def kernel_order(case: MatrixCase) -> tuple[int, str, str, float]:
    """Kernel runs go seed by seed, so an interrupted matrix covers every cell once first."""
    return (case.seed, case.path, case.cca, case.per)


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSide:
    """A case's kernel run: emulated now or from the cache (`cached`); `stale` when it was
    made by another kernel, emulator or tcplab than this machine's (only `sim_only` uses
    such runs)."""

    result: RunResult
    identity: Identity
    created: _dt.datetime | None
    cached: bool
    stale: bool = False


@dataclass(frozen=True)
class CaseResult:
    case: MatrixCase
    simulated: RunResult
    kernel: KernelSide | None


#: Emulates a normalized scenario (`emulate.emulate_normalized` with the command's options).
Emulator = Callable[[Mapping[str, Any]], Emulation]


@dataclass(frozen=True)
class PlannedCase:
    case: MatrixCase
    #: "cached", "stale" (another kernel/emulator/tcplab made it: emulated again), "stale,
    #: kept" (such a run, used as it is) or "to run"
    status: str


def plan(
    matrix: Sequence[MatrixCase],
    cache: KernelCache | None,
    identity: Identity,
    keep_stale: bool = False,
) -> list[PlannedCase]:
    """Which kernel runs are cached, without running anything."""
    keys = cache.keys() if cache is not None else set()
    done = {(k.scenario_hash, k.seed) for k in keys if k.identity == identity}
    other = {(k.scenario_hash, k.seed) for k in keys}
    out = []
    for case in matrix:
        at = (case.scenario_hash, case.seed)
        status = "cached" if at in done else "stale" if at in other else "to run"
        if status == "stale" and keep_stale:
            status = "stale, kept"
        out.append(PlannedCase(case, status))
    return out


def run_matrix(
    matrix: Sequence[MatrixCase],
    cache: KernelCache | None,
    identity: Identity,
    *,
    emulate: Emulator | None = None,
    sim_only: bool = False,
    rerun_kernel: bool = False,
    keep_stale: bool = False,
    progress: Callable[[str], None] = lambda _: None,
    failures: list[str] | None = None,
) -> list[CaseResult]:
    """Simulate every case (in parallel: fast), take each kernel run from `cache` or (unless
    `sim_only`) emulate it, one at a time, storing each as soon as it is done. With
    `keep_stale`, a run made by another kernel, emulator build or tcplab counts (marked
    stale) and only the cases without any run are emulated. With `failures`, a kernel run
    that fails is noted there (and the case left without one) instead of ending the matrix:
    hours of other cases should not wait on one."""
    progress(f"simulating {len(matrix)} case(s)")
    simulated = run_normalized_parallel([case.normalized for case in matrix])
    kernel: dict[int, KernelSide] = {}
    todo: list[int] = []
    for i, case in enumerate(matrix):
        stored = None
        if cache is not None and not rerun_kernel:
            stored = cache.get(case.key(identity))
            if stored is None and (sim_only or keep_stale):
                stored = cache.latest(case.scenario_hash, case.seed)
        if stored is not None:
            made_by = stored.key.identity
            kernel[i] = KernelSide(
                stored.result, made_by, stored.created, True, made_by != identity
            )
        elif not sim_only:
            todo.append(i)
    if todo:
        if emulate is None or cache is None:
            raise ScenarioError("validate --matrix: kernel runs needed but no emulator given")
        todo.sort(key=lambda i: kernel_order(matrix[i]))
        for n, i in enumerate(todo, 1):
            case = matrix[i]
            progress(
                f"kernel {n}/{len(todo)}: {case.label} ({case.duration_s:g} s; "
                f"~{_minutes(todo[n - 1 :], matrix)} min left)"
            )
            try:
                emulation = emulate(case.normalized)
            except EmulationError as err:
                if failures is None:
                    raise
                failures.append(f"{case.label}: {err}")
                progress(f"  failed: {err} (the same command tries it again)")
                continue
            result = emulation.result
            sim_bps, kernel_bps = simulated[i].flows[0].goodput_bps, result.flows[0].goodput_bps
            progress(
                f"  done in {result.wall_s:.0f} s: goodput kernel {kernel_bps / 1e6:.3f}, "
                f"simulator {sim_bps / 1e6:.3f} Mbit/s"
            )
            cache.put(
                case.key(identity),
                result,
                emulation.result_data,
                emulation.recording,
                emulation.notes,
                result.core_version,
            )
            kernel[i] = KernelSide(result, identity, None, False)
    return [
        CaseResult(case, sim, kernel.get(i))
        for i, (case, sim) in enumerate(zip(matrix, simulated, strict=True))
    ]


def _minutes(indices: Sequence[int], matrix: Sequence[MatrixCase]) -> int:
    return math.ceil(sum(matrix[i].duration_s + KERNEL_OVERHEAD_S for i in indices) / 60)


#: Plan statuses whose kernel run is emulated (again).
TO_EMULATE: Final = ("stale", "to run")


def kernel_minutes(planned: Sequence[PlannedCase]) -> int:
    """Estimated wall time of the kernel runs still to do."""
    todo = [p.case for p in planned if p.status in TO_EMULATE]
    return math.ceil(sum(c.duration_s + KERNEL_OVERHEAD_S for c in todo) / 60)


# ---------------------------------------------------------------------------------------
# Summary per (algorithm, path, PER)
# ---------------------------------------------------------------------------------------


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else value_ns / 1e6


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _ratio(kernel: float | None, simulated: float | None) -> float | None:
    if kernel is None or simulated is None or simulated == 0:
        return None
    return kernel / simulated


def _spread(values: Sequence[float]) -> float | None:
    """(max - min) / mean over the seeds; None for fewer than two."""
    mean = _mean(values)
    if len(values) < 2 or mean is None or mean == 0:
        return None
    return (max(values) - min(values)) / mean


@dataclass(frozen=True)
class SeedValues:
    """One seed of a cell: each side's goodput (bit/s), mean RTT (ms), retransmissions and
    per-second series (cwnd in bytes, goodput in bit/s; the kernel's is None without a run).
    """

    seed: int
    sim_goodput_bps: float
    sim_rtt_ms: float | None
    sim_retransmits: int
    kernel_goodput_bps: float | None
    kernel_rtt_ms: float | None
    kernel_retransmits: int | None
    kernel_stale: bool
    t_s: tuple[float, ...]
    sim_cwnd_bytes: tuple[int, ...]
    sim_goodput_series_bps: tuple[float, ...]
    kernel_t_s: tuple[float, ...] = ()
    kernel_cwnd_bytes: tuple[int, ...] = ()
    kernel_goodput_series_bps: tuple[float, ...] = ()

    @classmethod
    def of(cls, result: CaseResult) -> SeedValues:
        sim = result.simulated
        (flow,) = sim.tcp_flows
        series = sim.series.flows[0]
        kernel = result.kernel
        k_flow = kernel.result.tcp_flows[0] if kernel else None
        k_series = kernel.result.series if kernel else None
        return cls(
            seed=result.case.seed,
            sim_goodput_bps=flow.goodput_bps,
            sim_rtt_ms=_ms(flow.rtt.srtt_time_mean_ns),
            sim_retransmits=flow.retransmits,
            kernel_goodput_bps=None if k_flow is None else k_flow.goodput_bps,
            kernel_rtt_ms=None if k_flow is None else _ms(k_flow.rtt.srtt_time_mean_ns),
            kernel_retransmits=None if k_flow is None else k_flow.retransmits,
            kernel_stale=bool(kernel and kernel.stale),
            t_s=tuple(t / 1e9 for t in sim.series.t_ns),
            sim_cwnd_bytes=series.cwnd_bytes,
            sim_goodput_series_bps=series.goodput_bps,
            kernel_t_s=() if k_series is None else tuple(t / 1e9 for t in k_series.t_ns),
            kernel_cwnd_bytes=() if k_series is None else k_series.flows[0].cwnd_bytes,
            kernel_goodput_series_bps=() if k_series is None else k_series.flows[0].goodput_bps,
        )

    @property
    def has_kernel(self) -> bool:
        return self.kernel_goodput_bps is not None

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "simulated": {
                "goodput_bps": self.sim_goodput_bps,
                "rtt_mean_ms": self.sim_rtt_ms,
                "retransmits": self.sim_retransmits,
                "series": {
                    "t_s": list(self.t_s),
                    "cwnd_bytes": list(self.sim_cwnd_bytes),
                    "goodput_bps": list(self.sim_goodput_series_bps),
                },
            },
            "kernel": None
            if not self.has_kernel
            else {
                "goodput_bps": self.kernel_goodput_bps,
                "rtt_mean_ms": self.kernel_rtt_ms,
                "retransmits": self.kernel_retransmits,
                "stale": self.kernel_stale,
                "series": {
                    "t_s": list(self.kernel_t_s),
                    "cwnd_bytes": list(self.kernel_cwnd_bytes),
                    "goodput_bps": list(self.kernel_goodput_series_bps),
                },
            },
        }


@dataclass(frozen=True)
class MatrixRow:
    """One (algorithm, path, PER) over its seeds. Means and ratios are over the seeds with a
    kernel run (all seeds for the simulator when there is none), so both sides average the
    same seeds; `models`: the closed-form goodput models for the path (Mbit/s)."""

    cca: str
    path: str
    per: float
    seeds: tuple[SeedValues, ...]
    models: Mapping[str, float]

    @property
    def paired(self) -> tuple[SeedValues, ...]:
        with_kernel = tuple(s for s in self.seeds if s.has_kernel)
        return with_kernel or self.seeds

    @property
    def n_kernel(self) -> int:
        return sum(s.has_kernel for s in self.seeds)

    @property
    def sim_goodput_bps(self) -> float | None:
        return _mean([s.sim_goodput_bps for s in self.paired])

    @property
    def kernel_goodput_bps(self) -> float | None:
        return _mean([s.kernel_goodput_bps for s in self.seeds if s.kernel_goodput_bps is not None])

    @property
    def sim_rtt_ms(self) -> float | None:
        return _mean([s.sim_rtt_ms for s in self.paired if s.sim_rtt_ms is not None])

    @property
    def kernel_rtt_ms(self) -> float | None:
        return _mean([s.kernel_rtt_ms for s in self.seeds if s.kernel_rtt_ms is not None])

    @property
    def sim_retransmits(self) -> float | None:
        return _mean([float(s.sim_retransmits) for s in self.paired])

    @property
    def kernel_retransmits(self) -> float | None:
        return _mean(
            [float(s.kernel_retransmits) for s in self.seeds if s.kernel_retransmits is not None]
        )

    @property
    def goodput_ratio(self) -> float | None:
        return _ratio(self.kernel_goodput_bps, self.sim_goodput_bps)

    @property
    def rtt_ratio(self) -> float | None:
        return _ratio(self.kernel_rtt_ms, self.sim_rtt_ms)

    @property
    def sim_spread(self) -> float | None:
        return _spread([s.sim_goodput_bps for s in self.paired])

    @property
    def kernel_spread(self) -> float | None:
        values = [s.kernel_goodput_bps for s in self.seeds if s.kernel_goodput_bps is not None]
        return _spread(values)

    @property
    def stale(self) -> bool:
        return any(s.kernel_stale for s in self.seeds)

    @property
    def passed(self) -> bool | None:
        """Both ratios within 1 ± TOLERANCE_RATIO; None without a kernel run (or RTT)."""
        ratios = (self.goodput_ratio, self.rtt_ratio)
        if self.n_kernel == 0 or any(r is None for r in ratios):
            return None
        return all(abs(r - 1.0) <= TOLERANCE_RATIO + 1e-12 for r in ratios if r is not None)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "cca": self.cca,
            "path": self.path,
            "per": self.per,
            "seeds": len(self.seeds),
            "kernel_seeds": self.n_kernel,
            "simulated": {
                "goodput_bps": self.sim_goodput_bps,
                "rtt_mean_ms": self.sim_rtt_ms,
                "retransmits": self.sim_retransmits,
                "goodput_spread_ratio": self.sim_spread,
            },
            "kernel": {
                "goodput_bps": self.kernel_goodput_bps,
                "rtt_mean_ms": self.kernel_rtt_ms,
                "retransmits": self.kernel_retransmits,
                "goodput_spread_ratio": self.kernel_spread,
                "stale": self.stale,
            },
            "goodput_ratio": self.goodput_ratio,
            "rtt_ratio": self.rtt_ratio,
            "passed": self.passed,
            "models_mbps": dict(self.models),
            "per_seed": [s.to_json_dict() for s in self.seeds],
        }


def summarize(results: Sequence[CaseResult]) -> list[MatrixRow]:
    """One row per (algorithm, path, PER), in the order the cases came."""
    groups: dict[tuple[str, str, float], list[CaseResult]] = {}
    for result in results:
        groups.setdefault(result.case.group, []).append(result)
    rows = []
    for (cca, path, per), members in groups.items():
        members.sort(key=lambda r: r.case.seed)
        models = goodput_models(members[0].case.normalized, 0)
        seeds = tuple(SeedValues.of(r) for r in members)
        rows.append(MatrixRow(cca, path, per, seeds, models))
    return rows


@dataclass(frozen=True)
class MatrixSummary:
    """The rows and what they were made with."""

    rows: tuple[MatrixRow, ...]
    identity: Identity
    duration_s: float
    seeds: int
    db: str

    @property
    def counts(self) -> tuple[int, int, int]:
        """(passed, failed, without a kernel run)."""
        marks = [row.passed for row in self.rows]
        return (marks.count(True), marks.count(False), marks.count(None))

    def to_json_dict(self) -> dict[str, Any]:
        passed, failed, missing = self.counts
        return {
            "identity": self.identity.to_json_dict(),
            "duration_s": self.duration_s,
            "seeds": self.seeds,
            "tolerance_ratio": TOLERANCE_RATIO,
            "db": self.db,
            "passed": passed,
            "failed": failed,
            "without_kernel": missing,
            "rows": [row.to_json_dict() for row in self.rows],
        }
