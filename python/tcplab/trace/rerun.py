"""Packets of a stored run, by running it again.

A results database keeps each run's normalized scenario, seed and model version, not its
packets. Since a run is a pure function of those three, the same simulator reproduces it
exactly; tracing only observes, so its event log and captures are those of the stored
run. `Rerun` does that once per kind of output (in a scratch directory it removes), checks
that the repeated run has the stored run's goodput and retransmissions, and refuses a run
stored by another model version (its packets are not this simulator's to reproduce).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import _core
from ..errors import ScenarioError
from ..results.parse import RunResult
from ..scenario.topology import base_rtt_ns, bottleneck_index, segments
from .request import SIDES, Trace, capture_name


class Rerun:
    """A stored run (a row of `Store.runs()` and its normalized scenario, `Store.scenario_of`),
    simulated again on demand."""

    def __init__(self, row: Mapping[str, Any], scenario: Mapping[str, Any] | None) -> None:
        self.run_id = str(row["run_id"])
        model = row.get("model_version")
        if model is None or model != model or int(model) != _core.model_version():
            raise ScenarioError(
                f"run {self.run_id}: simulated by model version "
                f"{'unknown' if model is None or model != model else int(model)}, this tcplab "
                f"runs {_core.model_version()} and cannot reproduce its packets; allowed: a "
                "revision run by this version (tcplab sweep --new-revision)"
            )
        if not scenario:
            raise ScenarioError(f"run {self.run_id}: its scenario is not stored")
        self.scenario: dict[str, Any] = dict(scenario)
        self.stored = (float(row["goodput_bps"]), int(row["retransmits"]))
        self._dir = tempfile.TemporaryDirectory(prefix="tcplab-rerun-")
        self.workdir = Path(self._dir.name)
        self._events: Path | None = None
        self._flows: list[dict[str, Any]] = []

    def close(self) -> None:
        self._dir.cleanup()

    def __enter__(self) -> Rerun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, trace: Trace) -> RunResult:
        from ..runner import run_normalized

        result = run_normalized(self.scenario, series=None, trace=trace)
        again = (result.aggregate_goodput_bps, sum(f.retransmits for f in result.tcp_flows))
        if abs(again[0] - self.stored[0]) > 1e-9 * max(self.stored[0], 1.0) or (
            again[1] != self.stored[1]
        ):
            raise ScenarioError(
                f"run {self.run_id}: simulated again it gives goodput {again[0]:.0f} bit/s and "
                f"{again[1]} retransmissions, stored {self.stored[0]:.0f} and {self.stored[1]}; "
                "allowed: a database written by this tcplab build"
            )
        self._flows = [{"id": f.id, "cca": f.cca, "kind": f.kind} for f in result.flows]
        return result

    def events(self) -> tuple[Path, list[dict[str, Any]]]:
        """The run's event log (every flow) and its flows (id, cca, kind)."""
        if self._events is None:
            path = self.workdir / "events.parquet"
            self._run(Trace(events=path))
            self._events = path
        return self._events, self._flows

    def base_rtt_s(self, flow: int) -> float:
        return base_rtt_ns(self.scenario, flow) / 1e9

    def bottleneck(self) -> str:
        segs = segments(self.scenario)
        return segs[bottleneck_index(self.scenario)].name if segs else "bottleneck"

    def captures(self, flow: int, start_ns: int, end_ns: int) -> tuple[Path, Path]:
        """Captures of flow `flow` at both ends of the bottleneck in [start, end)."""
        out = self.workdir / f"pcap-{flow}-{start_ns}-{end_ns}"
        link = self.bottleneck()
        if not out.exists():
            self._run(
                Trace(
                    pcap=out,
                    flows=(flow,),
                    start=f"{start_ns}ns",
                    end=f"{end_ns}ns",
                    links=(link,),
                )
            )
        sender, receiver = (out / capture_name(link, side) for side in SIDES)
        return sender, receiver
