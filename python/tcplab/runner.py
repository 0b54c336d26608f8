"""Run scenarios on the Rust core: validate → normalize → `_core.run_json` → `RunResult`.

The core releases the GIL for the whole run, so `run_parallel` uses plain threads; each run
owns its whole simulation, so there is nothing to share or lock.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from . import _core
from .errors import ScenarioError
from .results.parse import RunResult
from .results.provenance import RunProvenance, git_commit, utc_now
from .scenario.load import Overrides, ScenarioSource, load_scenario, override_pairs
from .scenario.model import Scenario
from .scenario.normalize import normalize


def run(
    scenario: ScenarioSource,
    seed: int | None = None,
    duration: str | None = None,
    overrides: Overrides = (),
) -> RunResult:
    """Run one scenario: a TOML file path, a `Scenario`, or a TOML-shaped dict.

    `seed` and `duration` (a string with a unit, e.g. `"60s"`) replace the scenario's values;
    `overrides` set scenario keys by their dotted path, as a `{"bottleneck.per": 1e-3}`
    mapping (values as in the file: `"4Mbps"`, `"250ms"`) or `"key.path=value"` strings.
    Raises `ScenarioError` (one-line message) for invalid input, including input the core
    rejects; a bad override is named `overrides["KEY"]`.

    The result's fields name their units (`goodput_bps`, `rtt.mean_ns`, `final_cwnd_bytes`);
    `RunResult.to_json_dict()` is what `tcplab run --json` prints (ms and s for people).
    """
    pairs: list[tuple[str, Any]] = override_pairs(overrides)
    if seed is not None:
        pairs.append(("seed", seed))
    if duration is not None:
        pairs.append(("duration", duration))
    return run_scenario(load_scenario(scenario, pairs))


def run_scenario(scenario: Scenario) -> RunResult:
    """Run an already validated scenario; wall time is measured around the core call only."""
    return run_normalized(normalize(scenario))


def run_normalized(normalized: Mapping[str, Any]) -> RunResult:
    """Run a normalized scenario (docs/interface.md), e.g. the effective scenario an
    emulation ran, so both sides see exactly the same input."""
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
