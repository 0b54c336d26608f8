"""Run a study's grid: locally on all cores (threads; the core releases the GIL) or on a Dask
distributed cluster, storing each run as soon as it finishes.

Only the main process writes to the database. Work is submitted in a bounded window, so a
sweep of millions of runs needs memory for a few hundred. Runs already in the database are
skipped (and only linked to the study if they were computed for another one), so an
interrupted sweep — Ctrl-C, `kill -9`, power loss — resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from . import _core
from .errors import ScenarioError
from .result import RunResult
from .store import Store
from .study import RunSpec, Study


def run_normalized(text: str) -> tuple[str, float]:
    """Run one normalized scenario (JSON text); returns (result JSON, wall seconds).
    A plain top-level function so Dask workers can import and call it."""
    started = time.perf_counter()
    out = _core.run_json(text)
    return out, time.perf_counter() - started


class _Executor(Protocol):
    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any: ...


@dataclass
class SweepSummary:
    total: int
    skipped: int
    ran: int
    linked: int
    wall_s: float
    interrupted: bool = False

    @property
    def runs_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else 0.0


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _pending(study: Study, store: Store) -> tuple[list[RunSpec], int, int]:
    """Runs still to simulate; links runs another study already computed."""
    done = store.done_keys()
    members = store.member_keys(study.name)
    todo: list[RunSpec] = []
    queued: set[tuple[str, int]] = set()
    skipped = linked = 0
    for spec in study.runs():
        if spec.key in queued:  # the same run reached twice (e.g. through a "=key" reference)
            continue
        queued.add(spec.key)
        if spec.key in done:
            skipped += 1
            if spec.key not in members:
                store.add_membership(study.name, spec.key, spec.variant, spec.params)
                linked += 1
            continue
        todo.append(spec)
    return todo, skipped, linked


def _collect(future: Any) -> tuple[str, float]:
    result = future.result()
    return str(result[0]), float(result[1])


def run_study(
    study: Study,
    store: Store,
    *,
    jobs: int | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    console: Console | None = None,
    progress: bool = True,
    stop_after: int | None = None,
) -> SweepSummary:
    """Run every missing run of `study` into `store`. `stop_after` (tests) simulates an
    interruption after that many runs."""
    console = console or Console(stderr=True)
    store.add_study(study.name, study.description, study.text)
    todo, skipped, linked = _pending(study, store)
    total = study.n_runs
    started = time.perf_counter()
    if executor == "local":
        workers = max(1, jobs or os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ran, interrupted = _drive(
                pool, workers, todo, store, study, console, progress, total, skipped, stop_after
            )
    elif executor == "dask":
        if not scheduler:
            raise ScenarioError(
                "--scheduler: needed with --executor dask; allowed: tcp://HOST:PORT"
            )
        client = _dask_client(scheduler)
        try:
            workers = max(1, sum(client.nthreads().values()))
            ran, interrupted = _drive(
                client, workers, todo, store, study, console, progress, total, skipped, stop_after
            )
        finally:
            client.close()
    else:
        raise ScenarioError(f"--executor = {executor!r}: unknown executor; allowed: local, dask")
    return SweepSummary(total, skipped, ran, linked, time.perf_counter() - started, interrupted)


def _dask_client(scheduler: str) -> Any:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - the dev/dask extras install it
        raise ScenarioError(
            "--executor dask: the 'distributed' package is not installed; "
            "allowed: pip install 'tcplab[dask]'"
        ) from None
    try:
        return Client(scheduler, timeout=10)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as exc:
        raise ScenarioError(f"--scheduler = {scheduler!r}: cannot connect ({exc})") from None


def _drive(
    pool: _Executor,
    workers: int,
    todo: list[RunSpec],
    store: Store,
    study: Study,
    console: Console,
    show: bool,
    total: int,
    skipped: int,
    stop_after: int | None,
) -> tuple[int, bool]:
    window = 4 * workers
    queue: Iterator[RunSpec] = iter(todo)
    in_flight: dict[Any, RunSpec] = {}
    ran = 0
    t0 = time.perf_counter()
    prog = _progress(console) if show else None
    task = prog.add_task(study.name, total=total, completed=skipped, rate="") if prog else None

    def refill() -> None:
        while len(in_flight) < window:
            spec = next(queue, None)
            if spec is None:
                return
            fut = pool.submit(run_normalized, json.dumps(spec.normalized))
            in_flight[fut] = spec

    interrupted = False
    if prog:
        prog.start()
    try:
        refill()
        while in_flight:
            done = _wait_any(in_flight)
            for fut in done:
                spec = in_flight.pop(fut)
                text, wall = _collect(fut)
                result = RunResult.from_json(text, wall_s=wall, scenario=spec.normalized)
                store.add_run(
                    study.name, spec.variant, spec.params, spec.key, spec.normalized, result
                )
                ran += 1
                if prog is not None and task is not None:
                    rate = ran / max(time.perf_counter() - t0, 1e-9)
                    prog.update(task, advance=1, rate=f"{rate:.1f} runs/s")
                if stop_after is not None and ran >= stop_after:
                    raise KeyboardInterrupt
            refill()
    except KeyboardInterrupt:
        interrupted = True
        for fut in in_flight:
            cancel = getattr(fut, "cancel", None)
            if cancel:
                cancel()
    finally:
        if prog:
            prog.stop()
    return ran, interrupted


def _wait_any(in_flight: dict[Any, RunSpec]) -> Iterable[Any]:
    futures = list(in_flight)
    if futures and isinstance(futures[0], Future):
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        return done
    from distributed import wait as dwait  # Dask futures

    done, _ = dwait(futures, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
    return list(done)


def pending_count(study: Study, store: Store) -> int:
    done = store.done_keys()
    return sum(1 for spec in study.runs() if spec.key not in done)
