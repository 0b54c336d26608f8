"""Run a study's grid: locally on all cores (threads; the core releases the GIL) or on a Dask
distributed cluster, storing finished runs in short batches.

A grid of up to `LAZY_FROM_RUNS` runs is expanded and validated before the database is
touched, so a mistake in the study leaves no file behind. Then one transaction finds or makes
the study's revision (`Store.open_revision`) and links the runs the database already has.
A larger grid is planned lazily, `CHUNK_RUNS` runs at a time in grid order: its first chunk is
validated before the database is touched and decides the revision, each later chunk is
validated, linked and checked against the database just before its runs are submitted, so a
sweep of 10^7 runs starts at once with memory for a few thousand. Work is submitted in a
bounded window, so a sweep of millions of runs needs memory for a few hundred.

Finished runs are committed together every `commit_interval_s`, or less often when commits
take long (at most `COMMIT_SHARE` of the sweep's time goes to them: opening the file and
its checkpoint on closing cost tens of milliseconds, whatever the batch), but at least every
`MAX_COMMIT_GAP_S` once a run is waiting, each in one
short transaction, so readers in other processes — `tcplab results`,
`tcplab report`, a notebook's `Store` — get in between commits. When another process holds
the file, the sweep keeps simulating and tries again at the next interval; it waits
(`wait_s`) only at the end or when too many runs are pending, and then fails in one line.
An interrupted sweep — Ctrl-C, `kill -9`, power loss — loses at most the runs not yet
committed, never a committed one, and resumes where it stopped without duplicating any.
"""

from __future__ import annotations

import io
import itertools
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
from ..processes import alive, usable_cpus
from ..results.parse import RunResult
from ..results.provenance import Build, RunProvenance, utc_now
from ..runner import core_error
from .grid import RunSpec, Study, members
from .store import RunRecord, Store, StoreBusy

#: Grids of more runs than this are planned chunk by chunk while the sweep runs (expanding
#: and validating a point takes about a millisecond, so this keeps the wait before the first
#: run of an eagerly planned grid to seconds).
LAZY_FROM_RUNS = 10_000
#: Runs a lazily planned sweep validates, links and checks against the database at a time;
#: the first chunk is small so the first run starts within a second.
CHUNK_RUNS = 2_048
FIRST_CHUNK_RUNS = 64
#: Runs held in memory waiting for the database before the sweep stops simulating and waits.
MAX_PENDING = 256
#: The share of the sweep's wall time commits may take: a commit that took `c` seconds is
#: followed by the next no sooner than `c / COMMIT_SHARE` later (with the ~50 ms a commit
#: takes, one every 2.5 s: what a kill -9 can lose, against 2 % of the sweep's CPU).
COMMIT_SHARE = 0.02
#: However long the last commit took, the next comes at most this long after it: the most
#: sweep time a kill -9 can lose. (A commit slowed to 1 s by a loaded machine would
#: otherwise put the next one 50 s off.)
MAX_COMMIT_GAP_S = 10.0


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
    return _distinct(study.runs(model_version), set(), set(), force)


def plan_chunks(
    study: Study, model_version: int, *, force: bool = False
) -> Iterator[list[RunSpec]]:
    """The grid's runs in grid order, validated and budget-checked like `plan`, one chunk at a
    time (`FIRST_CHUNK_RUNS`, then `CHUNK_RUNS`). A run reached twice is listed once within a
    chunk and the one before it (memory stays bounded; a repeat further apart is run again
    and stored once)."""
    runs = study.runs(model_version)
    size = FIRST_CHUNK_RUNS
    previous: tuple[set[str], set[str]] = (set(), set())
    while True:
        current: tuple[set[str], set[str]] = (set(), set())
        seen = _Union(previous[0], current[0])
        points = _Union(previous[1], current[1])
        chunk = _distinct(itertools.islice(runs, size), seen, points, force)
        if not chunk:
            return
        yield chunk
        previous, size = current, CHUNK_RUNS


class _Union:
    """Membership in either of two sets; additions go to the second."""

    def __init__(self, old: set[str], new: set[str]) -> None:
        self.old, self.new = old, new

    def __contains__(self, key: object) -> bool:
        return key in self.new or key in self.old

    def add(self, key: str) -> None:
        self.new.add(key)


def _distinct(runs: Iterable[RunSpec], seen: Any, points: Any, force: bool) -> list[RunSpec]:
    from ..runner import check_budget

    out: list[RunSpec] = []
    for spec in runs:
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
        elif time.monotonic() - self.last >= self.gap_s():
            self.flush(block=False)

    def gap_s(self) -> float:
        """How long after the last commit the next one is due."""
        return max(self.interval_s, min(self.cost_s / COMMIT_SHARE, MAX_COMMIT_GAP_S))

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
    force: bool = False,
) -> SweepSummary:
    """Run every missing run of `study` into its revision in `store`. `on_change` says what
    to do when the study's name has revisions of another definition ("refuse", "new",
    "replace": see `Store.open_revision`). `stop_after` (tests) simulates an interruption
    after that many runs. `specs`: the grid, when the caller already expanded it; without it a
    grid of more than `LAZY_FROM_RUNS` runs is planned lazily (`force`: no budget check)."""
    console = console or Console(stderr=True)
    if executor not in ("local", "dask"):
        raise ScenarioError(f"--executor = {executor!r}: unknown executor; allowed: local, dask")
    if executor == "dask" and not scheduler:
        raise ScenarioError("--scheduler: needed with --executor dask; allowed: tcp://HOST:PORT")
    build = Build.current()
    if specs is None and study.n_runs > LAZY_FROM_RUNS:
        grid: _Grid = _LazyGrid(study, store, build, on_change, wait_s, force)
    else:
        if specs is None:
            specs = plan(study, build.model_version, force=force)
        grid = _EagerGrid(study, store, build, on_change, wait_s, specs)
    remove_stale_series(store)
    committer = _Committer(store, study.name, grid.revision, commit_interval_s, wait_s)
    started = time.perf_counter()
    drive = _Drive(grid, committer, study, build, console, progress)
    if executor == "local":
        workers = max(1, jobs or usable_cpus())
        with ThreadPoolExecutor(max_workers=workers) as pool:
            ran, interrupted = drive(pool, workers, stop_after, store)
    else:
        client = _dask_client(scheduler or "")
        try:
            workers = max(1, sum(client.nthreads().values()))
            ran, interrupted = drive(client, workers, stop_after, None)
        finally:
            client.close()
    if not interrupted:
        grid.finish()
    return SweepSummary(
        total=grid.total,
        skipped=grid.skipped,
        ran=ran,
        linked=grid.linked,
        wall_s=time.perf_counter() - started,
        interrupted=interrupted,
        revision=grid.revision,
        revision_note=grid.note,
        model_version=build.model_version,
        deferred_commits=committer.deferred,
        core_cpu_s=drive.core_cpu_s if executor == "local" else None,
    )


class _Grid(Protocol):
    """The runs a sweep still has to simulate, and what it learnt about the others."""

    total: int
    skipped: int
    linked: int
    revision: int
    note: str

    def todo(self) -> Iterator[RunSpec]: ...

    def finish(self) -> None: ...


class _EagerGrid:
    """A grid planned in full before the sweep: its revision holds every run from the start."""

    def __init__(
        self,
        study: Study,
        store: Store,
        build: Build,
        on_change: str,
        wait_s: float,
        specs: list[RunSpec],
    ) -> None:
        # the grid's distinct runs (a point reached twice through a "=key" reference is one run)
        revision_plan = replace(study.revision_plan(build.model_version), n_runs=len(specs))
        with sigint_deferred():
            choice = store.open_revision(
                revision_plan, members(specs), build, on_change=on_change, wait_s=wait_s
            )
        self._todo = [spec for spec in specs if spec.run_id not in choice.stored]
        self.total, self.skipped = len(specs), len(specs) - len(self._todo)
        self.linked, self.revision, self.note = choice.linked, choice.revision, choice.note

    def todo(self) -> Iterator[RunSpec]:
        return iter(self._todo)

    def finish(self) -> None:
        """Nothing left to do: a replaced revision's unused runs went when it was replaced."""


class _LazyGrid:
    """A grid planned chunk by chunk (`plan_chunks`) as the sweep consumes it. The first chunk
    decides the revision (its grid size is the study's run count); each later chunk reopens
    it — the same definition, so it is resumed — which links the chunk's stored runs and
    says which to skip."""

    def __init__(
        self,
        study: Study,
        store: Store,
        build: Build,
        on_change: str,
        wait_s: float,
        force: bool,
    ) -> None:
        self._store, self._build, self._wait_s = store, build, wait_s
        self._chunks = plan_chunks(study, build.model_version, force=force)
        self._plan = replace(study.revision_plan(build.model_version), n_runs=study.n_runs)
        self.total, self.skipped, self.linked = study.n_runs, 0, 0
        self.replaced = False
        first = next(self._chunks, [])
        self._first = self._open(first, on_change)
        self.revision, self.note = self._revision, self._note

    def _open(self, chunk: list[RunSpec], on_change: str) -> list[RunSpec]:
        with sigint_deferred():
            # a replaced revision's runs stay until the whole grid is linked (`finish`): the
            # later chunks may use them
            choice = self._store.open_revision(
                self._plan,
                members(chunk),
                self._build,
                on_change=on_change,
                wait_s=self._wait_s,
                keep_runs=True,
            )
        self._revision, self._note = choice.revision, choice.note
        self.replaced = self.replaced or choice.status == "replaced"
        todo = [spec for spec in chunk if spec.run_id not in choice.stored]
        self.skipped += len(chunk) - len(todo)
        self.linked += choice.linked
        return todo

    def todo(self) -> Iterator[RunSpec]:
        yield from self._first
        self._first = []
        for chunk in self._chunks:
            # the revision exists now: reopening it resumes it whatever `on_change` said
            yield from self._open(chunk, "refuse")

    def finish(self) -> None:
        """After the whole grid: delete what the revision this sweep replaced left that no
        revision uses. (An interrupted sweep leaves it: resumed, the sweep links what its
        grid needs of it; the rest goes with the next replacement.)"""
        if self.replaced:
            with sigint_deferred():
                self._store.drop_unused_runs(self._wait_s)


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
    grid: _Grid
    committer: _Committer
    study: Study
    build: Build
    console: Console
    show: bool

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
        queue: Iterator[RunSpec] = self.grid.todo()
        in_flight: dict[Any, RunSpec] = {}
        ran = 0
        t0 = time.perf_counter()
        prog = _progress(self.console) if self.show else None
        task = (
            prog.add_task(
                self.study.name, total=self.grid.total, completed=self.grid.skipped, rate=""
            )
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
                        done = self.grid.skipped + ran
                        prog.update(task, completed=done, rate=f"{rate:.1f} runs/s")
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
