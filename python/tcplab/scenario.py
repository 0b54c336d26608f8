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
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
)

from .errors import Problem
from .units import (
    format_duration_ns,
    format_rate_bps,
    parse_duration_ns,
    parse_rate_bps,
    parse_size_bytes,
)

MAX_RATE_BPS: Final = 10**13  # 10 Tbit/s: beyond any link worth simulating packet by packet
MAX_DELAY_NS: Final = 60 * 10**9  # one-way; even a Mars relay is not a TCP path
MAX_DURATION_NS: Final = 7 * 86_400 * 10**9
MAX_SIZE_BYTES: Final = 10**12
MAX_RWND_BYTES: Final = 2**30  # RFC 7323 §2.3: window scale ≤ 14 → about 1 GiB
MAX_QUEUE_PKTS: Final = 10**7
MAX_QUEUE_BDP: Final = 1000
MIN_QUEUE_BYTES: Final = 1600  # the core's floor: a byte limit must hold one full packet
MIN_INTERVAL_NS: Final = 10**6  # the core's floor for the series interval (1 ms)
MAX_SEED: Final = 2**64 - 1  # the core's master seed is a u64


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
    _check(lambda v: v <= MAX_DURATION_NS, "is absurdly long", "at most 7 days"),
]
RateBps = Annotated[
    int,
    BeforeValidator(parse_rate_bps),
    PlainSerializer(_bps_text, return_type=str),
    _check(lambda v: v > 0, "must be greater than 0"),
    _check(lambda v: v <= MAX_RATE_BPS, "is absurdly high", "at most 10Tbps"),
]
SizeBytes = Annotated[int, BeforeValidator(parse_size_bytes)]
DelayNs = Annotated[DurationNs, _check(lambda v: v <= MAX_DELAY_NS, "too long", "at most 60s")]
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
                amount = Fraction(text.removesuffix(suffix).strip())
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
    if size_bytes < MIN_QUEUE_BYTES:
        raise Problem("too small to hold a full packet", f"at least {MIN_QUEUE_BYTES}B")
    if size_bytes > MAX_QUEUE_PKTS * 1500:
        raise Problem("is absurdly large", f"at most {MAX_QUEUE_PKTS * 1500 // 10**9}GB")
    return QueueSpec("bytes", Fraction(size_bytes))


Queue = Annotated[QueueSpec, PlainValidator(parse_queue), PlainSerializer(str, return_type=str)]

ECN_THRESHOLD_ALLOWED: Final = 'a packet count such as "20pkts" (or 20)'


def parse_ecn_threshold(value: object) -> int:
    """`"20pkts"` (or `pkt`) or a bare integer 20 → 20 packets."""
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif isinstance(value, str):
        text = value.strip().lower()
        number = text.removesuffix("pkts").removesuffix("pkt").strip()
        if number == text or not number.isdigit():
            raise Problem("not a packet count", ECN_THRESHOLD_ALLOWED)
        count = int(number)
    else:
        raise Problem("not a packet count", ECN_THRESHOLD_ALLOWED)
    if count < 1:
        raise Problem("must be at least 1 packet", ECN_THRESHOLD_ALLOWED)
    if count > MAX_QUEUE_PKTS:
        raise Problem("is absurdly large", f"at most {MAX_QUEUE_PKTS}pkts")
    return count


def _pkts_text(count: int) -> str:
    return f"{count}pkts"


EcnThreshold = Annotated[
    int, PlainValidator(parse_ecn_threshold), PlainSerializer(_pkts_text, return_type=str)
]


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


class BottleneckSpec(_Model):
    """The shared link; `return_*` is the ACK direction and defaults to the forward values."""

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


class AccessSpec(_Model):
    """The default access link on both ends of every flow (sender side and receiver side)."""

    rate_bps: RateBps = Field(10**9, alias="rate")
    delay_ns: DelayNs = Field(100_000, alias="delay")


class FlowAccessSpec(_Model):
    """A per-flow access link; a missing field is taken from the top-level `[access]`."""

    rate_bps: RateBps | None = Field(None, alias="rate")
    delay_ns: DelayNs | None = Field(None, alias="delay")


Stack = Literal["linux", "ns2"]

Mss = Annotated[int, _check(lambda v: 64 <= v <= 65495, "out of range", "64 to 65495")]
InitialWindow = Annotated[
    int, _check(lambda v: 1 <= v <= 1000, "out of range", "1 to 1000 packets")
]
Rwnd = Annotated[SizeBytes, _check(lambda v: v <= MAX_RWND_BYTES, "too large", "at most 1GiB")]


class TcpSpec(_Model):
    """Sender/receiver TCP options, as written. Every option is optional: `None` means "not
    given", and `tcp_profile.resolve_tcp` fills it from the `stack` profile (Linux or ns-2)
    and, for the SACK-based options, from `sack`. Keeping "not given" apart from "given as
    the default" is what lets a profile default and an explicit value differ (and survive the
    dump/validate round trip of `--set`)."""

    mss_bytes: Mss | None = Field(None, alias="mss")
    sack: bool | None = None
    timestamps: bool | None = None
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
    ecn: bool | None = None
    slow_start_after_idle: bool | None = None
    stack: Stack = "linux"


class FlowSpec(_Model):
    """One `[[flows]]` table: `count` identical flows."""

    cca: str = "cubic"
    count: Annotated[int, _check(lambda v: 1 <= v <= 1000, "out of range", "1 to 1000")] = 1
    start_ns: DurationNs = Field(0, alias="start")
    app: Literal["bulk", "file"] = "bulk"
    size_bytes: (
        Annotated[
            SizeBytes, _check(lambda v: 0 < v <= MAX_SIZE_BYTES, "out of range", "1B to 1000GB")
        ]
        | None
    ) = Field(None, alias="size")
    access: FlowAccessSpec | None = None
    cca_params: dict[str, CcaParam] = Field(default_factory=dict)
    tcp: TcpSpec = TcpSpec.model_validate({})  # frozen, so one shared default is safe


class Scenario(_Model):
    """A whole scenario file. Build one with `tcplab.load_scenario`."""

    name: Annotated[str, _check(lambda v: 0 < len(v) <= 200, "out of range", "1 to 200 chars")] = (
        "scenario"
    )
    duration_ns: Annotated[DurationNs, _check(lambda v: v > 0, "must be greater than 0")] = Field(
        alias="duration", description='a duration such as "600s"'
    )
    seed: Annotated[int, _check(lambda v: 0 <= v <= MAX_SEED, "out of range", "0 to 2**64-1")] = 1
    interval_ns: Annotated[
        DurationNs, _check(lambda v: v >= MIN_INTERVAL_NS, "too short", "at least 1ms")
    ] = Field(10**9, alias="interval")
    bottleneck: BottleneckSpec = Field(description="a [bottleneck] table")
    access: AccessSpec = AccessSpec.model_validate({})
    flows: list[FlowSpec] = Field(description="at least one [[flows]] table")
