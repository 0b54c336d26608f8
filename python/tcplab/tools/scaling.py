"""The scaling table of `make bench`: what a delivered packet costs as the number of flows,
the link rate and the run length grow.

Each point runs alone in a fresh interpreter (never two at once: they would share the
cores and the caches), so its peak RSS is its own. The child times the core call with the
process's CPU clock (`time.process_time`), which a loaded machine disturbs far less than
wall time, and reports the core's event count and delivered bytes from the result JSON;
a delivered packet is a full segment of the flows' MSS. The peak RSS is the run's own (the
child resets the kernel's high-water mark just before it) and is reported with the RSS the
child had then (the interpreter and the extension), so the difference is what the
simulation held at its peak, its result JSON included. The series go where `tcplab run
--series` sends them: streamed by the core to a file in chunks (a temporary one here), so
the duration axis shows what a run's memory does with its length. Linux only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ..limits import LIMITS
from ..scenario.load import load_scenario
from ..scenario.normalize import normalize
from .studybench import Target

#: One flow table holds at most this many flows in the table below (any count works; the
#: split only keeps each table readable).
_TABLE_FLOWS: Final = 1000
MSS_BYTES: Final[int] = LIMITS.tcp_defaults["mss_bytes"]

#: The dumbbell of the flow and rate axes: CUBIC bulk flows over a 20 ms bottleneck.
FLOW_COUNTS: Final = (1, 10, 100, 1_000, 10_000)
FLOWS_RATE: Final = "1Gbps"
RATES: Final = ("4Mbps", "100Mbps", "1Gbps", "10Gbps")
#: Flows on the rate axis: ten, so that even 10 Gbit/s is filled with Linux's default
#: receive buffers (6 MiB each against a 50 MB bandwidth-delay product).
RATE_FLOWS: Final = 10
#: The scaling goal: a delivered packet costs at most this many times as much CPU at 1,000
#: and at 10,000 flows as for one flow, and at 10 Gbit/s as at 100 Mbit/s.
MAX_COST_RATIO: Final = 1.5
#: The points the goal compares: (axis, flows, bottleneck) of the point, of its reference.
TARGETS: Final = (
    (("flows", 1_000, "1000 Mbit/s"), ("flows", 1, "1000 Mbit/s")),
    (("flows", 10_000, "1000 Mbit/s"), ("flows", 1, "1000 Mbit/s")),
    (("rate", RATE_FLOWS, "10000 Mbit/s"), ("rate", RATE_FLOWS, "100 Mbit/s")),
)
#: The held-load axis (`python -m tcplab.tools.bench --held-load`; not in `make bench`: its
#: 10,000-flow point takes about 40 CPU-s and 5 GiB): n flows over an n Gbit/s bottleneck with
#: n Gbit/s access links, so each flow keeps the share, window and losses of one flow on
#: 1 Gbit/s, and what grows with n is the flows alone.
HELD_FLOW_COUNTS: Final = (10, 100, 1_000, 10_000)
HELD_DURATION: Final = "600ms"
HELD_INTERVAL: Final = "100ms"
#: The run-length axis: one GEO flow (4 Mbit/s, 250 ms one way) with a 10 ms series.
DURATIONS: Final = ("60s", "600s", "3600s")
DURATION_INTERVAL: Final = "10ms"

#: What the child runs: the normalized scenario comes on stdin, one JSON line goes out.
_CHILD: Final = """
import json, sys, time
from tcplab import _core

def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])

text = sys.stdin.read()
series_path = sys.argv[1]
# Reset the peak RSS to the current one (Linux >= 4.0), so the peak read after the run is
# the run's own, not the interpreter's start-up or the reading of the scenario.
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
rss_before_kib = status_kib("VmRSS")
started = time.process_time()
out = _core.run_json_series(text, series_path)
cpu_s = time.process_time() - started
peak_kib = status_kib("VmHWM")
result = json.loads(out)
print(json.dumps({
    "cpu_s": cpu_s,
    "events": result["events"],
    "delivered_bytes": sum(f["bytes_delivered"] for f in result["flows"]),
    "sent_pkts": sum(f["segments_sent"] + f["acks_sent"] for f in result["flows"]),
    "rss_before_kib": rss_before_kib,
    "peak_rss_kib": peak_kib,
}))
"""


def _per(amount: float, per: float) -> float:
    """`amount` per unit of `per` (not a number when there is none of it)."""
    return amount / per if per > 0 else float("nan")


@dataclass(frozen=True)
class ScalePoint:
    axis: str
    flows: int
    rate: str
    duration: str
    interval: str
    cpu_s: float
    events: int
    delivered_pkts: float
    peak_rss_mib: float
    base_rss_mib: float
    #: Packets the endpoints sent: data segments (retransmissions included) and pure ACKs.
    sent_pkts: int = 0

    @property
    def delivered_pkts_per_cpu_s(self) -> float:
        return _per(self.delivered_pkts, self.cpu_s)

    @property
    def events_per_cpu_s(self) -> float:
        return _per(self.events, self.cpu_s)

    @property
    def events_per_pkt(self) -> float:
        return _per(self.events, self.delivered_pkts)

    @property
    def sent_per_pkt(self) -> float:
        """Packets the endpoints sent per delivered packet: the protocol's own work."""
        return _per(self.sent_pkts, self.delivered_pkts)

    @property
    def cpu_ns_per_event(self) -> float:
        return _per(self.cpu_s * 1e9, self.events)

    @property
    def run_rss_mib(self) -> float:
        """Peak RSS above what the interpreter held before the run."""
        return self.peak_rss_mib - self.base_rss_mib

    def as_dict(self) -> dict[str, Any]:
        return {
            "axis": self.axis,
            "flows": self.flows,
            "rate": self.rate,
            "duration": self.duration,
            "interval": self.interval,
            "cpu_s": self.cpu_s,
            "events": self.events,
            "delivered_pkts": self.delivered_pkts,
            "delivered_pkts_per_cpu_s": self.delivered_pkts_per_cpu_s,
            "events_per_cpu_s": self.events_per_cpu_s,
            "events_per_pkt": self.events_per_pkt,
            "sent_pkts": self.sent_pkts,
            "sent_per_pkt": self.sent_per_pkt,
            "cpu_ns_per_event": self.cpu_ns_per_event,
            "peak_rss_mib": self.peak_rss_mib,
            "run_rss_mib": self.run_rss_mib,
        }


def dumbbell(
    flows: int,
    rate: str,
    duration: str,
    interval: str | None = None,
    access_rate: str | None = None,
) -> dict[str, Any]:
    """The normalized scenario of one point: `flows` CUBIC bulk flows over a `rate`, 20 ms
    bottleneck (queue: the default 2 BDP), with access links of `access_rate` (default: the
    scenario default)."""
    tables = [
        {"cca": "cubic", "count": min(_TABLE_FLOWS, flows - start)}
        for start in range(0, flows, _TABLE_FLOWS)
    ]
    raw: dict[str, Any] = {
        "name": f"scale-{flows}x-{rate}",
        "duration": duration,
        "seed": 1,
        "bottleneck": {"rate": rate, "delay": "20ms"},
        "flows": tables,
    }
    if interval is not None:
        raw["interval"] = interval
    if access_rate is not None:
        raw["access"] = {"rate": access_rate}
    return normalize(load_scenario(raw, []))


def held_load(flows: int, duration: str = HELD_DURATION) -> dict[str, Any]:
    """A point of the held-load axis: `flows` flows over `flows` Gbit/s (see
    `HELD_FLOW_COUNTS`)."""
    rate = f"{flows}Gbps"
    return dumbbell(flows, rate, duration, HELD_INTERVAL, access_rate=rate)


def geo(duration: str, interval: str) -> dict[str, Any]:
    """The GEO path of the studies (tcplab/data/geo-sat.toml) for `duration`."""
    from .demo import builtin_scenario

    raw = builtin_scenario("geo-sat.toml")
    return normalize(load_scenario(raw, [("duration", duration), ("interval", interval)]))


def measure(axis: str, scenario: dict[str, Any]) -> ScalePoint:
    """Run `scenario` in a fresh interpreter and read its costs."""
    with tempfile.TemporaryDirectory(prefix="tcplab-scaling-") as tmp:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(Path(tmp) / "run.series")],
            input=json.dumps(scenario),
            capture_output=True,
            text=True,
            check=True,
        )
    m = json.loads(done.stdout)
    rate_bps = scenario["bottleneck"]["forward"]["rate_bps"]
    return ScalePoint(
        axis=axis,
        flows=len(scenario["flows"]),
        rate=f"{rate_bps / 1e6:g} Mbit/s",
        duration=f"{scenario['duration_ns'] / 1e9:g} s",
        interval=f"{scenario['interval_ns'] / 1e6:g} ms",
        cpu_s=m["cpu_s"],
        events=m["events"],
        delivered_pkts=m["delivered_bytes"] / MSS_BYTES,
        peak_rss_mib=m["peak_rss_kib"] / 1024,
        base_rss_mib=m["rss_before_kib"] / 1024,
        sent_pkts=m["sent_pkts"],
    )


def run_scaling(duration: str | None = None, held: bool = False) -> list[ScalePoint]:
    """The three axes, and with `held` the held-load axis; `duration` shortens the flow and
    rate axes (default 60 s)."""
    length = duration or "60s"
    points = [measure("flows", dumbbell(n, FLOWS_RATE, length)) for n in FLOW_COUNTS]
    points += [measure("rate", dumbbell(RATE_FLOWS, rate, length)) for rate in RATES]
    points += [measure("duration", geo(d, DURATION_INTERVAL)) for d in DURATIONS]
    if held:
        points += [measure("held load", held_load(n)) for n in HELD_FLOW_COUNTS]
    return points


def _target_pairs(points: Sequence[ScalePoint]) -> list[tuple[str, ScalePoint, ScalePoint]]:
    """(what is compared, point, reference) for each pair of `TARGETS` the table has."""
    by_key = {(p.axis, p.flows, p.rate): p for p in points}
    pairs = []
    for key, ref_key in TARGETS:
        point, ref = by_key.get(key), by_key.get(ref_key)
        if point is not None and ref is not None:
            what = (
                f"{point.flows:,} flows against one"
                if key[0] == "flows"
                else f"{point.rate} against {ref.rate}"
            )
            pairs.append((what, point, ref))
    return pairs


def _cost_ratio(point: ScalePoint, ref: ScalePoint) -> float:
    """CPU per delivered packet at `point` over that at `ref`."""
    return ref.delivered_pkts_per_cpu_s / point.delivered_pkts_per_cpu_s


@dataclass(frozen=True)
class CostSplit:
    """Why a point costs more per delivered packet than its reference: the ratio of CPU per
    delivered packet is exactly the product of the ratio of events per delivered packet
    and the ratio of CPU per event. The packets the endpoints sent per delivered packet
    (data, retransmissions and ACKs) are the protocol's share of the first factor."""

    what: str
    cost_ratio: float
    events_ratio: float
    per_event_ratio: float
    sent_ratio: float

    def describe(self) -> str:
        return (
            f"{self.what}: {self.cost_ratio:.2f}x the CPU per delivered packet"
            f" = {self.events_ratio:.2f}x the events per delivered packet"
            f" x {self.per_event_ratio:.2f}x the CPU per event;"
            f" the endpoints sent {self.sent_ratio:.2f}x the packets per delivered packet"
        )


def cost_splits(points: Sequence[ScalePoint]) -> list[CostSplit]:
    """The split of each scaling target's ratio (`CostSplit`)."""
    out = []
    for what, point, ref in _target_pairs(points):
        out.append(
            CostSplit(
                what,
                cost_ratio=_cost_ratio(point, ref),
                events_ratio=point.events_per_pkt / ref.events_per_pkt,
                per_event_ratio=point.cpu_ns_per_event / ref.cpu_ns_per_event,
                sent_ratio=point.sent_per_pkt / ref.sent_per_pkt,
            )
        )
    return out


def scaling_targets(points: Sequence[ScalePoint]) -> list[Target]:
    """The scaling goal at each point of `TARGETS` the table has: its CPU per delivered
    packet over its reference's (points of a shortened table are compared too)."""
    out = []
    for what, point, ref in _target_pairs(points):
        out.append(
            Target(
                f"scaling target, {what}, CPU per delivered packet",
                _cost_ratio(point, ref),
                MAX_COST_RATIO,
                True,
                "x",
            )
        )
    return out


def print_scaling(points: Sequence[ScalePoint]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="scaling: cost per delivered packet (CPU time of the core call)")
    headers = (
        "axis",
        "flows",
        "bottleneck",
        "simulated",
        "series every",
        "CPU s",
        "delivered pkts/CPU-s",
        "events/CPU-s",
        "events per pkt",
        "sent per pkt",
        "CPU ns per event",
        "peak RSS MiB",
        "of it the run",
    )
    for header in headers:
        table.add_column(header, justify="left" if header == "axis" else "right")
    for p in points:
        table.add_row(
            p.axis,
            f"{p.flows:,}",
            p.rate,
            p.duration,
            p.interval,
            f"{p.cpu_s:.2f}",
            f"{p.delivered_pkts_per_cpu_s:,.0f}",
            f"{p.events_per_cpu_s:,.0f}",
            f"{p.events_per_pkt:.2f}",
            f"{p.sent_per_pkt:.2f}",
            f"{p.cpu_ns_per_event:.0f}",
            f"{p.peak_rss_mib:.0f}",
            f"{p.run_rss_mib:.0f}",
        )
    Console(highlight=False, width=None if sys.stdout.isatty() else 180).print(table)


def print_scaling_report(points: Sequence[ScalePoint]) -> None:
    """The table, a line per scaling target and the split of each target's ratio."""
    print_scaling(points)
    for target in scaling_targets(points):
        print(target.describe())
    for split in cost_splits(points):
        print(split.describe())


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tcplab.tools.scaling`: the scaling table of `make bench` alone."""
    import argparse

    from ..errors import ScenarioError

    parser = argparse.ArgumentParser(
        prog="python -m tcplab.tools.scaling", description=main.__doc__
    )
    parser.add_argument(
        "--duration", default=None, help='simulated time of the flow and rate axes (default "60s")'
    )
    parser.add_argument(
        "--held-load", action="store_true", help="add the held-load axis (5 GiB of memory)"
    )
    args = parser.parse_args(argv)
    try:
        points = run_scaling(args.duration, held=args.held_load)
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_scaling_report(points)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
