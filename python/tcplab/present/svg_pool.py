"""A report's figures drawn side by side, one worker process per CPU.

Laying out and drawing a figure is matplotlib's work in pure Python (text extents, ticks,
one SVG element per marker), seconds per report and all of it in one thread; the figures are
independent, so forked workers draw them in parallel, each as soon as its chart is computed
(the parent goes on reading the next one's data meanwhile). A forked worker starts with
matplotlib already imported, so it costs milliseconds; each gets a `Chart` (plain data) and
returns its SVG text, the same text the parent would have written.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from types import TracebackType

from ..processes import usable_cpus
from .chart import Chart
from .draw import render, to_svg
from .style import Style


def svg_of(chart: Chart, style: Style) -> str:
    """One figure as report SVG (no caption in the figure: the page writes it)."""
    return to_svg(render(chart, style, caption=False))


def _worker_start() -> None:
    # Ctrl-C is the parent's to handle: it stops handing out figures and waits for the
    # ones being drawn, so no worker prints a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Drawer:
    """Charts in, SVGs out in the same order: `add` each chart as it is ready, then `svgs`.
    With `workers` > 1 (default: one per usable CPU) the drawing happens in forked worker
    processes while the caller goes on; with one, in this process. Use it as a context
    manager: leaving it (Ctrl-C included) drops the figures not yet started and waits for
    the ones being drawn."""

    def __init__(self, style: Style, workers: int | None = None) -> None:
        self.style = style
        self.workers = usable_cpus() if workers is None else max(workers, 1)
        self._pool: ProcessPoolExecutor | None = None
        self._pending: list[Future[str] | Chart] = []

    def add(self, chart: Chart) -> None:
        if self.workers <= 1:
            self._pending.append(chart)
            return
        if self._pool is None:
            import multiprocessing

            # imported before the fork, so no worker imports it on its own
            import matplotlib.backends.backend_svg  # noqa: F401

            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_worker_start,
            )
        self._pending.append(self._pool.submit(svg_of, chart, self.style))

    def svgs(self) -> list[str]:
        """The SVG of every chart added, in order (waits for the workers)."""
        out = [
            p.result() if isinstance(p, Future) else svg_of(p, self.style) for p in self._pending
        ]
        self._pending = []
        return out

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> Drawer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def svgs_of(charts: Sequence[Chart], style: Style, workers: int | None = None) -> list[str]:
    """The SVG of each chart, in order, drawn by `Drawer(style, workers)` (at most one
    worker per chart)."""
    n = min(len(charts), usable_cpus() if workers is None else max(workers, 1))
    with Drawer(style, n) as drawer:
        for c in charts:
            drawer.add(c)
        return drawer.svgs()
