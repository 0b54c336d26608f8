"""Typed view of the core's result JSON (docs/interface.md) and the CLI's `--json` object.

The core reports in base units (ns, bit/s, bytes); conversions to ms/s for people happen only
in `to_json_dict` and `series_frame`, whose column names say the unit.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .metrics import jain_index
from .theory import flow_bounds

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]


class ResultFormatError(RuntimeError):
    """The core's result JSON does not match the interface (a bug, not a user error)."""


def _need(data: Mapping[str, Any], key: str, where: str) -> Any:
    try:
        return data[key]
    except (KeyError, TypeError):
        raise ResultFormatError(f"core result: {where} has no {key!r}") from None


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else value_ns / 1e6


@dataclass(frozen=True)
class RttStats:
    """Sender RTT samples of one flow (ns); fields are None when there was no sample."""

    count: int
    mean_ns: float | None
    min_ns: float | None
    p50_ns: float | None
    p95_ns: float | None
    max_ns: float | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RttStats:
        fields = ("mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns")
        values = [_opt_float(_need(data, key, "rtt")) for key in fields]
        return cls(int(_need(data, "count", "rtt")), *values)


@dataclass(frozen=True)
class FlowResult:
    """Per-flow summary; goodput/throughput are over the flow's active time."""

    id: int
    cca: str
    start_ns: int
    app: str
    bytes_delivered: int
    bytes_sent: int
    segments_sent: int
    retransmits: int
    goodput_bps: float
    throughput_bps: float
    active_ns: int
    completion_ns: int | None
    rtt: RttStats
    rto_count: int
    fast_recoveries: int
    spurious_undos: int
    final_cwnd_bytes: int
    final_ssthresh_bytes: int | None
    #: numeric per-flow counters the core reports beyond the interface (e.g. `tlp_probes`),
    #: passed through so new core statistics reach `--json` without a Python change
    extra: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlowResult:
        where = f"flow {data.get('id', '?')}"
        ints = (
            *("id", "start_ns", "bytes_delivered", "bytes_sent", "segments_sent"),
            *("retransmits", "active_ns", "rto_count", "fast_recoveries", "spurious_undos"),
        )
        values: dict[str, Any] = {key: int(_need(data, key, where)) for key in ints}
        completion = _need(data, "completion_ns", where)
        ssthresh = data.get("final_ssthresh_bytes")
        return cls(
            cca=str(_need(data, "cca", where)),
            app=str(_need(data, "app", where)),
            goodput_bps=float(_need(data, "goodput_bps", where)),
            throughput_bps=float(_need(data, "throughput_bps", where)),
            completion_ns=None if completion is None else int(completion),
            rtt=RttStats.from_json(_need(data, "rtt", where)),
            final_cwnd_bytes=int(_need(data, "final_cwnd_bytes", where)),
            final_ssthresh_bytes=None if ssthresh is None else int(ssthresh),
            extra=_extra_numbers(data, {f.name for f in fields(cls)}),
            **values,
        )


def _extra_numbers(data: Mapping[str, Any], known: set[str]) -> dict[str, float]:
    return {
        key: value
        for key, value in data.items()
        if key not in known and isinstance(value, int | float) and not isinstance(value, bool)
    }


@dataclass(frozen=True)
class LinkResult:
    """One direction of the bottleneck; utilization = bits sent / (rate x duration).
    `ecn_marks` counts packets CE-marked by the queue's ECN threshold."""

    name: str
    rate_bps: int
    packets_tx: int
    bytes_tx: int
    utilization: float
    queue_drops: int
    error_drops: int
    ecn_marks: int
    queue_mean_pkts: float
    queue_max_pkts: int
    queue_mean_bytes: float
    queue_max_bytes: int
    #: numeric link counters the core reports beyond the interface, passed through like
    #: `FlowResult.extra`
    extra: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinkResult:
        where = f"link {data.get('name', '?')}"
        ints = (
            *("rate_bps", "packets_tx", "bytes_tx", "queue_drops", "error_drops", "ecn_marks"),
            *("queue_max_pkts", "queue_max_bytes"),
        )
        values: dict[str, Any] = {key: int(_need(data, key, where)) for key in ints}
        for key in ("utilization", "queue_mean_pkts", "queue_mean_bytes"):
            values[key] = float(_need(data, key, where))
        return cls(
            name=str(_need(data, "name", where)),
            extra=_extra_numbers(data, {f.name for f in fields(cls)}),
            **values,
        )

    def to_json_dict(self) -> dict[str, Any]:
        """Every field, the extra counters flattened in."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


@dataclass(frozen=True)
class FlowSeries:
    """Per-interval samples of one flow; `rtt_mean_ns` is None where no RTT was sampled."""

    id: int
    goodput_bps: tuple[float, ...]
    throughput_bps: tuple[float, ...]
    rtt_mean_ns: tuple[float | None, ...]
    cwnd_bytes: tuple[int, ...]
    retransmits: tuple[int, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlowSeries:
        where = "series flow"
        return cls(
            id=int(_need(data, "id", where)),
            goodput_bps=tuple(float(v) for v in _need(data, "goodput_bps", where)),
            throughput_bps=tuple(float(v) for v in _need(data, "throughput_bps", where)),
            rtt_mean_ns=tuple(_opt_float(v) for v in _need(data, "rtt_mean_ns", where)),
            cwnd_bytes=tuple(int(v) for v in _need(data, "cwnd_bytes", where)),
            retransmits=tuple(int(v) for v in _need(data, "retransmits", where)),
        )


@dataclass(frozen=True)
class Series:
    """Samples per interval `[t - interval, t)`, `t_ns` being the interval ends."""

    interval_ns: int
    t_ns: tuple[int, ...]
    flows: tuple[FlowSeries, ...]
    bottleneck_queue_pkts: tuple[float, ...]
    bottleneck_utilization: tuple[float, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Series:
        return cls(
            interval_ns=int(_need(data, "interval_ns", "series")),
            t_ns=tuple(int(v) for v in _need(data, "t_ns", "series")),
            flows=tuple(FlowSeries.from_json(f) for f in _need(data, "flows", "series")),
            bottleneck_queue_pkts=tuple(float(v) for v in data.get("bottleneck_queue_pkts", ())),
            bottleneck_utilization=tuple(float(v) for v in data.get("bottleneck_utilization", ())),
        )


@dataclass(frozen=True)
class RunResult:
    """One simulation run: the core's result plus the normalized scenario and wall time."""

    name: str
    seed: int
    duration_ns: int
    events: int
    core_version: str
    wall_s: float
    flows: tuple[FlowResult, ...]
    links: tuple[LinkResult, ...]
    series: Series
    scenario: Mapping[str, Any]  # the normalized scenario that produced this result

    @classmethod
    def from_json(
        cls, result: str | Mapping[str, Any], *, wall_s: float, scenario: Mapping[str, Any]
    ) -> RunResult:
        data: Mapping[str, Any] = json.loads(result) if isinstance(result, str) else result
        return cls(
            name=str(_need(data, "name", "result")),
            seed=int(_need(data, "seed", "result")),
            duration_ns=int(_need(data, "duration_ns", "result")),
            events=int(_need(data, "events", "result")),
            core_version=str(data.get("core_version", "")),
            wall_s=wall_s,
            flows=tuple(FlowResult.from_json(f) for f in _need(data, "flows", "result")),
            links=tuple(LinkResult.from_json(link) for link in _need(data, "links", "result")),
            series=Series.from_json(_need(data, "series", "result")),
            scenario=scenario,
        )

    def link(self, name: str) -> LinkResult:
        for link in self.links:
            if link.name == name:
                return link
        raise ResultFormatError(f"core result: no link named {name!r}")

    @property
    def bottleneck(self) -> LinkResult:
        """The forward (data) direction of the bottleneck."""
        return self.link("bottleneck.forward")

    @property
    def jain_fairness(self) -> float:
        """Jain's index over the flows' goodput (all flows are TCP)."""
        return jain_index([flow.goodput_bps for flow in self.flows])

    def to_json_dict(self) -> dict[str, Any]:
        """The object `tcplab run --json` prints (ms and s for people, bit/s and bytes)."""
        bn = self.bottleneck
        return {
            "name": self.name,
            "seed": self.seed,
            "duration_s": self.duration_ns / 1e9,
            "wall_s": self.wall_s,
            "events": self.events,
            "events_per_wall_s": self.events / self.wall_s if self.wall_s > 0 else None,
            "core_version": self.core_version,
            "flows": [self._flow_json(flow) for flow in self.flows],
            "bottleneck": self._bottleneck_json(bn),
            "links": [link.to_json_dict() for link in self.links],
            "jain_fairness": self.jain_fairness,
            "aggregate_goodput_bps": sum(flow.goodput_bps for flow in self.flows),
            "scenario": copy.deepcopy(dict(self.scenario)),  # callers may edit their copy
        }

    @staticmethod
    def _bottleneck_json(bn: LinkResult) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rate_bps": bn.rate_bps,
            "utilization": bn.utilization,
            "queue_drops": bn.queue_drops,
            "error_drops": bn.error_drops,
            "ecn_marks": bn.ecn_marks,
            "queue_mean_pkts": bn.queue_mean_pkts,
            "queue_max_pkts": bn.queue_max_pkts,
        }
        for key, value in bn.extra.items():
            out.setdefault(key, value)
        return out

    def _flow_json(self, flow: FlowResult) -> dict[str, Any]:
        bounds = flow_bounds(dict(self.scenario), flow.id)
        out = {
            "id": flow.id,
            "cca": flow.cca,
            "app": flow.app,
            "start_s": flow.start_ns / 1e9,
            "goodput_bps": flow.goodput_bps,
            "throughput_bps": flow.throughput_bps,
            "bytes_delivered": flow.bytes_delivered,
            "bytes_sent": flow.bytes_sent,
            "segments_sent": flow.segments_sent,
            "retransmits": flow.retransmits,
            "rto_count": flow.rto_count,
            "fast_recoveries": flow.fast_recoveries,
            "spurious_undos": flow.spurious_undos,
            "rtt_samples": flow.rtt.count,
            "rtt_mean_ms": _ms(flow.rtt.mean_ns),
            "rtt_min_ms": _ms(flow.rtt.min_ns),
            "rtt_p50_ms": _ms(flow.rtt.p50_ns),
            "rtt_p95_ms": _ms(flow.rtt.p95_ns),
            "rtt_max_ms": _ms(flow.rtt.max_ns),
            "completion_s": None if flow.completion_ns is None else flow.completion_ns / 1e9,
            "final_cwnd_bytes": flow.final_cwnd_bytes,
            "final_ssthresh_bytes": flow.final_ssthresh_bytes,
            "base_rtt_ms": bounds.base_rtt_s * 1e3,
            "loss_p": bounds.p,
            "link_cap_bps": bounds.cap_bps,
            "mathis_bps": bounds.mathis_bps,
            "padhye_bps": bounds.padhye_bps,
        }
        for key, value in flow.extra.items():
            out.setdefault(key, value)
        return out

    def series_frame(self) -> pd.DataFrame:
        """Long format, one row per (interval, flow): t_s, flow, goodput_bps, throughput_bps,
        rtt_ms (NaN without samples), cwnd_bytes, retransmits."""
        from .series import series_frame  # pandas is imported only when a frame is wanted

        return series_frame(self.series)
