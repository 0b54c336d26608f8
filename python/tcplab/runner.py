"""Run scenarios on the Rust core: validate → normalize → `_core.run_json` → `RunResult`.

The core releases the GIL for the whole run, so `run_parallel` uses plain threads; each run
owns its whole simulation, so there is nothing to share or lock.

Where the per-interval series go (`series`): "memory" keeps them in the result (memory grows
with flows x intervals: about 48 bytes per flow and interval in the core, several times that
in the result JSON and in Python); None does not keep them; a `.parquet` or `.csv` path gets
them as the run goes — the core streams them to a binary file beside it in chunks and they
are converted a chunk at a time — so the memory a run takes does not depend on its length.

A run asked to record packet captures or its event log (`trace.Trace`) goes through
`_core.run_traced_json` instead, with the same result.

Before a run starts, the core estimates what it will cost (`_core.budget_json`: events, and
memory including the series when they stay in memory) and a run beyond its limits is refused
in one line unless `force=True`. A run can be stopped: Ctrl-C on the main thread raises
`KeyboardInterrupt` out of the core within milliseconds, a set `cancel` flag raises
`_core.Cancelled`; `progress(now_ns, end_ns, events)` is called every few seconds of wall
time when given.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from . import _core
from .errors import ScenarioError, field_error
from .files import disk_full, is_disk_full
from .processes import usable_cpus
from .results.parse import RunResult
from .results.provenance import RunProvenance, git_commit, utc_now

if TYPE_CHECKING:
    from ._core import Cancel
    from .scenario.load import Overrides, ScenarioSource
    from .scenario.model import Scenario
    from .trace.request import Prepared, Trace

#: `series` value: the samples stay in the result (`RunResult.series_frame()`).
MEMORY: Final = "memory"
SeriesTarget = str | os.PathLike[str] | None
#: `progress(now_ns, end_ns, events)`, called every 2 s of a run's wall time
Progress = Callable[[int, int, int], object]


def run(
    scenario: ScenarioSource,
    seed: int | None = None,
    duration: str | None = None,
    overrides: Overrides = (),
    series: SeriesTarget = MEMORY,
    trace: Trace | None = None,
    *,
    force: bool = False,
    cancel: Cancel | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Run one scenario: a TOML file path, a `Scenario`, or a TOML-shaped dict.

    `seed` and `duration` (a string with a unit, e.g. `"60s"`) replace the scenario's values;
    `overrides` set scenario keys by their dotted path, as a `{"bottleneck.per": 1e-3}`
    mapping (values as in the file: `"4Mbps"`, `"250ms"`) or `"key.path=value"` strings.
    `series`: "memory" (the samples in the result), None (not kept) or a `.parquet`/`.csv`
    file written as the run goes (see the module note).
    `trace` records pcapng captures and/or the event log (`tcplab.Trace`; the result is the
    same as without it, with `result.trace` saying what was written).
    Raises `ScenarioError` (one-line message) for invalid input, including input the core
    rejects, and for a run beyond the resource budget (`force=True` runs it anyway); a bad
    override is named `overrides["KEY"]`. `cancel` (`tcplab._core.Cancel`) stops the run
    with `_core.Cancelled` when set from another thread; `progress(now_ns, end_ns, events)`
    is called every 2 s of wall time.

    The result's fields name their units (`goodput_bps`, `rtt.mean_ns`, `final_cwnd_bytes`);
    `RunResult.to_json_dict()` is what `tcplab run --json` prints (ms and s for people).
    """
    # The scenario model (pydantic) loads here, not with the module: running a stored,
    # already normalized scenario (a report's packet-level figures) does not need it.
    from .scenario.load import load_scenario, override_pairs

    pairs: list[tuple[str, Any]] = override_pairs(overrides)
    if seed is not None:
        pairs.append(("seed", seed))
    if duration is not None:
        pairs.append(("duration", duration))
    loaded = load_scenario(scenario, pairs)
    return run_scenario(
        loaded, series=series, trace=trace, force=force, cancel=cancel, progress=progress
    )


def run_scenario(
    scenario: Scenario,
    series: SeriesTarget = MEMORY,
    trace: Trace | None = None,
    *,
    force: bool = False,
    cancel: Cancel | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Run an already validated scenario; wall time is measured around the core call only."""
    from .scenario.normalize import normalize

    return run_normalized(
        normalize(scenario),
        series=series,
        trace=trace,
        force=force,
        cancel=cancel,
        progress=progress,
        flow_tables=flow_tables(scenario),
    )


def flow_tables(scenario: Scenario) -> tuple[int, ...]:
    """Each `[[flows]]` table's `count`, in order: what `core_error` numbers flows by."""
    return tuple(flow.count for flow in scenario.flows)


_CORE_FLOW: Final = re.compile(r"\bflows\[(\d+)\]")


def core_error(exc: Exception, tables: Sequence[int] = ()) -> ScenarioError:
    """The core's refusal of a scenario as the user's one-line error. The core numbers the
    flows after `count` expansion; with `tables` (`flow_tables`) they are numbered as the
    user wrote them (the fifth flow of `[[flows]] count = 4` after one lone flow is
    `flows[1]`)."""

    def as_written(found: re.Match[str]) -> str:
        index = int(found.group(1))
        for table, count in enumerate(tables):
            if index < count:
                return f"flows[{table}]"
            index -= count
        return found.group(0)

    message = _CORE_FLOW.sub(as_written, str(exc)) if tables else str(exc)
    return ScenarioError(f"simulation core: {message}")


def series_cost(series: SeriesTarget) -> str:
    """Where series go, as the resource budget counts them: "memory", "none" or "file"."""
    if series is None:
        return "none"
    return "memory" if series == MEMORY else "file"


def check_budget(text: str, series: str, force: bool = False) -> None:
    """Refuse a run (normalized scenario JSON `text`) whose estimated cost exceeds the core's
    limits, in one line naming the estimate and the limit; nothing when `force`."""
    if force:
        return
    refusal = json.loads(_core.budget_json(text, series))["refusal"]
    if refusal is not None:
        hint = "; series=None or a file keeps them out of memory" if series == "memory" else ""
        raise ScenarioError(f"{refusal}; allowed: a smaller scenario, or force=True{hint}")


def run_normalized(
    normalized: Mapping[str, Any],
    series: SeriesTarget = MEMORY,
    trace: Trace | None = None,
    *,
    force: bool = False,
    cancel: Cancel | None = None,
    progress: Progress | None = None,
    flow_tables: Sequence[int] = (),
) -> RunResult:
    """Run a normalized scenario (docs/interface.md), e.g. the effective scenario an
    emulation ran, so both sides see exactly the same input. `flow_tables` (`flow_tables`)
    numbers flows in the core's errors as the scenario file does."""
    text = json.dumps(normalized)
    try:
        check_budget(text, series_cost(series), force)
    except ValueError as exc:  # the core refused the scenario itself
        raise core_error(exc, flow_tables) from None
    target = None
    if series is not None and series != MEMORY:
        from .results.series import check_series_path

        target = check_series_path(series)
    prepared = None
    if trace is not None and not trace.empty:
        prepared = _prepare_trace(normalized, trace)
    watch: dict[str, Any] = {"cancel": cancel, "progress": progress}
    started_utc = utc_now()
    started = time.perf_counter()
    report_text = None
    try:
        if prepared is not None:
            spec = json.dumps(prepared.spec)
            if series == MEMORY:
                result_text, report_text = _core.run_traced_json(text, spec, **watch)
            elif target is None:
                result_text, report_text = _core.run_traced_json(text, spec, False, **watch)
            else:
                result_text, report_text = _stream(
                    target, lambda path: _core.run_traced_json(text, spec, False, path, **watch)
                )
        elif series == MEMORY:
            result_text = _core.run_json(text, **watch)
        elif target is None:
            result_text = _core.run_json_series(text, None, **watch)
        else:
            result_text = _stream(target, lambda path: _core.run_json_series(text, path, **watch))
    except ScenarioError:
        raise  # already the user's error (an unwritable --series file)
    except ValueError as exc:
        if prepared is not None and prepared.events_raw is not None:
            prepared.events_raw.unlink(missing_ok=True)
        # The core re-validates its input; its message already names the field.
        raise core_error(exc, flow_tables) from None
    except BaseException:
        # stopped (Ctrl-C, `cancel`): the event log was not finished
        if prepared is not None and prepared.events_raw is not None:
            prepared.events_raw.unlink(missing_ok=True)
        raise
    wall_s = time.perf_counter() - started
    result = RunResult.from_json(
        result_text,
        wall_s=wall_s,
        scenario=dict(normalized),
        run_info=RunProvenance.here(started_utc, wall_s),
        git_commit=git_commit(),
    )
    if target is not None:
        from .results.series_file import convert

        binary = _binary_beside(target)
        try:
            convert(binary, target, result.series_flows(), result.provenance())
        finally:
            binary.unlink(missing_ok=True)
        result = replace(result, series=replace(result.series, file=str(target)))
    if prepared is not None and report_text is not None:
        result = _with_trace(result, prepared, report_text)
    return result


def _prepare_trace(normalized: Mapping[str, Any], trace: Trace) -> Prepared:
    from .scenario.identity import scenario_hash
    from .scenario.topology import segments
    from .trace.request import prepare

    comment = (
        f"tcplab simulation of scenario {normalized.get('name', '')!r}: scenario hash "
        f"{scenario_hash(normalized)}, seed {normalized.get('seed')}, model version "
        f"{_core.model_version()}"
    )
    names = [s.name for s in segments(normalized)] or ["bottleneck"]
    return prepare(trace, comment, names, len(normalized["flows"]))


def _with_trace(result: RunResult, prepared: Prepared, report_text: str) -> RunResult:
    from .trace.request import TraceOutput

    output = TraceOutput.from_report(json.loads(report_text), prepared)
    if prepared.events is not None and prepared.events_raw is not None:
        from .trace.events import to_parquet

        flows = [{"id": f.id, "cca": f.cca, "kind": f.kind} for f in result.flows]
        count = to_parquet(prepared.events_raw, prepared.events, result.provenance(), flows)
        output = replace(output, events=prepared.events, event_count=count)
    return replace(result, trace=output)


def _binary_beside(target: Path) -> Path:
    """Where the core streams a run's series on their way to `target`: a hidden file in
    the same directory (the same file system, so no other disk must have room)."""
    return target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.series")


_Out = TypeVar("_Out")


def _stream(target: Path, run_core: Callable[[str], _Out]) -> _Out:
    """`run_core` given the binary series file beside `target`; an unwritable file is named
    as the user gave it."""
    binary = _binary_beside(target)
    try:
        return run_core(str(binary))
    except ValueError as exc:
        binary.unlink(missing_ok=True)
        message = str(exc)
        if is_disk_full(exc):
            raise disk_full(target) from None
        if message.startswith(f"series file {binary}: "):
            # the core names the file it writes; the user knows the one they asked for
            why = message.removeprefix(f"series file {binary}: ")
            raise field_error("--series", str(target), f"cannot write: {why}") from None
        raise
    except BaseException:
        binary.unlink(missing_ok=True)
        raise


_Input = TypeVar("_Input")


def _parallel(
    run_one: Callable[[_Input], RunResult], inputs: Sequence[_Input], max_workers: int | None
) -> list[RunResult]:
    workers = max(1, min(len(inputs), max_workers or usable_cpus()))
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
