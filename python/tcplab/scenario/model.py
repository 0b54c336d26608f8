"""Typed models of the TOML scenario file (pydantic v2, strict, unknown keys rejected).

Attribute names carry units (`delay_ns`, `rate_bps`, `rwnd_bytes`); the TOML keys are the aliases
(`delay`, `rate`, `rwnd`), so validation errors name the keys the user wrote. Unit strings are
parsed while validating and serialized back to exact unit strings, so
`Scenario.model_validate(s.model_dump(by_alias=True, exclude_none=True))` round-trips (used to apply
`--set` overrides to an already validated scenario).

Only single-field checks live here; rules that relate several fields (a file download needs a
size, flows must start before the end of the run, the algorithm must be in the core's catalogue)
are in `checks.py`, where the full field path is known for the error message.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationInfo,
    model_validator,
)

from ..errors import Problem
from ..input_limits import exact_number
from ..limits import LIMITS
from ..units import (
    format_duration_ns,
    format_rate_bps,
    format_size_bytes,
    parse_duration_ns,
    parse_rate_bps,
    parse_size_bytes,
)
from .traces import DeliveryTrace, RateTrace, read_delivery_trace, read_rate_trace

# The ranges the core checks come from the core (`LIMITS`); these two are the file's own
# sanity bounds on queue sizes, which the core has no reason to limit.
MAX_QUEUE_PKTS: Final = 10**7
MAX_QUEUE_BDP: Final = 1000


def _check(ok: Callable[[Any], bool], problem: str, allowed: str | None = None) -> AfterValidator:
    """A validator that raises `Problem(problem, allowed)` unless `ok(value)`."""

    def check(value: Any) -> Any:
        if not ok(value):
            raise Problem(problem, allowed)
        return value

    return AfterValidator(check)


def _ns_text(value_ns: int) -> str:
    return format_duration_ns(value_ns)


def _bps_text(value_bps: int) -> str:
    return format_rate_bps(value_bps)


DurationNs = Annotated[
    int,
    BeforeValidator(parse_duration_ns),
    PlainSerializer(_ns_text, return_type=str),
    _check(
        lambda v: v <= LIMITS.max_duration_ns,
        "is absurdly long",
        f"at most {format_duration_ns(LIMITS.max_duration_ns)}",
    ),
]
RateBps = Annotated[
    int,
    BeforeValidator(parse_rate_bps),
    PlainSerializer(_bps_text, return_type=str),
    _check(lambda v: v > 0, "must be greater than 0"),
    _check(
        lambda v: v <= LIMITS.max_rate_bps,
        "is absurdly high",
        f"at most {format_rate_bps(LIMITS.max_rate_bps)}",
    ),
]
SizeBytes = Annotated[int, BeforeValidator(parse_size_bytes)]
DelayNs = Annotated[
    DurationNs,
    _check(
        lambda v: v <= LIMITS.max_delay_ns,
        "too long",
        f"at most {format_duration_ns(LIMITS.max_delay_ns)}",
    ),
]
Probability = Annotated[float, _check(lambda v: 0.0 <= v < 1.0, "must be in [0, 1)")]

QUEUE_ALLOWED: Final = '"<k>bdp" (k > 0), "<n>pkts" or a size such as "64KB"'


@dataclass(frozen=True)
class QueueSpec:
    """A DropTail limit as written by the user; `bdp` is resolved to packets in `normalize.py`."""

    kind: Literal["bdp", "pkts", "bytes"]
    amount: Fraction  # multiple of the BDP for "bdp", an integer count otherwise

    def __str__(self) -> str:
        if self.kind == "bytes":
            return f"{self.amount}B"
        # decimal text when it is exact (the usual "1.5bdp"), else "p/q", which Fraction parses
        text = str(float(self.amount))
        if Fraction(text) != self.amount:
            text = str(self.amount)
        return f"{text.removesuffix('.0')}{self.kind}"


def parse_queue(value: object) -> QueueSpec:
    """`"2bdp"`, `"200pkts"` (or `pkt`) or a size (`"64KB"`) → `QueueSpec`."""
    if isinstance(value, QueueSpec):
        return value
    if not isinstance(value, str):
        raise Problem("a queue limit needs a unit", QUEUE_ALLOWED)
    text = value.strip().lower()
    for suffix, kind in (("bdp", "bdp"), ("pkts", "pkts"), ("pkt", "pkts")):
        if text.endswith(suffix):
            try:
                amount = exact_number(text.removesuffix(suffix))
            except ValueError:
                raise Problem("not a number followed by a unit", QUEUE_ALLOWED) from None
            if amount <= 0:
                raise Problem("must be greater than 0", QUEUE_ALLOWED)
            if kind == "pkts" and amount.denominator != 1:
                raise Problem("a packet count must be a whole number", QUEUE_ALLOWED)
            if kind == "pkts" and amount > MAX_QUEUE_PKTS:
                raise Problem("is absurdly large", f"at most {MAX_QUEUE_PKTS}pkts")
            if kind == "bdp" and amount > MAX_QUEUE_BDP:
                raise Problem("is absurdly large", f"at most {MAX_QUEUE_BDP}bdp")
            return QueueSpec("bdp" if kind == "bdp" else "pkts", amount)
    try:
        size_bytes = parse_size_bytes(value)
    except Problem:
        raise Problem("unknown queue limit", QUEUE_ALLOWED) from None
    if size_bytes < LIMITS.min_queue_bytes:
        raise Problem("too small to hold a full packet", f"at least {LIMITS.min_queue_bytes}B")
    if size_bytes > MAX_QUEUE_PKTS * LIMITS.mtu_bytes:
        raise Problem(
            "is absurdly large", f"at most {MAX_QUEUE_PKTS * LIMITS.mtu_bytes // 10**9}GB"
        )
    return QueueSpec("bytes", Fraction(size_bytes))


Queue = Annotated[QueueSpec, PlainValidator(parse_queue), PlainSerializer(str, return_type=str)]

PKT_COUNT_ALLOWED: Final = 'a packet count such as "20pkts" (or 20)'
ECN_THRESHOLD_ALLOWED: Final = PKT_COUNT_ALLOWED


def parse_pkt_count(value: object) -> int:
    """`"20pkts"` (or `pkt`) or a bare integer 20 → 20 packets."""
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, str):
        text = value.strip().lower()
        number = text.removesuffix("pkts").removesuffix("pkt").strip()
        if number == text or not number.isdigit():
            raise Problem("not a packet count", PKT_COUNT_ALLOWED)
        count = int(number)
    else:
        raise Problem("not a packet count", PKT_COUNT_ALLOWED)
    if count < 1:
        raise Problem("must be at least 1 packet", PKT_COUNT_ALLOWED)
    if count > MAX_QUEUE_PKTS:
        raise Problem("is absurdly large", f"at most {MAX_QUEUE_PKTS}pkts")
    return count


def _pkts_text(count: int) -> str:
    return f"{count}pkts"


parse_ecn_threshold = parse_pkt_count  # the ECN step threshold is a packet count

PktCount = Annotated[
    int, PlainValidator(parse_pkt_count), PlainSerializer(_pkts_text, return_type=str)
]
EcnThreshold = PktCount


def _cca_param(value: object) -> bool | int | float | str:
    # Strings must carry a time or rate unit; normalize.py turns them into `<name>_ns` /
    # `<name>_bps` integers. Booleans become 1/0 there (the core's on/off parameters).
    if isinstance(value, str):
        for parse in (parse_duration_ns, parse_rate_bps):
            try:
                parse(value)
            except Problem:
                continue
            return value
        raise Problem("a text parameter needs a time or rate unit", 'e.g. "25ms" or "10Mbps"')
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise Problem("must be a finite number, a boolean or a string with a time/rate unit")


CcaParam = Annotated[bool | int | float | str, PlainValidator(_cca_param)]


class _Model(BaseModel):
    # strict: TOML already has exact types, so "1448" (string) for an integer is a mistake to
    # report, not to coerce. frozen: a validated scenario is a value, never mutated in place.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


Fraction01 = Annotated[float, _check(lambda v: 0.0 < v <= 1.0, "must be in (0, 1]")]
UnitInterval = Annotated[float, _check(lambda v: 0.0 <= v <= 1.0, "must be in [0, 1]")]
PositiveDuration = Annotated[DurationNs, _check(lambda v: v > 0, "must be greater than 0")]

AqmKind = Literal["droptail", "red", "codel"]
_RED: Final = LIMITS.red_defaults
_CODEL: Final = LIMITS.codel_defaults


class RedSpec(_Model):
    """RED (Floyd & Jacobson 1993, Linux `sch_red`): drop or ECN-mark with a probability that
    grows from 0 at `min_th` to `max_p` at `max_th` of the average queue (EWMA weight `w_q`);
    `gentle` (Floyd 2000) ramps on to 1 at 2 x `max_th` instead of dropping everything."""

    # defaults: the core's `RedConfig::default()` (whole packets in the file)
    min_th_pkts: PktCount = Field(int(_RED["min_th_pkts"]), alias="min_th")
    max_th_pkts: PktCount = Field(int(_RED["max_th_pkts"]), alias="max_th")
    max_p: Fraction01 = _RED["max_p"]
    w_q: Fraction01 = _RED["w_q"]
    gentle: bool = _RED["gentle"]
    # mark ECN-capable packets instead of dropping them (RFC 3168 §7)
    ecn: bool = _RED["ecn"]


class CodelSpec(_Model):
    """CoDel (RFC 8289): drop or mark when packets have waited more than `target` for at
    least `interval`."""

    # defaults: the core's `CodelConfig::default()`
    target_ns: PositiveDuration = Field(_CODEL["target_ns"], alias="target")
    interval_ns: PositiveDuration = Field(_CODEL["interval_ns"], alias="interval")
    ecn: bool = _CODEL["ecn"]


_BURST: Final = LIMITS.policer_burst_bytes


class PolicerSpec(_Model):
    """A token-bucket policer in front of the link's queue (a carrier's rate limit): packets
    beyond `rate` plus a bucket of `burst` bytes are dropped on arrival, never queued."""

    rate_bps: RateBps = Field(alias="rate", description='the policed rate such as "1Mbps"')
    burst_bytes: Annotated[
        SizeBytes,
        _check(
            lambda v: _BURST[0] <= v <= _BURST[1],
            "is out of range",
            f"{_BURST[0]} bytes (one full packet) ..= {_BURST[1]} bytes",
        ),
    ] = Field(alias="burst", description='the bucket size such as "30KB"')


class LossSpec(_Model):
    """Gilbert-Elliott bursty loss: a good and a bad state, stepped per packet."""

    kind: Literal["gilbert-elliott"] = Field(alias="model", description='"gilbert-elliott"')
    p_gb: Fraction01 = Field(description="the probability of going from good to bad, (0, 1]")
    p_bg: Fraction01 = Field(description="the probability of going from bad to good, (0, 1]")
    loss_good: UnitInterval = 0.0
    loss_bad: UnitInterval = 1.0

    @property
    def mean_loss(self) -> float:
        """Long-run loss probability: the stationary share of the bad state is
        p_gb / (p_gb + p_bg)."""
        bad = self.p_gb / (self.p_gb + self.p_bg)
        return bad * self.loss_bad + (1.0 - bad) * self.loss_good


OUTAGE_ALLOWED: Final = 'a [start, end] pair of durations, e.g. ["10s", "12s"]'


def parse_outage(value: object) -> tuple[int, int]:
    """`["10s", "12s"]` → `(10_000_000_000, 12_000_000_000)`: the link is down in [start, end)."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value  # already parsed (a Scenario built in Python)
    if not isinstance(value, list) or len(value) != 2:
        raise Problem("an outage is a [start, end] pair", OUTAGE_ALLOWED)
    start_ns, end_ns = parse_duration_ns(value[0]), parse_duration_ns(value[1])
    if end_ns <= start_ns:
        raise Problem("the outage ends before it starts", "start < end")
    if end_ns > LIMITS.max_duration_ns:
        raise Problem("is absurdly late", "at most 7 days")
    return start_ns, end_ns


def _outage_text(outage: tuple[int, int]) -> list[str]:
    return [format_duration_ns(outage[0]), format_duration_ns(outage[1])]


def _check_outage_order(outages: list[tuple[int, int]]) -> list[tuple[int, int]]:
    for index in range(1, len(outages)):
        if outages[index][0] < outages[index - 1][1]:
            raise Problem(
                f"outage {index} starts before outage {index - 1} ends",
                "intervals in time order, not overlapping",
            )
    return outages


Outage = Annotated[
    tuple[int, int],
    PlainValidator(parse_outage),
    PlainSerializer(_outage_text, return_type=list[str]),
]
Outages = Annotated[list[Outage], AfterValidator(_check_outage_order)]


def _base_dir(info: ValidationInfo) -> Path | None:
    context = info.context
    base = context.get("base_dir") if isinstance(context, dict) else None
    return Path(base) if base is not None else None


def _file_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Problem("expected a file name", 'e.g. "traces/sat.csv"')
    return value.strip()


def _rate_trace(value: object, info: ValidationInfo) -> RateTrace:
    if isinstance(value, RateTrace):
        return value
    return read_rate_trace(_file_name(value), _base_dir(info))


def _delivery_trace(value: object, info: ValidationInfo) -> DeliveryTrace:
    if isinstance(value, DeliveryTrace):
        return value
    return read_delivery_trace(_file_name(value), _base_dir(info))


def _trace_path(trace: RateTrace | DeliveryTrace) -> str:
    return trace.path


RateTraceFile = Annotated[
    RateTrace, PlainValidator(_rate_trace), PlainSerializer(_trace_path, return_type=str)
]
DeliveryTraceFile = Annotated[
    DeliveryTrace, PlainValidator(_delivery_trace), PlainSerializer(_trace_path, return_type=str)
]


def effective_aqm(aqm: str | None, red: RedSpec | None, codel: CodelSpec | None) -> str | None:
    """The queue discipline of a direction: `aqm` when written, else the one whose parameter
    table is given, else DropTail; None when that is ambiguous (both tables, no `aqm`)."""
    if aqm is not None:
        return aqm
    if red is not None and codel is not None:
        return None
    if red is not None:
        return "red"
    if codel is not None:
        return "codel"
    return "droptail"


@dataclass(frozen=True)
class Direction:
    """One direction of a link with every default applied (see `LinkSpec`)."""

    forward: bool
    rate_bps: int
    delay_ns: int
    per: float
    ber: float
    queue: QueueSpec
    ecn_threshold_pkts: int | None
    aqm: str  # "droptail" when ambiguous; `checks.py` reports that case
    red: RedSpec
    codel: CodelSpec
    loss: LossSpec | None
    #: [start, end) of each outage, ns from the run's start
    outages_ns: tuple[tuple[int, int], ...]
    rate_trace: RateTrace | None
    delivery_trace: DeliveryTrace | None
    policer: PolicerSpec | None

    def key(self, name: str) -> str:
        """The TOML key of this direction's `name` setting (`per` or `return_per`)."""
        return name if self.forward else f"return_{name}"


def parse_power_dbm(value: Any) -> float:
    """A transmit power: "20mW", "0.1W" or "13dBm" (a bare number is dBm)."""
    if isinstance(value, bool):
        raise Problem("not a power", '"20mW", "100mW", "0.1W" or "13dBm"')
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        match = re.fullmatch(r"(-?[0-9]+(?:\.[0-9]+)?)\s*(dBm|mW|W)", text)
        if match is not None:
            number, unit = float(match.group(1)), match.group(2)
            if unit == "dBm":
                return number
            milliwatts = number * (1000.0 if unit == "W" else 1.0)
            if milliwatts > 0:
                return 10.0 * math.log10(milliwatts)
    raise Problem("not a power", '"20mW", "100mW", "0.1W" or "13dBm"')


def _parse_band(value: Any) -> str:
    bands = {"2.4GHz": "2.4", "2.4": "2.4", "5GHz": "5", "5": "5"}
    if isinstance(value, str) and value.strip() in bands:
        return bands[value.strip()]
    raise Problem("not a band", '"2.4GHz" or "5GHz"')


PowerDbm = Annotated[float, BeforeValidator(parse_power_dbm)]
Band = Annotated[str, BeforeValidator(_parse_band)]
#: A distance: finite, since the core reads scenarios as JSON, which has no infinity.
Metres = Annotated[
    float,
    BeforeValidator(lambda v: float(v) if isinstance(v, int) else v),
    Field(allow_inf_nan=False),
]


class WifiStationSpec(_Model):
    """A flow's station where it differs from the link's `tx_power`/`distance_m`."""

    tx_power_dbm: PowerDbm | None = Field(None, alias="tx_power")
    distance_m: Metres | None = None


class WifiBackgroundSpec(_Model):
    """`count` stations that only take airtime: Poisson frames offering `load` each."""

    count: int = 1
    load_bps: RateBps = Field(alias="load")
    frame_bytes: SizeBytes = Field(1500, alias="frame_size")
    tx_power_dbm: PowerDbm = Field(15.0, alias="tx_power")
    distance_m: Metres = 10.0


class WifiSpec(_Model):
    """`[bottleneck.wifi]` / `[path.segments.wifi]`: the link is a Wi-Fi hop (docs/wifi.md).
    The access point transmits the forward (data) direction, one station per flow the
    return (ACK) direction, on one shared medium. The link's `rate` stays the nominal rate
    a `"bdp"` queue is sized with; its `delay` is the propagation delay. Ranges are checked
    by the core."""

    standard: Literal["b", "a", "g", "n", "ac"]
    band: Band
    width_mhz: int = 20
    streams: int = 1
    short_gi: bool = False
    retry_limit: int = 7
    max_ampdu_mpdus: int | None = Field(None, alias="max_ampdu")
    mcs: int | None = None
    frame_errors: bool = True
    noise_figure_db: float = 7.0
    # a typical home router: 20 dBm (100 mW); laptops: 15 dBm (about 32 mW)
    ap_tx_power_dbm: PowerDbm = Field(20.0, alias="ap_tx_power")
    tx_power_dbm: PowerDbm = Field(15.0, alias="tx_power")
    distance_m: Metres = 5.0
    stations: list[WifiStationSpec] = Field(default_factory=list)
    background: list[WifiBackgroundSpec] = Field(default_factory=list)
    # the AP's queueing: per-station queues in turn (the core's default), one FIFO, or
    # per-station queues in turn each managed by CoDel (mac80211's FQ-CoDel)
    ap_queue: Literal["per-station", "fifo", "fq-codel"] | None = None
    # the flows' sender is a station on the same medium too (one server on Wi-Fi)
    server_on_wifi: bool | None = None

    def normalized(self) -> dict[str, Any]:
        """The core's `WifiConfig` (`ap_queue` and `server_on_wifi` only when written: the
        core holds their defaults, and scenarios that leave them out keep their hashes)."""
        extra: dict[str, Any] = {} if self.ap_queue is None else {"ap_queue": self.ap_queue}
        if self.server_on_wifi is not None:
            extra["server_on_wifi"] = self.server_on_wifi
        return {
            "standard": self.standard,
            "band": self.band,
            "width_mhz": self.width_mhz,
            "streams": self.streams,
            "short_gi": self.short_gi,
            "retry_limit": self.retry_limit,
            "max_ampdu_mpdus": self.max_ampdu_mpdus,
            "mcs": self.mcs,
            "frame_errors": self.frame_errors,
            "noise_figure_db": self.noise_figure_db,
            "ap_tx_power_dbm": self.ap_tx_power_dbm,
            "tx_power_dbm": self.tx_power_dbm,
            "distance_m": self.distance_m,
            "stations": [
                {"tx_power_dbm": s.tx_power_dbm, "distance_m": s.distance_m} for s in self.stations
            ],
            "background": [
                {
                    "count": b.count,
                    "load_bps": b.load_bps,
                    "frame_bytes": b.frame_bytes,
                    "tx_power_dbm": b.tx_power_dbm,
                    "distance_m": b.distance_m,
                }
                for b in self.background
            ],
            **extra,
        }


class LinkSpec(_Model):
    """A link (the dumbbell's bottleneck or a path segment) in both directions. The forward
    direction carries data from the server side to the client side; the return direction
    carries the ACKs. Return defaults: `return_rate`/`return_delay`/`return_queue` and
    `return_outages` follow the forward value (an outage takes the whole link down); the
    others (`return_per`, `return_ber`, `return_loss`, `return_ecn_threshold`, `return_aqm`,
    the traces, `return_policer`) are off unless written, since the ACK direction is a
    different channel."""

    rate_bps: RateBps = Field(alias="rate", description='a rate such as "4Mbps"')
    delay_ns: DelayNs = Field(alias="delay", description='a one-way delay such as "250ms"')
    return_rate_bps: RateBps | None = Field(None, alias="return_rate")
    return_delay_ns: DelayNs | None = Field(None, alias="return_delay")
    per: Probability = 0.0
    return_per: Probability = 0.0
    ber: Probability = 0.0
    return_ber: Probability = 0.0
    queue: Queue = QueueSpec("bdp", Fraction(1))
    return_queue: Queue | None = None
    # step ECN marking: CE-mark ECN-capable packets that arrive to >= K waiting packets
    ecn_threshold_pkts: EcnThreshold | None = Field(None, alias="ecn_threshold")
    # the return direction carries only ACKs, which are not ECN-capable: no default marking
    return_ecn_threshold_pkts: EcnThreshold | None = Field(None, alias="return_ecn_threshold")
    aqm: AqmKind | None = None
    return_aqm: AqmKind | None = None
    red: RedSpec | None = None
    return_red: RedSpec | None = None
    codel: CodelSpec | None = None
    return_codel: CodelSpec | None = None
    loss: LossSpec | None = None
    return_loss: LossSpec | None = None
    outages_ns: Outages = Field(default_factory=list, alias="outages")
    return_outages_ns: Outages | None = Field(None, alias="return_outages")
    rate_trace: RateTraceFile | None = None
    return_rate_trace: RateTraceFile | None = None
    delivery_trace: DeliveryTraceFile | None = None
    return_delivery_trace: DeliveryTraceFile | None = None
    policer: PolicerSpec | None = None
    return_policer: PolicerSpec | None = None
    wifi: WifiSpec | None = None

    def direction(self, forward: bool) -> Direction:
        """The forward (data) or return (ACK) direction with its defaults applied."""
        if forward:
            return Direction(
                forward=True,
                rate_bps=self.rate_bps,
                delay_ns=self.delay_ns,
                per=self.per,
                ber=self.ber,
                queue=self.queue,
                ecn_threshold_pkts=self.ecn_threshold_pkts,
                aqm=effective_aqm(self.aqm, self.red, self.codel) or "droptail",
                red=self.red or _DEFAULT_RED,
                codel=self.codel or _DEFAULT_CODEL,
                loss=self.loss,
                outages_ns=tuple(self.outages_ns),
                rate_trace=self.rate_trace,
                delivery_trace=self.delivery_trace,
                policer=self.policer,
            )
        outages = self.outages_ns if self.return_outages_ns is None else self.return_outages_ns
        return Direction(
            forward=False,
            rate_bps=self.rate_bps if self.return_rate_bps is None else self.return_rate_bps,
            delay_ns=self.delay_ns if self.return_delay_ns is None else self.return_delay_ns,
            per=self.return_per,
            ber=self.return_ber,
            queue=self.queue if self.return_queue is None else self.return_queue,
            ecn_threshold_pkts=self.return_ecn_threshold_pkts,
            aqm=effective_aqm(self.return_aqm, self.return_red, self.return_codel) or "droptail",
            red=self.return_red or _DEFAULT_RED,
            codel=self.return_codel or _DEFAULT_CODEL,
            loss=self.return_loss,
            outages_ns=tuple(outages),
            rate_trace=self.return_rate_trace,
            delivery_trace=self.return_delivery_trace,
            policer=self.return_policer,
        )


_DEFAULT_RED: Final = RedSpec.model_validate({})
_DEFAULT_CODEL: Final = CodelSpec.model_validate({})


class BottleneckSpec(LinkSpec):
    """The dumbbell's shared link (`[bottleneck]`)."""


_SEGMENT_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
SegmentName = Annotated[
    str,
    _check(
        lambda v: _SEGMENT_NAME.fullmatch(v) is not None,
        "not a valid segment name",
        "1 to 64 letters, digits, '-' or '_'",
    ),
]


class _Named(_Model):
    name: SegmentName = Field(description='a segment name such as "satellite"')


class SegmentSpec(LinkSpec, _Named):
    """One `[[path.segments]]` table: a link between two nodes of the path (`name` first)."""


PepMode = Literal["none", "gateway", "distributed"]


class PathSpec(_Model):
    """A chain of links from the server side to the client side, optionally split by PEPs."""

    pep: PepMode = "none"
    segments: list[SegmentSpec] = Field(
        description="[[path.segments]] tables, from the server side to the client side"
    )


class AccessSpec(_Model):
    """The default access link on both ends of every flow (sender side and receiver side).

    `queue` puts a DropTail of that many packets on every access interface, the hosts' own
    included (as ns-2 does on every link); without it, routers keep 1000 packets and hosts
    never drop their own packets (Linux TCP Small Queues)."""

    rate_bps: RateBps = Field(10**9, alias="rate")
    delay_ns: DelayNs = Field(100_000, alias="delay")
    queue_pkts: PktCount | None = Field(None, alias="queue")


class FlowAccessSpec(_Model):
    """A per-flow access link; a missing field is taken from the top-level `[access]`."""

    rate_bps: RateBps | None = Field(None, alias="rate")
    delay_ns: DelayNs | None = Field(None, alias="delay")


Stack = Literal["linux", "ns2"]


def _in(bounds: tuple[int, int], unit: str = "") -> AfterValidator:
    low, high = bounds
    return _check(lambda v: low <= v <= high, "out of range", f"{low} to {high}{unit}")


Mss = Annotated[int, _in(LIMITS.mss_bytes)]
InitialWindow = Annotated[int, _in(LIMITS.initial_window_pkts, " packets")]
Rwnd = Annotated[
    SizeBytes,
    _check(
        lambda v: v <= LIMITS.max_rwnd_bytes,
        "too large",
        f"at most {format_size_bytes(LIMITS.max_rwnd_bytes)}",
    ),
]


class TcpSpec(_Model):
    """Sender/receiver TCP options, as written. Every option is optional: `None` means "not
    given", and `tcp_profile.resolve_tcp` fills it from the `stack` profile (Linux or ns-2)
    and, for the SACK-based options, from `sack`. Keeping "not given" apart from "given as
    the default" is what lets a profile default and an explicit value differ (and survive the
    dump/validate round trip of `--set`)."""

    mss_bytes: Mss | None = Field(None, alias="mss")
    sack: bool | None = None
    timestamps: bool | None = None
    # a random offset per connection added to its timestamps (Linux >= 4.10, tcp_timestamps = 1);
    # false is tcp_timestamps = 2
    random_ts_offset: bool | None = None
    initial_window_pkts: InitialWindow | None = Field(None, alias="initial_window")
    rwnd_bytes: Rwnd | None = Field(None, alias="rwnd")
    # false caps the effective receive window at 65535 bytes (no RFC 7323 window scale option)
    window_scaling: bool | None = None
    delayed_ack: bool | None = None
    # the next four need SACK: when not given they follow `sack`
    dsack: bool | None = None
    fack: bool | None = None
    rack: bool | None = None
    tlp: bool | None = None
    frto: bool | None = None
    prr: bool | None = None
    pacing: bool | None = None
    tso: bool | None = None
    ecn: bool | None = None
    slow_start_after_idle: bool | None = None
    stack: Stack = "linux"


class _PepOwn(_Model):
    # None: the flow's own algorithm (and then its cca_params too)
    cca: str | None = None
    cca_params: dict[str, CcaParam] | None = None
    buffer_bytes: (
        Annotated[
            SizeBytes,
            _check(
                lambda v: 1 <= v <= LIMITS.max_pep_buffer_bytes,
                "out of range",
                f"at most {format_size_bytes(LIMITS.max_pep_buffer_bytes)}",
            ),
        ]
        | None
    ) = Field(None, alias="buffer")


class PepSpec(TcpSpec, _PepOwn):
    """`[flows.pep]`: the TCP a split-TCP PEP speaks on the satellite leg. Besides `cca`,
    `cca_params` and `buffer` (the relay buffer per connection) it takes every `[flows.tcp]`
    key directly; keys left out come from the stack profile (not from the flow's
    `[flows.tcp]`: the PEP is a different TCP stack)."""


CBR_DEFAULT_PACKET_BYTES: Final = 1200
CROSS_DEFAULT_PACKET_BYTES: Final = 1500  # a full Ethernet-MTU IP packet
_CROSS_PKT: Final = LIMITS.cross_packet_bytes
_CROSS_CONNS: Final = LIMITS.cross_connections
# the core's DistConfig tags: the user writes the same names
DistName = Literal["constant", "exponential", "pareto", "lognormal"]


class _DistSpec(_Model):
    """A positive random variable by its law and mean; Pareto needs `shape` (> 1; heavy
    tails below 2), lognormal `sigma` (the standard deviation of its logarithm)."""

    dist: DistName
    shape: Annotated[float, _check(lambda v: 1.0 < v <= 100.0, "out of range", "> 1 ..= 100")] | (
        None
    ) = None
    sigma: Annotated[float, _check(lambda v: 0.0 <= v <= 10.0, "out of range", "0 ..= 10")] | (
        None
    ) = None

    @model_validator(mode="after")
    def _shape_for_the_law(self) -> _DistSpec:
        need = {"pareto": "shape", "lognormal": "sigma"}.get(self.dist)
        for key in ("shape", "sigma"):
            given = getattr(self, key) is not None
            if given and key != need:
                raise Problem(f"{key!r} does not apply to dist = {self.dist!r}")
            if not given and key == need:
                raise Problem(f"dist = {self.dist!r} needs {key!r}")
        return self

    def law_json(self, mean: int) -> dict[str, Any]:
        """The core's `DistConfig` with `mean` in the core's unit (bytes or ns)."""
        out: dict[str, Any] = {"dist": self.dist, "mean": float(mean)}
        if self.shape is not None:
            out["shape"] = self.shape
        if self.sigma is not None:
            out["sigma"] = self.sigma
        return out


class SizeDistSpec(_DistSpec):
    """Flow sizes: `{dist = "pareto", mean = "50KB", shape = 1.5}`."""

    mean_bytes: Annotated[SizeBytes, _check(lambda v: v >= 1, "must be at least 1 byte")] = Field(
        alias="mean"
    )


class PeriodDistSpec(_DistSpec):
    """On or off periods: `{dist = "exponential", mean = "500ms"}`."""

    mean_ns: Annotated[DurationNs, _check(lambda v: v >= 1000, "too short", "at least 1us")] = (
        Field(alias="mean")
    )


class CrossSpec(_Model):
    """One `[[cross]]` table: cross traffic on one link direction, reported apart from the
    flows (see docs/interface.md "Cross traffic"): open-loop bursts (`flows`, `on-off`) or
    TCP downloads that back off on loss (`tcp-flows`)."""

    kind: Literal["flows", "on-off", "tcp-flows"]
    # the path segment it crosses (default: the bottleneck) and which direction
    segment: str | None = None
    direction: Literal["forward", "reverse"] = "forward"
    # kind = "flows": the offered load and the flow sizes
    rate_bps: RateBps | None = Field(None, alias="rate")
    size: SizeDistSpec | None = None
    # kind = "on-off": the on and off periods
    on: PeriodDistSpec | None = None
    off: PeriodDistSpec | None = None
    # kind = "tcp-flows": the connections' algorithm, how many may be open at once, and
    # their base RTT (default: the flows' default base RTT; the core decides it)
    cca: str | None = None
    cca_params: dict[str, CcaParam] | None = None
    max_connections: (
        Annotated[
            int,
            _check(
                lambda v: _CROSS_CONNS[0] <= v <= _CROSS_CONNS[1],
                "out of range",
                f"{_CROSS_CONNS[0]} to {_CROSS_CONNS[1]}",
            ),
        ]
        | None
    ) = None
    rtt_ns: Annotated[DurationNs, _check(lambda v: v > 0, "must be greater than 0")] | None = Field(
        None, alias="rtt"
    )
    # kind = "tcp-flows": the connections' TCP options, as `[flows.tcp]` (None: Linux's)
    tcp: TcpSpec | None = None
    # kind = "flows" or "on-off": the rate each flow / on period sends at
    peak_rate_bps: RateBps | None = Field(None, alias="peak_rate")
    # kind = "flows" or "on-off" (default CROSS_DEFAULT_PACKET_BYTES)
    packet_bytes: (
        Annotated[
            SizeBytes,
            _check(
                lambda v: _CROSS_PKT[0] <= v <= _CROSS_PKT[1],
                "out of range",
                f"{_CROSS_PKT[0]}B to {_CROSS_PKT[1]}B (wire bytes of one packet)",
            ),
        ]
        | None
    ) = Field(None, alias="packet_size")

    @model_validator(mode="after")
    def _keys_for_the_kind(self) -> CrossSpec:
        tcp = ("cca", "cca_params", "max_connections", "rtt", "tcp")
        need, other = {
            "flows": (("rate", "size", "peak_rate"), ("on", "off", *tcp)),
            "on-off": (("on", "off", "peak_rate"), ("rate", "size", *tcp)),
            "tcp-flows": (("rate", "size"), ("on", "off", "peak_rate", "packet_size")),
        }[self.kind]
        values = {
            "rate": self.rate_bps,
            "size": self.size,
            "on": self.on,
            "off": self.off,
            "peak_rate": self.peak_rate_bps,
            "cca": self.cca,
            "cca_params": self.cca_params,
            "max_connections": self.max_connections,
            "rtt": self.rtt_ns,
            "tcp": self.tcp,
            "packet_size": self.packet_bytes,
        }
        for key in need:
            if values[key] is None:
                raise Problem(f'kind = "{self.kind}" needs {key!r}')
        for key in other:
            if values[key] is not None:
                raise Problem(f'{key!r} does not apply to kind = "{self.kind}"')
        return self

    @property
    def offered_bps(self) -> float:
        """The mean load it offers: `rate`, or peak x E[on] / (E[on] + E[off])."""
        if self.rate_bps is not None:
            return float(self.rate_bps)
        assert self.on is not None and self.off is not None  # _keys_for_the_kind
        assert self.peak_rate_bps is not None
        return self.peak_rate_bps * self.on.mean_ns / (self.on.mean_ns + self.off.mean_ns)


class FlowSpec(_Model):
    """One `[[flows]]` table: `count` identical flows."""

    cca: str = "cubic"
    count: Annotated[
        int,
        _check(lambda v: 1 <= v <= LIMITS.max_flows, "out of range", f"1 to {LIMITS.max_flows}"),
    ] = 1
    start_ns: DurationNs = Field(0, alias="start")
    app: Literal["bulk", "file", "cbr"] = "bulk"
    size_bytes: (
        Annotated[
            SizeBytes,
            _check(
                lambda v: 0 < v <= LIMITS.max_file_bytes,
                "out of range",
                f"1B to {format_size_bytes(LIMITS.max_file_bytes)}",
            ),
        ]
        | None
    ) = Field(None, alias="size")
    # app = "cbr": the sending rate and the UDP payload of each datagram
    rate_bps: RateBps | None = Field(None, alias="rate")
    packet_bytes: (
        Annotated[
            SizeBytes,
            _check(
                lambda v: LIMITS.cbr_packet_bytes[0] <= v <= LIMITS.cbr_packet_bytes[1],
                "out of range",
                f"{LIMITS.cbr_packet_bytes[0]}B to {LIMITS.cbr_packet_bytes[1]}B "
                "(one UDP datagram)",
            ),
        ]
        | None
    ) = Field(None, alias="packet_size")
    access: FlowAccessSpec | None = None
    cca_params: dict[str, CcaParam] = Field(default_factory=dict)
    tcp: TcpSpec = TcpSpec.model_validate({})  # frozen, so one shared default is safe
    pep: PepSpec | None = None

    @property
    def is_tcp(self) -> bool:
        return self.app != "cbr"


class Scenario(_Model):
    """A whole scenario file. Build one with `tcplab.load_scenario`."""

    name: Annotated[str, _check(lambda v: 0 < len(v) <= 200, "out of range", "1 to 200 chars")] = (
        "scenario"
    )
    duration_ns: Annotated[DurationNs, _check(lambda v: v > 0, "must be greater than 0")] = Field(
        alias="duration", description='a duration such as "600s"'
    )
    seed: Annotated[
        int, _check(lambda v: 0 <= v <= LIMITS.max_seed, "out of range", "0 to 2**64-1")
    ] = 1
    interval_ns: Annotated[
        DurationNs,
        _check(
            lambda v: v >= LIMITS.min_interval_ns,
            "too short",
            f"at least {format_duration_ns(LIMITS.min_interval_ns)}",
        ),
    ] = Field(LIMITS.default_interval_ns, alias="interval")
    # exactly one of the two (checked in checks.py, which can name the key)
    bottleneck: BottleneckSpec | None = None
    path: PathSpec | None = None
    access: AccessSpec = AccessSpec.model_validate({})
    flows: list[FlowSpec] = Field(description="at least one [[flows]] table")
    cross: list[CrossSpec] = Field(default_factory=list)

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        """(TOML path, link name, link) of every link between the end hosts' access links:
        the dumbbell's `bottleneck`, or the path's segments in order (server side first)."""
        if self.path is not None:
            return [
                (f"path.segments[{index}]", segment.name, segment)
                for index, segment in enumerate(self.path.segments)
            ]
        if self.bottleneck is not None:
            return [("bottleneck", "bottleneck", self.bottleneck)]
        return []
