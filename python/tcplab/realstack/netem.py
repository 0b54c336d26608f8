"""The kernel's link emulation (`--link netem`): each emulated wire is a veth pair whose
egress qdiscs model the link, instead of two TUN devices and `tcplab-emu`. Pure: the plan
in, `tc`/`ethtool` argument lists out (`topology` runs them).

One direction of a wire, on the egress device of its sending end (`forward` leaves `a`,
`reverse` leaves `b`):

    root 1: netem delay <d>us limit <delay line> loss …    propagation delay, loss
      └ 1:1 → 2: tbf rate <r>bit burst 1600 limit <bytes>   the transmitter's rate
          └ 2:1 → 3: pfifo limit <pkts> | bfifo | codel     the queue (DropTail/CoDel)

Why this shape rather than netem's own `rate`: netem serializes inside its delay line, so
its `limit` (packets) would bound the queue and every packet still propagating together —
a 334-packet DropTail on a 250 ms, 4 Mbit/s link would hold about 250 packets fewer than
configured — and it cannot count bytes. With tbf as netem's child the delay line only
delays (its limit is set far above any window), and the queue is tbf's child, sized
exactly as the scenario says: `pfifo` counts packets (ACKs included, as the simulator
does), `bfifo` bytes. Delaying before queueing instead of after is the same link: a fixed
delay only shifts when packets reach the queue.

What differs from the simulator's link (README "Real-stack mode"):
- netem draws loss when a packet arrives, before the queue; the simulator when it enters
  service, so here a lost packet takes no link time (at most `per` of the capacity).
- tbf counts the 14-byte Ethernet header; its rate is scaled by 1514/1500 so MTU-sized
  packets (the data) are serialized at the scenario's rate; 52-byte ACKs then take about
  a quarter longer than in the simulator (irrelevant unless the ACK direction is full).
- tbf's bucket holds one frame, so a packet reaching an idle link leaves at once instead
  of after its serialization time (one packet time, e.g. 3 ms at 4 Mbit/s).
- netem's random numbers are the kernel's, not derived from the scenario's seed.

Refused (one line naming the feature, suggesting `--link emu`): bit error rates (the loss
depends on each packet's size), ECN threshold marking, RED (Linux RED has no gentle mode,
takes byte thresholds and a power-of-two EWMA weight), CoDel with a byte limit, outages,
rate traces and delivery traces (tcplab-emu changes the link on the scenario's clock).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..limits import LIMITS
from .commands import in_netns
from .plan import Plan

LinkBackend = Literal["emu", "netem"]
LinkChoice = Literal["auto", "emu", "netem"]
LINK_CHOICES: Final = ("auto", "emu", "netem")

MTU_BYTES: Final = LIMITS.mtu_bytes
ETH_HEADER_BYTES: Final = 14
#: One full frame plus headroom: tc stores the bucket as a time in 64 ns ticks, and the
#: rounding must not shrink it below a 1514-byte frame (tbf drops larger packets), which
#: happens at 8 bytes per tick at 1 Gbit/s.
TBF_BURST_BYTES: Final = 1600
#: The delay line never drops: it holds every packet propagating on the link, which the
#: flows' windows bound, not the queue.
NETEM_DELAY_LINE_PKTS: Final = 1_000_000
#: Offloads off on every veth, so TCP sends MTU-sized segments (TSO/GSO) and no router
#: merges them again (GRO): the queues then count real packets, as the simulator's do.
OFFLOADS_OFF: Final = ("tso", "off", "gso", "off", "gro", "off")

#: DirConfig keys that netem cannot express when they are set (non-null, non-empty).
_UNSUPPORTED: Final = {
    "ecn_threshold_pkts": "ECN threshold marking",
    "outages": "outages",
    "rate_trace": "rate traces",
    "delivery_trace": "delivery traces",
    "policer": "a token-bucket policer",
}


@dataclass(frozen=True)
class Shaped:
    """One direction of a wire: its result name, the egress device and the link model."""

    name: str
    netns: str
    dev: str
    config: Mapping[str, Any]


def shaped(plan: Plan) -> list[Shaped]:
    """Every modelled direction of the plan's wires, in wire order."""
    out = []
    for wire in plan.wires:
        if wire.emulated is None:
            continue
        out.append(
            Shaped(f"{wire.name}.forward", wire.a.netns, wire.a.dev, wire.emulated["forward"])
        )
        out.append(
            Shaped(f"{wire.name}.reverse", wire.b.netns, wire.b.dev, wire.emulated["reverse"])
        )
    return out


def _refusal(direction: Shaped) -> str | None:
    config = direction.config
    for key, feature in _UNSUPPORTED.items():
        if config.get(key):
            return f"{direction.name}: {feature}"
    if float(config.get("ber", 0.0)) > 0:
        return f"{direction.name}: a bit error rate (the loss depends on each packet's size)"
    queue = config["queue"]
    if queue["kind"] == "red":
        return f"{direction.name}: RED (Linux RED differs from the simulator's)"
    if queue["kind"] == "codel" and queue.get("limit_pkts") is None:
        return f"{direction.name}: CoDel with a byte limit (Linux CoDel counts packets)"
    return None


def refusal(plan: Plan) -> str | None:
    """The first feature of the plan's links that netem + tbf cannot express, or None."""
    for direction in shaped(plan):
        why = _refusal(direction)
        if why is not None:
            return f"{why} cannot be expressed with tc netem; use --link emu"
    return None


def queue_kind(config: Mapping[str, Any]) -> str:
    """The qdisc that is the direction's queue."""
    queue = config["queue"]
    if queue["kind"] == "codel":
        return "codel"
    return "pfifo" if queue.get("limit_pkts") is not None else "bfifo"


def qdisc_kinds(plan: Plan) -> tuple[str, ...]:
    """The qdiscs the plan needs from the kernel (what the probe must find)."""
    leaves = sorted({queue_kind(d.config) for d in shaped(plan)})
    return ("netem", "tbf", *leaves)


def _percent(probability: float) -> str:
    return f"{probability * 100:.10g}%"


def _us(ns: int) -> str:
    """tc's time unit suffix `us`: whole microseconds (netem's own resolution is finer,
    but tc parses no `ns`)."""
    return f"{round(ns / 1000)}us"


def _loss(config: Mapping[str, Any]) -> list[str]:
    model = config.get("loss")
    if isinstance(model, Mapping) and model.get("kind") == "gilbert_elliott":
        # `loss gemodel p r 1-h 1-k`: good→bad, bad→good, loss in the bad state, loss in the
        # good state. netem draws a packet's loss from the state before it steps the chain,
        # the simulator after; it is the same chain (loss rate and burst lengths).
        return [
            "loss",
            "gemodel",
            _percent(float(model["p_gb"])),
            _percent(float(model["p_bg"])),
            _percent(float(model["loss_bad"])),
            _percent(float(model["loss_good"])),
        ]
    per = float(config.get("per", 0.0))
    return ["loss", "random", _percent(per)] if per > 0 else []


def tbf_rate_bps(rate_bps: int) -> int:
    """tbf's rate, scaled so an MTU-sized IP packet plus its Ethernet header takes the
    time the scenario's rate gives the IP packet alone."""
    return round(rate_bps * (MTU_BYTES + ETH_HEADER_BYTES) / MTU_BYTES)


def _queue_bytes(queue: Mapping[str, Any]) -> int:
    if queue.get("limit_bytes") is not None:
        return int(queue["limit_bytes"])
    return int(queue["limit_pkts"]) * MTU_BYTES


def _leaf(config: Mapping[str, Any]) -> list[str]:
    queue = config["queue"]
    kind = queue_kind(config)
    if kind == "pfifo":
        return ["pfifo", "limit", str(int(queue["limit_pkts"]))]
    if kind == "bfifo":
        return ["bfifo", "limit", str(int(queue["limit_bytes"]))]
    codel = queue.get("codel") or {}
    return [
        "codel",
        "limit",
        str(int(queue["limit_pkts"])),
        "target",
        _us(int(codel.get("target_ns", 5_000_000))),
        "interval",
        _us(int(codel.get("interval_ns", 100_000_000))),
        "ecn" if codel.get("ecn", True) else "noecn",
    ]


def direction_commands(direction: Shaped) -> list[list[str]]:
    """The three qdiscs of one direction (module doc)."""
    config = direction.config
    tc = ["tc", "-n", direction.netns, "qdisc", "add", "dev", direction.dev]
    return [
        [
            *tc,
            "root",
            "handle",
            "1:",
            "netem",
            "delay",
            _us(int(config["delay_ns"])),
            "limit",
            str(NETEM_DELAY_LINE_PKTS),
            *_loss(config),
        ],
        [
            *tc,
            "parent",
            "1:1",
            "handle",
            "2:",
            "tbf",
            "rate",
            f"{tbf_rate_bps(int(config['rate_bps']))}bit",
            "burst",
            str(TBF_BURST_BYTES),
            # Sizes tbf's default bfifo, which the next command replaces.
            "limit",
            str(_queue_bytes(config["queue"])),
        ],
        [*tc, "parent", "2:1", "handle", "3:", *_leaf(config)],
    ]


def offload_commands(plan: Plan) -> list[list[str]]:
    """`ethtool -K` on both ends of every wire (all are veth pairs with netem)."""
    ends = [end for wire in plan.wires for end in (wire.a, wire.b)]
    return [in_netns(end.netns, ["ethtool", "-K", end.dev, *OFFLOADS_OFF]) for end in ends]


def link_commands(plan: Plan) -> list[list[str]]:
    """Everything that turns the plan's veth pairs into its links, in order."""
    return [
        *offload_commands(plan),
        *(argv for direction in shaped(plan) for argv in direction_commands(direction)),
    ]


def stats_command(direction: Shaped) -> list[str]:
    """The direction's qdisc counters as JSON."""
    return ["tc", "-n", direction.netns, "-s", "-j", "qdisc", "show", "dev", direction.dev]


@dataclass(frozen=True)
class Counters:
    """A direction's counters at one instant: sent by the root (netem), dropped by the
    root (its losses plus the queue's drops, which it counts too) and by the queue."""

    packets: int = 0
    bytes: int = 0
    root_drops: int = 0
    queue_drops: int = 0

    @staticmethod
    def parse(qdiscs: Sequence[Mapping[str, Any]]) -> Counters:
        by_handle = {q.get("handle"): q for q in qdiscs}
        root, leaf = by_handle.get("1:", {}), by_handle.get("3:", {})
        return Counters(
            packets=int(root.get("packets", 0)),
            bytes=int(root.get("bytes", 0)),
            root_drops=int(root.get("drops", 0)),
            queue_drops=int(leaf.get("drops", 0)),
        )

    def minus(self, before: Counters) -> Counters:
        return Counters(
            self.packets - before.packets,
            self.bytes - before.bytes,
            self.root_drops - before.root_drops,
            self.queue_drops - before.queue_drops,
        )


def link_report(direction: Shaped, counters: Counters, measure_ns: int) -> dict[str, Any]:
    """The emulator report's entry (`convert.links_json`) for one direction. The queue's
    occupancy is not sampled: its mean and maximum read 0 (a note says so)."""
    rate_bps = int(direction.config["rate_bps"])
    ip_bytes = counters.bytes - ETH_HEADER_BYTES * counters.packets
    return {
        "name": direction.name,
        "rate_bps": rate_bps,
        "packets_tx": counters.packets,
        "bytes_tx": ip_bytes,
        "utilization": 8 * ip_bytes * 1e9 / (rate_bps * measure_ns) if measure_ns else 0.0,
        # CoDel's drops are its own decisions (the simulator's `aqm_drops`); a FIFO's are
        # tail drops.
        **(
            {"queue_drops": 0, "aqm_drops": counters.queue_drops}
            if queue_kind(direction.config) == "codel"
            else {"queue_drops": counters.queue_drops}
        ),
        "error_drops": max(counters.root_drops - counters.queue_drops, 0),
        "ecn_marks": 0,
        "queue_mean_pkts": 0.0,
        "queue_max_pkts": 0,
        "queue_mean_bytes": 0.0,
        "queue_max_bytes": 0,
    }
