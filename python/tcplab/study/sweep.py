"""Run a study's grid: locally on all cores (threads; the core releases the GIL) or on a Dask
distributed cluster, storing finished runs in short batches.

The whole grid is expanded and validated before the database is touched, so a mistake in the
study leaves no file behind. Then one transaction finds or makes the study's revision
(`Store.open_revision`) and links the runs the database already has. Work is submitted in a
bounded window, so a sweep of millions of runs needs memory for a few hundred.

Finished runs are committed together every `commit_interval_s`, or less often when commits
take long (at most `COMMIT_SHARE` of the sweep's time goes to them: opening the file and
its checkpoint on closing cost tens of milliseconds, whatever the batch), each in one
short transaction, so readers in other processes — `tcplab results`,
`tcplab report`, a notebook's `Store` — get in between commits. When another process holds
the file, the sweep keeps simulating and tries again at the next interval; it waits
(`wait_s`) only at the end or when too many runs are pending, and then fails in one line.
An interrupted sweep — Ctrl-C, `kill -9`, power loss — loses at most the runs not yet
committed, never a committed one, and resumes where it stopped without duplicating any.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cache
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

from .. import _core
from ..errors import ScenarioError
from ..files import disk_full, is_disk_full
from ..processes import alive
from ..results.parse import RunResult
from ..results.provenance import Build, RunProvenance, utc_now
from ..runner import core_error
from .grid import RunSpec, Study, members
from .store import RunRecord, Store, StoreBusy

#: Runs held in memory waiting for the database before the sweep stops simulating and waits.
MAX_PENDING = 256
#: The share of the sweep's wall time commits may take: a commit that took `c` seconds is
#: followed by the next no sooner than `c / COMMIT_SHARE` later.
COMMIT_SHARE = 0.05


def run_normalized(text: str) -> tuple[str, float, str, str, bytes]:
    """Run one normalized scenario (JSON text) on a Dask worker; returns (result JSON without
    the series, wall seconds, start time in UTC, host, the core's series file). A plain
    top-level function so Dask workers can import and call it."""
    import tempfile

    started = utc_now()
    with tempfile.TemporaryDirectory(prefix="tcplab-") as tmp:
        path = os.path.join(tmp, "run.series")
        t0 = time.perf_counter()
        out = _core.run_json_series(text, path)
        wall_s = time.perf_counter() - t0
        with open(path, "rb") as f:
            series = f.read()
    return out, wall_s, started, socket.gethostname(), series


@dataclass(frozen=True)
class _Finished:
    """A run a worker finished: its record (series file written) and the CPU time the
    worker thread spent in the core (None: not measured, e.g. on a Dask worker)."""

    record: RunRecord
    core_cpu_s: float | None = None


def _check_model(spec: RunSpec, result: RunResult, host: str) -> None:
    if result.model_version != spec.model_version:
        # a Dask worker with another tcplab: its numbers are not this key's
        raise ScenarioError(
            f"{host}: simulated with model version {result.model_version}, this tcplab "
            f"has {spec.model_version}; allowed: the same tcplab on every worker"
        )


def _store_series(store: Store, spec: RunSpec, result: RunResult, source: Any) -> str:
    """Write a run's series (the core's series file `source`: a path or a binary file) to
    the store's series folder as `<run_id>.parquet`; returns the name."""
    from ..results.series_file import convert

    name = f"{spec.run_id}.parquet"
    convert(source, store.series_dir / name, result.series_flows(), result.provenance(), "--db")
    return name


@cache
def _host() -> str:
    """This host's name (asked once: the sweep's runs all run here)."""
    return socket.gethostname()


def _owner() -> str:
    """Who a series file on its way to the store belongs to: this host and process."""
    return f"{_host()}-{os.getpid()}"


def remove_stale_series(store: Store) -> None:
    """Delete the core's series files that a killed sweep on this host left behind (their
    process is gone); those of running sweeps stay."""
    host = socket.gethostname()
    if not store.series_dir.is_dir():
        return
    for path in store.series_dir.glob(".*.series"):
        owner = path.name.split(".")[-3]
        name, _, pid = owner.rpartition("-")
        if name == host and pid.isdigit() and not alive(int(pid)):
            path.unlink(missing_ok=True)


@contextmanager
def sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back while a transaction commits (on the main thread): DuckDB would stop
    its query half way ("Query interrupted"). The interruption is raised once it is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def run_local(
    spec: RunSpec, store: Store, build: Build, cancel: _core.Cancel | None = None
) -> _Finished:
    """Run one grid point in this process (a worker thread): the core streams the series to
    the store's series folder, this thread writes them as the run's Parquet file, and what
    goes back to the sweep is the compact result (no series) ready for its batch."""
    store.series_dir.mkdir(parents=True, exist_ok=True)
    binary = store.series_dir / f".{spec.run_id}.{_owner()}.{threading.get_ident()}.series"
    text = json.dumps(spec.normalized)
    started = utc_now()
    t0, c0 = time.perf_counter(), time.thread_time()
    try:
        try:
            out = _core.run_json_series(text, str(binary), cancel)
        except ValueError as exc:
            if is_disk_full(exc):
                raise disk_full(store.series_dir) from None
            raise core_error(exc, spec.flow_tables) from None
        core_cpu_s, wall_s = time.thread_time() - c0, time.perf_counter() - t0
        host = _host()
        result = RunResult.from_json(
            out,
            wall_s=wall_s,
            scenario=spec.normalized,
            run_info=RunProvenance(host, started, wall_s),
            git_commit=build.git_commit,
        )
        _check_model(spec, result, host)
        name = _store_series(store, spec, result, binary)
    finally:
        binary.unlink(missing_ok=True)
    record = RunRecord(spec.key, spec.variant, spec.params, spec.normalized, result, name)
    return _Finished(record, core_cpu_s)


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
    revision: int = 0
    revision_note: str = ""
    model_version: int | None = None
    #: times a commit found the database held by another process and was put off
    deferred_commits: int = 0
    #: CPU seconds the local workers spent inside the core (None: runs on Dask workers)
    core_cpu_s: float | None = None

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


def plan(study: Study, model_version: int, *, force: bool = False) -> list[RunSpec]:
    """Every distinct run of the grid, validated (a run reached twice, e.g. through a
    `"=key"` reference, is listed once), each grid point within the resource budget (its
    series go to a file) unless `force`."""
    from ..runner import check_budget

    seen: set[str] = set()
    points: set[str] = set()
    out: list[RunSpec] = []
    for spec in study.runs(model_version):
        if spec.scenario_hash not in points and not force:
            points.add(spec.scenario_hash)
            try:
                check_budget(json.dumps(spec.normalized), "file")
            except ScenarioError as exc:
                where = ", ".join(f"{k} = {v!r}" for k, v in spec.params.items())
                raise ScenarioError(f"sweep point {where or 'base'}: {exc}") from None
        if spec.run_id not in seen:
            seen.add(spec.run_id)
            out.append(spec)
    return out


@dataclass
class _Committer:
    """Finished runs waiting for their transaction."""

    store: Store
    study: str
    revision: int
    interval_s: float
    wait_s: float
    pending: list[RunRecord] = field(default_factory=list)
    last: float = field(default_factory=time.monotonic)
    deferred: int = 0
    #: how long the last commit took
    cost_s: float = 0.0

    def add(self, record: RunRecord) -> None:
        self.pending.append(record)
        if len(self.pending) >= MAX_PENDING:
            self.flush(block=True)
        elif time.monotonic() - self.last >= max(self.interval_s, self.cost_s / COMMIT_SHARE):
            self.flush(block=False)

    def flush(self, *, block: bool) -> None:
        if not self.pending:
            return
        try:
            # not blocking: a short try, so the simulation goes on while a reader holds it
            wait_s = self.wait_s if block else min(0.2, self.wait_s)
            started = time.monotonic()
            with sigint_deferred():
                self.store.add_runs(self.study, self.revision, self.pending, wait_s=wait_s)
            self.cost_s = time.monotonic() - started
        except StoreBusy as exc:
            if block:
                raise StoreBusy(
                    f"{exc}; {len(self.pending)} finished runs were not stored (rerun the "
                    "same command to resume)"
                ) from None
            self.deferred += 1
            return
        self.pending = []
        self.last = time.monotonic()


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
    on_change: str = "refuse",
    commit_interval_s: float = 0.5,
    wait_s: float = 60.0,
    specs: list[RunSpec] | None = None,
) -> SweepSummary:
    """Run every missing run of `study` into its revision in `store`. `on_change` says what
    to do when the study's name has revisions of another definition ("refuse", "new",
    "replace": see `Store.open_revision`). `stop_after` (tests) simulates an interruption
    after that many runs. `specs`: the grid, when the caller already expanded it."""
    console = console or Console(stderr=True)
    if executor not in ("local", "dask"):
        raise ScenarioError(f"--executor = {executor!r}: unknown executor; allowed: local, dask")
    if executor == "dask" and not scheduler:
        raise ScenarioError("--scheduler: needed with --executor dask; allowed: tcp://HOST:PORT")
    build = Build.current()
    grid = specs if specs is not None else plan(study, build.model_version)
    # the grid's distinct runs (a point reached twice through a "=key" reference is one run)
    revision_plan = replace(study.revision_plan(build.model_version), n_runs=len(grid))
    choice = store.open_revision(
        revision_plan,
        members(grid),
        build,
        on_change=on_change,
        wait_s=wait_s,
    )
    todo = [spec for spec in grid if spec.run_id not in choice.stored]
    remove_stale_series(store)
    skipped = len(grid) - len(todo)
    committer = _Committer(store, study.name, choice.revision, commit_interval_s, wait_s)
    started = time.perf_counter()
    drive = _Drive(todo, committer, study, build, console, progress, len(grid), skipped)
    if executor == "local":
        workers = max(1, jobs or os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ran, interrupted = drive(pool, workers, stop_after, store)
    else:
        client = _dask_client(scheduler or "")
        try:
            workers = max(1, sum(client.nthreads().values()))
            ran, interrupted = drive(client, workers, stop_after, None)
        finally:
            client.close()
    return SweepSummary(
        total=len(grid),
        skipped=skipped,
        ran=ran,
        linked=choice.linked,
        wall_s=time.perf_counter() - started,
        interrupted=interrupted,
        revision=choice.revision,
        revision_note=choice.note,
        model_version=build.model_version,
        deferred_commits=committer.deferred,
        core_cpu_s=drive.core_cpu_s if executor == "local" else None,
    )


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
    except ValueError as exc:  # distributed's own check of the address
        raise ScenarioError(
            f"--scheduler = {scheduler!r}: not a scheduler address ({exc}); "
            "allowed: tcp://HOST:PORT, tls://HOST:PORT"
        ) from None


@dataclass
class _Drive:
    todo: list[RunSpec]
    committer: _Committer
    study: Study
    build: Build
    console: Console
    show: bool
    total: int
    skipped: int

    core_cpu_s: float = 0.0

    def _record(self, spec: RunSpec, outcome: tuple[str, float, str, str, bytes]) -> RunRecord:
        """A run from a Dask worker: its series come back as the core wrote them."""
        text, wall_s, started_utc, host, series = outcome
        result = RunResult.from_json(
            text,
            wall_s=float(wall_s),
            scenario=spec.normalized,
            run_info=RunProvenance(str(host), str(started_utc), float(wall_s)),
            git_commit=self.build.git_commit,
        )
        _check_model(spec, result, str(host))
        self.committer.store.series_dir.mkdir(parents=True, exist_ok=True)
        name = _store_series(self.committer.store, spec, result, io.BytesIO(series))
        return RunRecord(spec.key, spec.variant, spec.params, spec.normalized, result, name)

    def __call__(
        self, pool: _Executor, workers: int, stop_after: int | None, local: Store | None
    ) -> tuple[int, bool]:
        """Run the grid on `pool`: in this process when `local` is the store (the workers
        write the series there), else on Dask workers."""
        window = 4 * workers
        # Ctrl-C stops the runs in flight within milliseconds (their partial work is dropped)
        cancel = _core.Cancel()
        queue: Iterator[RunSpec] = iter(self.todo)
        in_flight: dict[Any, RunSpec] = {}
        ran = 0
        t0 = time.perf_counter()
        prog = _progress(self.console) if self.show else None
        task = (
            prog.add_task(self.study.name, total=self.total, completed=self.skipped, rate="")
            if prog
            else None
        )

        def refill() -> None:
            while len(in_flight) < window:
                spec = next(queue, None)
                if spec is None:
                    return
                if local is not None:
                    fut = pool.submit(run_local, spec, local, self.build, cancel)
                else:
                    fut = pool.submit(run_normalized, json.dumps(spec.normalized))
                in_flight[fut] = spec

        interrupted = False
        if prog:
            prog.start()
        try:
            refill()
            while in_flight:
                for fut in _wait_any(in_flight):
                    spec = in_flight.pop(fut)
                    if local is not None:
                        finished: _Finished = fut.result()
                        self.core_cpu_s += finished.core_cpu_s or 0.0
                        self.committer.add(finished.record)
                    else:
                        try:
                            outcome = fut.result()
                        except ValueError as exc:  # the core refused the run on the worker
                            raise core_error(exc, spec.flow_tables) from None
                        self.committer.add(self._record(spec, outcome))
                    ran += 1
                    if prog is not None and task is not None:
                        rate = ran / max(time.perf_counter() - t0, 1e-9)
                        prog.update(task, advance=1, rate=f"{rate:.1f} runs/s")
                    if stop_after is not None and ran >= stop_after:
                        raise KeyboardInterrupt
                refill()
        except KeyboardInterrupt:
            interrupted = True
            cancel.set()
            for fut in in_flight:
                cancel_future = getattr(fut, "cancel", None)
                if cancel_future:
                    cancel_future()
            # runs that finished meanwhile are kept; the others stopped (`Cancelled`)
            for fut in list(in_flight):
                if local is not None and fut.done() and not fut.cancelled():
                    if fut.exception() is None:
                        self.committer.add(fut.result().record)
                        ran += 1
        except BaseException:
            # a failed run ends the sweep; the runs that finished before it are kept
            try:
                self.committer.flush(block=True)
            except StoreBusy:
                pass
            raise
        finally:
            if prog:
                prog.stop()
        # what finished is stored, interrupted or not
        self.committer.flush(block=True)
        return ran, interrupted


def _wait_any(in_flight: dict[Any, RunSpec]) -> Iterable[Any]:
    futures = list(in_flight)
    if futures and isinstance(futures[0], Future):
        done, _ = wait(futures, return_when=FIRST_COMPLETED)
        return done
    from distributed import wait as dwait  # Dask futures

    done, _ = dwait(futures, return_when="FIRST_COMPLETED")  # type: ignore[no-untyped-call]
    return list(done)


def stored_count(store: Store, specs: list[RunSpec]) -> int:
    """How many runs of a grid the database already has (under today's model version)."""
    return len(store.stored_run_ids([spec.run_id for spec in specs]))
