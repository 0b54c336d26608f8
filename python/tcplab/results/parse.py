"""Typed view of the core's result JSON (docs/interface.md) and the CLI's `--json` object.

The core reports in base units (ns, bit/s, bytes); conversions to ms/s for people happen only
in `to_json_dict` and `series_frame`, whose column names say the unit.

Run-level rates: `aggregate_goodput_bps` is the bytes delivered by all TCP flows over the
scenario's duration (never above the bottleneck's payload capacity); a flow's `goodput_bps`
is over its own active time (docs/results.md "Metrics").

The issue-5 additions (a flow's `kind`, CBR statistics, PEP `legs` and `pep_buffer`, a link's
`outage_drops`/`aqm_drops`) are optional: a result without them is a TCP-only dumbbell result
and parses exactly as before.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final

from ..scenario.topology import bottleneck_link_names
from .metrics import aggregate_rate_bps, jain_index
from .theory import FlowBounds, flows_bounds

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]

    from ..trace.request import TraceOutput
    from .provenance import RunProvenance


class ResultFormatError(RuntimeError):
    """The core's result JSON does not match the interface (a bug, not a user error)."""


# The fields of the core's result structs (crates/core/src/api.rs), which `from_json` reads
# exactly: a contract test runs the core on every shipped scenario against them.
RESULT_KEYS: Final = (
    *("name", "seed", "duration_ns", "events", "core_version", "model_version"),
    *("flows", "links", "series"),
)
#: result keys the core leaves out when empty: `wifi` (the scenario has no Wi-Fi link),
#: `cross` (it has no cross traffic)
RESULT_OPTIONAL_KEYS: Final = ("wifi", "cross")
WIFI_KEYS: Final = ("name", "standard", "mode_rates_bps", "stations")
WIFI_STATION_KEYS: Final = (
    *("name", "airtime_ratio", "ppdus", "collisions", "mpdus", "retries", "delivered"),
    *("drops", "aggregation_hist", "mcs_hist"),
)
RTT_KEYS: Final = (
    *("count", "mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns", "srtt_time_mean_ns"),
)
#: counters a flow reports that tcplab passes through (`FlowResult.extra`)
FLOW_COUNTERS: Final = ("tlp_probes", "dup_bytes_received", "acks_sent")
FLOW_KEYS: Final = (
    *("id", "cca", "start_ns", "app", "kind", "bytes_delivered", "bytes_sent"),
    *("segments_sent", "retransmits", "goodput_bps", "throughput_bps", "active_ns"),
    *("completion_ns", "server_done_ns", "closed_ns", "rtt", "rto_count", "fast_recoveries"),
    *("spurious_undos", "final_cwnd_bytes", "final_ssthresh_bytes"),
    *FLOW_COUNTERS,
)
#: a CBR flow has these too; a flow through PEPs has `PEP_KEYS` (left out when empty)
CBR_KEYS: Final = ("packets_sent", "packets_received", "loss_ratio", "owd")
PEP_KEYS: Final = ("legs", "pep_buffer")
LEG_KEYS: Final = (
    *("from", "to", "cca", "bytes_delivered", "goodput_bps", "retransmits", "rto_count"),
    *("rtt", "sender_done_ns", "closed_ns"),
)
LINK_KEYS: Final = (
    *("name", "rate_bps", "packets_tx", "bytes_tx", "utilization", "queue_drops"),
    *("error_drops", "ecn_marks", "outage_drops", "aqm_drops", "queue_mean_pkts"),
    *("queue_max_pkts", "queue_mean_bytes", "queue_max_bytes"),
)
#: a run with cross traffic has `cross`, a list of these (left out when there is none)
CROSS_KEYS: Final = (
    *("id", "kind", "link", "bursts", "bytes_offered", "packets_sent", "bytes_sent"),
    *("packets_delivered", "bytes_delivered", "packets_dropped", "sent_bps", "delivered_bps"),
)
#: TCP cross traffic (`kind = "tcp_flows"`) has these too: its connections
CROSS_TCP_KEYS: Final = (
    *("cca", "rtt_ns", "max_connections", "connections_started", "connections_completed"),
    *("connections_refused", "connections_open", "connections_peak", "completion_mean_ns"),
    *("payload_bytes_delivered", "goodput_bps", "retransmits", "rto_count"),
)
SERIES_KEYS: Final = (
    *("interval_ns", "t_ns", "flows", "bottleneck_queue_pkts", "bottleneck_utilization"),
)
#: the series of a run that streamed them (`_core.run_json_series`): how many intervals, and
#: the core's series file they went to (None: not kept)
STREAMED_SERIES_KEYS: Final = ("interval_ns", "intervals", "file")
SERIES_FLOW_KEYS: Final = (
    *("id", "goodput_bps", "throughput_bps", "rtt_mean_ns", "cwnd_bytes", "retransmits"),
)


def _need(data: Mapping[str, Any], key: str, where: str) -> Any:
    try:
        return data[key]
    except (KeyError, TypeError):
        raise ResultFormatError(f"core result: {where} has no {key!r}") from None


def _exact(
    data: Mapping[str, Any], where: str, required: Iterable[str], optional: Iterable[str] = ()
) -> None:
    """The keys of `data` are `required` plus any of `optional`, as the core's structs
    serialize them: a key missing or unknown is a `ResultFormatError`, so a change of the
    result's shape on either side is caught instead of read past."""
    if not isinstance(data, Mapping):
        raise ResultFormatError(f"core result: {where} is not an object")
    need = set(required)
    missing = sorted(need - data.keys())
    if missing:
        raise ResultFormatError(f"core result: {where} has no {missing[0]!r}")
    unknown = sorted(data.keys() - need - set(optional))
    if unknown:
        raise ResultFormatError(f"core result: {where} has an unknown field {unknown[0]!r}")


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def ns_to_ms(value_ns: float | None) -> float | None:
    """Nanoseconds to milliseconds, None kept."""
    return None if value_ns is None else value_ns / 1e6


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def ns_to_s(value_ns: int | None) -> float | None:
    """Nanoseconds to seconds, None kept."""
    return None if value_ns is None else value_ns / 1e9


@dataclass(frozen=True)
class RttStats:
    """Sender RTT samples of one flow (ns); fields are None when there was no sample."""

    count: int
    mean_ns: float | None
    min_ns: float | None
    p50_ns: float | None
    p95_ns: float | None
    max_ns: float | None
    #: Time average of the smoothed RTT (what `TCP_INFO` read at regular instants gives);
    #: None for one-way delays.
    srtt_time_mean_ns: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "rtt") -> RttStats:
        _exact(data, where, RTT_KEYS)
        mean, low, p50, p95, high = (
            _opt_float(_need(data, key, where))
            for key in ("mean_ns", "min_ns", "p50_ns", "p95_ns", "max_ns")
        )
        smoothed = _opt_float(data["srtt_time_mean_ns"])
        return cls(int(_need(data, "count", where)), mean, low, p50, p95, high, smoothed)

    @classmethod
    def empty(cls) -> RttStats:
        return cls(0, None, None, None, None, None)

    def ms_dict(self, prefix: str) -> dict[str, float | None]:
        """`{prefix}_mean_ms` ... `{prefix}_max_ms` for `--json`."""
        return {
            f"{prefix}_mean_ms": ns_to_ms(self.mean_ns),
            f"{prefix}_min_ms": ns_to_ms(self.min_ns),
            f"{prefix}_p50_ms": ns_to_ms(self.p50_ns),
            f"{prefix}_p95_ms": ns_to_ms(self.p95_ns),
            f"{prefix}_max_ms": ns_to_ms(self.max_ns),
        }


@dataclass(frozen=True)
class CbrStats:
    """A UDP constant-bit-rate flow: datagrams sent and received, and one-way delay."""

    packets_sent: int
    packets_received: int
    loss_ratio: float
    owd: RttStats

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> CbrStats:
        sent = int(_need(data, "packets_sent", where))
        received = int(_need(data, "packets_received", where))
        return cls(
            packets_sent=sent,
            packets_received=received,
            loss_ratio=float(_need(data, "loss_ratio", where)),
            owd=RttStats.from_json(_need(data, "owd", where), f"{where} owd"),
        )


@dataclass(frozen=True)
class LegResult:
    """One TCP connection of a flow split by PEPs (`from` → `to`, e.g. server → pep1).
    Everything but the end points is optional in the core's result (None when absent)."""

    src: str
    dst: str
    cca: str | None
    goodput_bps: float | None
    retransmits: int | None
    rtt: RttStats
    bytes_delivered: int | None
    rto_count: int | None = None
    #: file downloads: this leg's sender had its FIN acknowledged / its receiver's FIN was
    #: acknowledged (ns from the flow's start; None for bulk flows or before the end)
    sender_done_ns: int | None = None
    closed_ns: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> LegResult:
        _exact(data, where, LEG_KEYS)
        cca = data["cca"]
        return cls(
            src=str(data["from"]),
            dst=str(data["to"]),
            cca=None if cca is None else str(cca),
            goodput_bps=_opt_float(data["goodput_bps"]),
            retransmits=_opt_int(data["retransmits"]),
            rtt=RttStats.from_json(data["rtt"], f"{where} rtt"),
            bytes_delivered=_opt_int(data["bytes_delivered"]),
            rto_count=_opt_int(data["rto_count"]),
            sender_done_ns=_opt_int(data["sender_done_ns"]),
            closed_ns=_opt_int(data["closed_ns"]),
        )

    @property
    def label(self) -> str:
        return f"{self.src}→{self.dst}"

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "from": self.src,
            "to": self.dst,
            "cca": self.cca,
            "goodput_bps": self.goodput_bps,
            "retransmits": self.retransmits,
            "bytes_delivered": self.bytes_delivered,
            "sender_done_s": ns_to_s(self.sender_done_ns),
            "closed_s": ns_to_s(self.closed_ns),
            "rtt_samples": self.rtt.count,
            **self.rtt.ms_dict("rtt"),
            "srtt_time_mean_ms": ns_to_ms(self.rtt.srtt_time_mean_ns),
        }


@dataclass(frozen=True)
class PepBufferStats:
    """A PEP's relay buffer for one flow (bytes held: time-weighted mean and maximum)."""

    node: str
    mean_bytes: float | None
    max_bytes: int | None
    limit_bytes: int | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> PepBufferStats:
        _exact(data, where, ("node", "mean_bytes", "max_bytes", "limit_bytes"))
        return cls(
            node=str(_need(data, "node", where)),
            mean_bytes=_opt_float(data.get("mean_bytes")),
            max_bytes=_opt_int(data.get("max_bytes")),
            limit_bytes=_opt_int(data.get("limit_bytes")),
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "mean_bytes": self.mean_bytes,
            "max_bytes": self.max_bytes,
            "limit_bytes": self.limit_bytes,
        }


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
    #: the per-flow counters `FLOW_COUNTERS` (tail-loss probes, duplicate bytes received,
    #: ACKs sent), passed through to `--json` and the database as they are
    extra: Mapping[str, float] = field(default_factory=dict)
    #: "tcp" or "cbr" (UDP constant bit rate; its statistics are in `cbr`)
    kind: str = "tcp"
    cbr: CbrStats | None = None
    #: the TCP connections of a flow split by PEPs, server side first (empty: end to end)
    legs: tuple[LegResult, ...] = ()
    pep_buffer: tuple[PepBufferStats, ...] = ()
    #: file downloads (connection teardown, ns from the flow's start): the server's FIN was
    #: acknowledged (by the client, or by the first PEP) / the client's connection closed
    server_done_ns: int | None = None
    closed_ns: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlowResult:
        where = f"flow {data.get('id', '?')}"
        kind = str(_need(data, "kind", where))
        if kind == "cbr":
            _exact(data, where, (*FLOW_KEYS, *CBR_KEYS), PEP_KEYS)
            return cls._cbr_from_json(data, where)
        _exact(data, where, FLOW_KEYS, PEP_KEYS)
        ints = (
            *("id", "start_ns", "bytes_delivered", "bytes_sent", "segments_sent"),
            *("retransmits", "active_ns", "rto_count", "fast_recoveries", "spurious_undos"),
        )
        values: dict[str, Any] = {key: int(_need(data, key, where)) for key in ints}
        completion = _need(data, "completion_ns", where)
        ssthresh = data["final_ssthresh_bytes"]
        legs = data.get("legs") or ()
        buffers = data.get("pep_buffer") or ()
        return cls(
            cca=str(_need(data, "cca", where)),
            app=str(_need(data, "app", where)),
            goodput_bps=float(_need(data, "goodput_bps", where)),
            throughput_bps=float(_need(data, "throughput_bps", where)),
            completion_ns=None if completion is None else int(completion),
            rtt=RttStats.from_json(_need(data, "rtt", where)),
            final_cwnd_bytes=int(_need(data, "final_cwnd_bytes", where)),
            final_ssthresh_bytes=None if ssthresh is None else int(ssthresh),
            extra={key: data[key] for key in FLOW_COUNTERS},
            kind=kind,
            legs=tuple(LegResult.from_json(leg, f"{where} leg") for leg in legs),
            pep_buffer=tuple(PepBufferStats.from_json(b, f"{where} pep_buffer") for b in buffers),
            server_done_ns=_opt_int(data["server_done_ns"]),
            closed_ns=_opt_int(data["closed_ns"]),
            **values,
        )

    @classmethod
    def _cbr_from_json(cls, data: Mapping[str, Any], where: str) -> FlowResult:
        """A CBR flow: its datagram counts and one-way delays; the TCP counters the core
        reports as 0 for it are read as such."""

        def count(key: str) -> int:
            value = data.get(key)
            return 0 if value is None else int(value)

        completion = data.get("completion_ns")
        rtt = data.get("rtt")
        cca = data.get("cca")
        goodput_bps = float(_need(data, "goodput_bps", where))
        return cls(
            id=int(_need(data, "id", where)),
            cca="" if cca is None else str(cca),
            start_ns=count("start_ns"),
            app=str(data.get("app", "cbr")),
            bytes_delivered=count("bytes_delivered"),
            bytes_sent=count("bytes_sent"),
            segments_sent=count("segments_sent"),
            retransmits=0,
            goodput_bps=goodput_bps,
            throughput_bps=float(data.get("throughput_bps", goodput_bps)),
            active_ns=count("active_ns"),
            completion_ns=None if completion is None else int(completion),
            rtt=RttStats.from_json(rtt, f"{where} rtt") if rtt else RttStats.empty(),
            rto_count=0,
            fast_recoveries=0,
            spurious_undos=0,
            final_cwnd_bytes=0,
            final_ssthresh_bytes=None,
            extra={key: data[key] for key in FLOW_COUNTERS},
            kind="cbr",
            cbr=CbrStats.from_json(data, where),
        )

    @property
    def is_tcp(self) -> bool:
        return self.kind != "cbr"


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
    #: no link counters beyond the fields (kept for the shape `to_json_dict` flattens)
    extra: Mapping[str, float] = field(default_factory=dict)
    #: packets lost because the link was down (None: a hand-made result without it)
    outage_drops: int | None = None
    #: packets a RED/CoDel queue dropped early (None: a hand-made result without it)
    aqm_drops: int | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinkResult:
        where = f"link {data.get('name', '?')}"
        _exact(data, where, LINK_KEYS)
        ints = (
            *("rate_bps", "packets_tx", "bytes_tx", "queue_drops", "error_drops", "ecn_marks"),
            *("queue_max_pkts", "queue_max_bytes"),
        )
        values: dict[str, Any] = {key: int(_need(data, key, where)) for key in ints}
        for key in ("utilization", "queue_mean_pkts", "queue_mean_bytes"):
            values[key] = float(_need(data, key, where))
        return cls(
            name=str(_need(data, "name", where)),
            outage_drops=int(data["outage_drops"]),
            aqm_drops=int(data["aqm_drops"]),
            **values,
        )

    def to_json_dict(self) -> dict[str, Any]:
        """Every field (optional counters only when reported), the extra counters flattened
        in."""
        out = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "extra" and getattr(self, f.name) is not None
        }
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


@dataclass(frozen=True)
class CrossResult:
    """One cross-traffic source (`[[cross]]`): what it offered and what its link carried.
    It is not a flow: aggregates, fairness and the flows' series leave it out."""

    id: int
    kind: str
    link: str
    bursts: int
    bytes_offered: int
    packets_sent: int
    bytes_sent: int
    packets_delivered: int
    bytes_delivered: int
    packets_dropped: int
    sent_bps: float
    delivered_bps: float
    #: TCP cross traffic's connections (None for the open-loop kinds)
    tcp: CrossTcpResult | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CrossResult:
        where = f"cross {data.get('id', '?')}"
        tcp = data.get("kind") == "tcp_flows"
        _exact(data, where, (*CROSS_KEYS, *(CROSS_TCP_KEYS if tcp else ())))
        return cls(
            id=int(data["id"]),
            kind=str(data["kind"]),
            link=str(data["link"]),
            **{
                key: int(data[key])
                for key in CROSS_KEYS[3:10]  # the counters
            },
            sent_bps=float(data["sent_bps"]),
            delivered_bps=float(data["delivered_bps"]),
            tcp=CrossTcpResult.from_json(data) if tcp else None,
        )

    def to_json_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tcp"}
        if self.tcp is not None:  # flattened, as the core writes it
            out.update(self.tcp.to_json_dict())
        return out


@dataclass(frozen=True)
class CrossTcpResult:
    """The connections of TCP cross traffic (`kind = "tcp-flows"`): how many arrived,
    completed and were refused, how long they took, and what they delivered."""

    cca: str
    rtt_ns: int
    max_connections: int
    connections_started: int
    connections_completed: int
    connections_refused: int
    connections_open: int
    connections_peak: int
    #: mean over the completed connections of arrival to whole file received (None: none)
    completion_mean_ns: int | None
    payload_bytes_delivered: int
    goodput_bps: float
    retransmits: int
    rto_count: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CrossTcpResult:
        mean = data["completion_mean_ns"]
        return cls(
            cca=str(data["cca"]),
            goodput_bps=float(data["goodput_bps"]),
            completion_mean_ns=None if mean is None else int(mean),
            **{
                key: int(data[key])
                for key in CROSS_TCP_KEYS
                if key not in ("cca", "goodput_bps", "completion_mean_ns")
            },
        )

    def to_json_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


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
        _exact(data, where, SERIES_FLOW_KEYS)
        return cls(
            id=int(data["id"]),
            goodput_bps=tuple(float(v) for v in data["goodput_bps"]),
            throughput_bps=tuple(float(v) for v in data["throughput_bps"]),
            rtt_mean_ns=tuple(_opt_float(v) for v in data["rtt_mean_ns"]),
            cwnd_bytes=tuple(int(v) for v in data["cwnd_bytes"]),
            retransmits=tuple(int(v) for v in data["retransmits"]),
        )


@dataclass(frozen=True)
class Series:
    """Samples per interval `[t - interval, t)`, `t_ns` being the interval ends. A run that
    streamed its series holds none of them: `streamed` is set, `intervals` says how many
    there were, and `file` where the core wrote them (None: not kept)."""

    interval_ns: int
    t_ns: tuple[int, ...]
    flows: tuple[FlowSeries, ...]
    bottleneck_queue_pkts: tuple[float, ...]
    bottleneck_utilization: tuple[float, ...]
    streamed: bool = False
    intervals: int | None = None
    file: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Series:
        if isinstance(data, Mapping) and "t_ns" not in data:
            _exact(data, "series", STREAMED_SERIES_KEYS)
            file = data["file"]
            return cls(
                interval_ns=int(data["interval_ns"]),
                t_ns=(),
                flows=(),
                bottleneck_queue_pkts=(),
                bottleneck_utilization=(),
                streamed=True,
                intervals=int(data["intervals"]),
                file=None if file is None else str(file),
            )
        _exact(data, "series", SERIES_KEYS)
        return cls(
            interval_ns=int(data["interval_ns"]),
            t_ns=tuple(int(v) for v in data["t_ns"]),
            flows=tuple(FlowSeries.from_json(f) for f in data["flows"]),
            bottleneck_queue_pkts=tuple(float(v) for v in data["bottleneck_queue_pkts"]),
            bottleneck_utilization=tuple(float(v) for v in data["bottleneck_utilization"]),
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
    #: the core's MODEL_VERSION (None: a result without one, e.g. the real stack's)
    model_version: int | None = None
    #: host and start time of the run (None: not recorded, e.g. a hand-made result)
    run_info: RunProvenance | None = None
    #: the checkout the package ran from (see `provenance.git_commit`)
    git_commit: str | None = None
    #: the captures and event log a traced run wrote (`tcplab.Trace`), else None
    trace: TraceOutput | None = None
    #: the cross-traffic sources (`[[cross]]`), apart from the flows
    cross: tuple[CrossResult, ...] = ()
    #: per Wi-Fi medium: airtime, collisions, retries, A-MPDU and MCS histograms per
    #: contender (`ap`, `flowN`, `backgroundN`), as the core reports them (docs/wifi.md)
    wifi: tuple[Mapping[str, Any], ...] = ()

    @classmethod
    def from_json(
        cls,
        result: str | Mapping[str, Any],
        *,
        wall_s: float,
        scenario: Mapping[str, Any],
        run_info: RunProvenance | None = None,
        git_commit: str | None = None,
    ) -> RunResult:
        data: Mapping[str, Any] = json.loads(result) if isinstance(result, str) else result
        _exact(data, "result", RESULT_KEYS, RESULT_OPTIONAL_KEYS)
        wifi = tuple(data.get("wifi") or ())
        for medium in wifi:
            _exact(medium, "result.wifi", WIFI_KEYS)
            for station in medium["stations"]:
                _exact(station, "result.wifi.stations", WIFI_STATION_KEYS)
        flows = tuple(FlowResult.from_json(f) for f in data["flows"])
        return cls(
            name=str(_need(data, "name", "result")),
            seed=int(_need(data, "seed", "result")),
            duration_ns=int(_need(data, "duration_ns", "result")),
            events=int(_need(data, "events", "result")),
            core_version=str(data["core_version"]),
            wall_s=wall_s,
            flows=flows,
            links=tuple(LinkResult.from_json(link) for link in _need(data, "links", "result")),
            series=Series.from_json(data["series"]),
            scenario=scenario,
            model_version=_opt_int(data["model_version"]),
            run_info=run_info,
            git_commit=git_commit,
            cross=tuple(CrossResult.from_json(c) for c in data.get("cross", ())),
            wifi=wifi,
        )

    @property
    def aggregate_goodput_bps(self) -> float:
        """Payload bytes delivered by all TCP flows x 8 / the scenario's duration."""
        total = sum(flow.bytes_delivered for flow in self.tcp_flows)
        return aggregate_rate_bps(total, self.duration_ns)

    @property
    def aggregate_throughput_bps(self) -> float:
        """Payload bytes the TCP senders put on the wire (retransmissions included) x 8 / the
        scenario's duration."""
        return aggregate_rate_bps(sum(f.bytes_sent for f in self.tcp_flows), self.duration_ns)

    @property
    def cbr_goodput_bps(self) -> float:
        """Payload bytes received by all CBR flows x 8 / the scenario's duration."""
        total = sum(flow.bytes_delivered for flow in self.cbr_flows)
        return aggregate_rate_bps(total, self.duration_ns)

    @property
    def scenario_hash(self) -> str:
        from ..scenario.identity import scenario_hash

        return scenario_hash(self.scenario)

    def provenance(self) -> dict[str, Any]:
        """What produced this result (the keys of `tcplab.results.provenance`), JSON-ready."""
        from .. import __version__

        info = self.run_info
        return {
            "tcplab_version": __version__,
            "core_version": self.core_version,
            "model_version": self.model_version,
            "git_commit": self.git_commit,
            "scenario_hash": self.scenario_hash,
            "seed": self.seed,
            "host": None if info is None else info.host,
            "started_utc": None if info is None else info.started_utc,
            "wall_s": self.wall_s,
        }

    def link(self, name: str) -> LinkResult:
        for link in self.links:
            if link.name == name:
                return link
        raise ResultFormatError(f"core result: no link named {name!r}")

    @property
    def bottleneck(self) -> LinkResult:
        """The forward (data) direction of the bottleneck: the dumbbell's, or the path
        segment with the lowest forward rate (see `paths.bottleneck_index`)."""
        return self.link(bottleneck_link_names(self.scenario)[0])

    @property
    def bottleneck_reverse(self) -> LinkResult:
        """The return (ACK) direction of the bottleneck segment."""
        return self.link(bottleneck_link_names(self.scenario)[1])

    @property
    def tcp_flows(self) -> tuple[FlowResult, ...]:
        return tuple(flow for flow in self.flows if flow.is_tcp)

    @property
    def cbr_flows(self) -> tuple[FlowResult, ...]:
        return tuple(flow for flow in self.flows if not flow.is_tcp)

    @property
    def jain_fairness(self) -> float:
        """Jain's index over the TCP flows' goodput (CBR flows send at a fixed rate, so
        they take no part in the competition the index measures)."""
        return jain_index([flow.goodput_bps for flow in self.tcp_flows])

    def to_json_dict(self) -> dict[str, Any]:
        """The object `tcplab run --json` prints (ms and s for people, bit/s and bytes).
        `aggregate_goodput_bps` is the TCP flows' delivered bytes over the run's duration,
        `cbr_goodput_bps` (present when there are CBR flows) the CBR ones'; a flow's
        `goodput_bps` is over its own active time. `provenance` says what produced it."""
        bn = self.bottleneck
        out = {
            "name": self.name,
            "seed": self.seed,
            "duration_s": self.duration_ns / 1e9,
            "wall_s": self.wall_s,
            "events": self.events,
            "events_per_wall_s": self.events / self.wall_s if self.wall_s > 0 else None,
            "core_version": self.core_version,
            "model_version": self.model_version,
            "provenance": self.provenance(),
            "flows": self._flows_json(),
            "bottleneck": self._bottleneck_json(bn),
            "links": [link.to_json_dict() for link in self.links],
            "jain_fairness": self.jain_fairness,
            "aggregate_goodput_bps": self.aggregate_goodput_bps,
            "scenario": copy.deepcopy(dict(self.scenario)),  # callers may edit their copy
        }
        if self.cbr_flows:
            out["cbr_goodput_bps"] = self.cbr_goodput_bps
        if self.cross:
            out["cross"] = [cross.to_json_dict() for cross in self.cross]
        if self.wifi:
            out["wifi"] = copy.deepcopy([dict(m) for m in self.wifi])
        return out

    @staticmethod
    def _bottleneck_json(bn: LinkResult) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": bn.name,
            "rate_bps": bn.rate_bps,
            "utilization": bn.utilization,
            "queue_drops": bn.queue_drops,
            "error_drops": bn.error_drops,
            "ecn_marks": bn.ecn_marks,
            "queue_mean_pkts": bn.queue_mean_pkts,
            "queue_max_pkts": bn.queue_max_pkts,
        }
        for key in ("outage_drops", "aqm_drops"):
            if getattr(bn, key) is not None:
                out[key] = getattr(bn, key)
        for key, value in bn.extra.items():
            out.setdefault(key, value)
        return out

    def _cbr_json(self, flow: FlowResult) -> dict[str, Any]:
        cbr = flow.cbr or CbrStats(0, 0, 0.0, RttStats.empty())
        flows = self.scenario.get("flows") or []
        app = flows[flow.id].get("app", {}) if flow.id < len(flows) else {}
        out: dict[str, Any] = {
            "id": flow.id,
            "kind": "cbr",
            "app": flow.app,
            "start_s": flow.start_ns / 1e9,
            "rate_bps": app.get("rate_bps"),
            "packet_bytes": app.get("packet_bytes"),
            "goodput_bps": flow.goodput_bps,
            "packets_sent": cbr.packets_sent,
            "packets_received": cbr.packets_received,
            "loss_ratio": cbr.loss_ratio,
            "owd_samples": cbr.owd.count,
            **cbr.owd.ms_dict("owd"),
        }
        for key, value in flow.extra.items():
            out.setdefault(key, value)
        return out

    def _flows_json(self) -> list[dict[str, Any]]:
        tcp = [flow for flow in self.flows if flow.is_tcp]
        bounds = dict(
            zip(
                (flow.id for flow in tcp),
                flows_bounds(dict(self.scenario), [flow.id for flow in tcp]),
                strict=True,
            )
        )
        return [
            self._flow_json(flow, bounds[flow.id]) if flow.is_tcp else self._cbr_json(flow)
            for flow in self.flows
        ]

    def _flow_json(self, flow: FlowResult, bounds: FlowBounds) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": flow.id,
            "kind": flow.kind,
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
            **flow.rtt.ms_dict("rtt"),
            "srtt_time_mean_ms": ns_to_ms(flow.rtt.srtt_time_mean_ns),
            "completion_s": ns_to_s(flow.completion_ns),
            "server_done_s": ns_to_s(flow.server_done_ns),
            "closed_s": ns_to_s(flow.closed_ns),
            "final_cwnd_bytes": flow.final_cwnd_bytes,
            "final_ssthresh_bytes": flow.final_ssthresh_bytes,
            "base_rtt_ms": bounds.base_rtt_s * 1e3,
            "loss_p": bounds.p,
            "link_cap_bps": bounds.cap_bps,
            "mathis_bps": bounds.mathis_bps,
            "padhye_bps": bounds.padhye_bps,
            "cubic_bps": bounds.cubic_bps,
        }
        if flow.legs:
            out["legs"] = [leg.to_json_dict() for leg in flow.legs]
        if flow.pep_buffer:
            out["pep_buffer"] = [buffer.to_json_dict() for buffer in flow.pep_buffer]
        for key, value in flow.extra.items():
            out.setdefault(key, value)
        return out

    def series_flows(self) -> list[tuple[str, str]]:
        """Each flow's (kind, cca) as the series schema writes them (cca "" for CBR)."""
        return [(f.kind, f.cca if f.is_tcp else "") for f in self.flows]

    def series_frame(self) -> pd.DataFrame:
        """Long format, one row per (interval, flow), in the one series schema
        (`series.SERIES_COLUMNS`); `frame.attrs["provenance"]` says what produced it. A run
        that streamed its series reads them back from the core's series file."""
        from .series import series_frame  # pandas is imported only when a frame is wanted

        return series_frame(self)
