"""Run scenarios on the Rust core: validate → normalize → `_core.run_json` → `RunResult`.

The core releases the GIL for the whole run, so `run_parallel` uses plain threads; each run
owns its whole simulation, so there is nothing to share or lock. A run asked to record
packet captures or its event log (`trace.Trace`) goes through `_core.run_traced_json`
instead, with the same result.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from . import _core
from .errors import ScenarioError
from .results.parse import RunResult
from .results.provenance import RunProvenance, git_commit, utc_now
from .scenario.load import Overrides, ScenarioSource, load_scenario, override_pairs
from .scenario.model import Scenario
from .scenario.normalize import normalize

if TYPE_CHECKING:
    from .trace.request import Trace


def run(
    scenario: ScenarioSource,
    seed: int | None = None,
    duration: str | None = None,
    overrides: Overrides = (),
    trace: Trace | None = None,
) -> RunResult:
    """Run one scenario: a TOML file path, a `Scenario`, or a TOML-shaped dict.

    `seed` and `duration` (a string with a unit, e.g. `"60s"`) replace the scenario's values;
    `overrides` are `--set`-style `"key.path=value"` strings or a `{path: value}` mapping.
    `trace` records pcapng captures and/or the event log (`tcplab.Trace`; the result is the
    same as without it, with `result.trace` saying what was written).
    Raises `ScenarioError` (one-line message) for invalid input, including input the core
    rejects.
    """
    pairs: list[tuple[str, Any]] = override_pairs(overrides)
    if seed is not None:
        pairs.append(("seed", seed))
    if duration is not None:
        pairs.append(("duration", duration))
    return run_scenario(load_scenario(scenario, pairs), trace)


def run_scenario(scenario: Scenario, trace: Trace | None = None) -> RunResult:
    """Run an already validated scenario; wall time is measured around the core call only."""
    return run_normalized(normalize(scenario), trace)


def run_normalized(normalized: Mapping[str, Any], trace: Trace | None = None) -> RunResult:
    """Run a normalized scenario (docs/interface.md), e.g. the effective scenario an
    emulation ran, so both sides see exactly the same input."""
    if trace is not None and not trace.empty:
        return _run_traced(normalized, trace)
    text = json.dumps(normalized)
    started_utc = utc_now()
    started = time.perf_counter()
    try:
        result_text = _core.run_json(text)
    except ValueError as exc:
        # The core re-validates its input; its message already names the field.
        raise ScenarioError(f"simulation core: {exc}") from None
    wall_s = time.perf_counter() - started
    return RunResult.from_json(
        result_text,
        wall_s=wall_s,
        scenario=dict(normalized),
        run_info=RunProvenance.here(started_utc, wall_s),
        git_commit=git_commit(),
    )


def _run_traced(normalized: Mapping[str, Any], trace: Trace) -> RunResult:
    from .scenario.normalize import scenario_hash
    from .scenario.topology import segments
    from .trace.request import TraceOutput, prepare

    comment = (
        f"tcplab simulation of scenario {normalized.get('name', '')!r}: scenario hash "
        f"{scenario_hash(normalized)}, seed {normalized.get('seed')}, model version "
        f"{_core.model_version()}"
    )
    names = [s.name for s in segments(normalized)] or ["bottleneck"]
    prepared = prepare(trace, comment, names, len(normalized["flows"]))
    started_utc = utc_now()
    started = time.perf_counter()
    try:
        result_text, report_text = _core.run_traced_json(
            json.dumps(normalized), json.dumps(prepared.spec)
        )
    except ValueError as exc:
        if prepared.events_raw is not None:
            prepared.events_raw.unlink(missing_ok=True)
        raise ScenarioError(f"simulation core: {exc}") from None
    wall_s = time.perf_counter() - started
    result = RunResult.from_json(
        result_text,
        wall_s=wall_s,
        scenario=dict(normalized),
        run_info=RunProvenance.here(started_utc, wall_s),
        git_commit=git_commit(),
    )
    output = TraceOutput.from_report(json.loads(report_text), prepared)
    if prepared.events is not None and prepared.events_raw is not None:
        from .trace.events import to_parquet

        flows = [{"id": f.id, "cca": f.cca, "kind": f.kind} for f in result.flows]
        count = to_parquet(prepared.events_raw, prepared.events, result.provenance(), flows)
        output = replace(output, events=prepared.events, event_count=count)
    return replace(result, trace=output)


_Input = TypeVar("_Input")


def _parallel(
    run_one: Callable[[_Input], RunResult], inputs: Sequence[_Input], max_workers: int | None
) -> list[RunResult]:
    workers = max(1, min(len(inputs), max_workers or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run_one, inputs))


def run_parallel(scenarios: Sequence[Scenario], max_workers: int | None = None) -> list[RunResult]:
    """Run independent scenarios on `max_workers` threads (default: one per CPU); the results
    come back in the input order."""
    return _parallel(run_scenario, scenarios, max_workers)


def run_normalized_parallel(
    normalized: Sequence[Mapping[str, Any]], max_workers: int | None = None
) -> list[RunResult]:
    """`run_parallel` for normalized scenarios."""
    return _parallel(run_normalized, normalized, max_workers)
