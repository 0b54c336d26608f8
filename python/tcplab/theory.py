"""Closed-form TCP throughput models, to put simulated goodput next to theory.

* Mathis, Semke, Mahdavi, Ott, "The Macroscopic Behavior of the TCP Congestion Avoidance
  Algorithm", ACM SIGCOMM CCR 27(3), 1997: BW = (MSS / RTT) · C / √p, C = √(3/2) for periodic
  loss with one ACK per segment (√(3/4) with delayed ACKs).
* Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
  Validation", ACM SIGCOMM 1998, eq. (32) ("PFTK"): adds timeouts and the receiver window.

Both model Reno-style AIMD; CUBIC and BBR are expected to beat them on long fat paths, which is
exactly what the comparison is meant to show. Rates are in bit/s, sizes in bytes, times in s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from .paths import base_rtt_ns, combined_loss, segments

MATHIS_C: Final = math.sqrt(1.5)
IP_TCP_HEADER_BYTES: Final = 40  # IPv4 20 B + TCP 20 B
TIMESTAMP_OPTION_BYTES: Final = 12  # RFC 7323 option (10 B) padded to a 4-byte boundary
LINUX_RTO_MIN_S: Final = 0.2


def _check_inputs(mss_bytes: float, rtt_s: float, p: float) -> None:
    if mss_bytes <= 0 or rtt_s <= 0:
        raise ValueError("mss_bytes and rtt_s must be positive")
    if not 0.0 < p < 1.0:
        raise ValueError("the loss probability p must be in (0, 1)")


def mathis_bps(mss_bytes: float, rtt_s: float, p: float, c: float = MATHIS_C) -> float:
    """Mathis et al. 1997 steady-state bound: (MSS·8 / RTT) · C / √p, in bit/s of payload."""
    _check_inputs(mss_bytes, rtt_s, p)
    return mss_bytes * 8.0 / rtt_s * c / math.sqrt(p)


def padhye_bps(
    mss_bytes: float,
    rtt_s: float,
    p: float,
    rto_s: float,
    b: int = 1,
    wmax_pkts: float | None = None,
) -> float:
    """Padhye et al. 1998 full model (eq. 32), in bit/s of payload:

    B = min(Wmax/RTT, 1 / (RTT·√(2bp/3) + T0·min(1, 3·√(3bp/8))·p·(1 + 32p²))) packets/s,

    where `b` is the number of segments acknowledged per ACK (2 with delayed ACKs counted per
    ACK; Linux counts acknowledged segments, which behaves like b = 1), `rto_s` is T0 and
    `wmax_pkts` the receiver window in segments (None: unlimited).
    """
    _check_inputs(mss_bytes, rtt_s, p)
    if rto_s <= 0 or b < 1:
        raise ValueError("rto_s must be positive and b at least 1")
    denominator_s = rtt_s * math.sqrt(2.0 * b * p / 3.0) + rto_s * min(
        1.0, 3.0 * math.sqrt(3.0 * b * p / 8.0)
    ) * p * (1.0 + 32.0 * p * p)
    packets_per_s = 1.0 / denominator_s
    if wmax_pkts is not None:
        packets_per_s = min(wmax_pkts / rtt_s, packets_per_s)
    return packets_per_s * mss_bytes * 8.0


def link_cap_bps(rate_bps: float, mss_bytes: float, wire_bytes: float) -> float:
    """Best possible goodput on a link: the payload share of each packet on the wire."""
    return rate_bps * mss_bytes / wire_bytes


def wire_bytes(mss_bytes: int, timestamps: bool = True) -> int:
    """IPv4 packet size of a full segment (1448 + 40 + 12 = 1500 with timestamps)."""
    return mss_bytes + IP_TCP_HEADER_BYTES + (TIMESTAMP_OPTION_BYTES if timestamps else 0)


def packet_loss(per: float, ber: float, size_bytes: int) -> float:
    """Per-packet loss from a packet error rate and a bit error rate, as the core applies it:
    p = 1 - (1 - per)(1 - ber)^(8·size)."""
    if ber == 0.0:
        return per  # exact: 1 - (1 - per) would pick up float rounding
    return 1.0 - (1.0 - per) * (1.0 - ber) ** (8 * size_bytes)


@dataclass(frozen=True)
class FlowBounds:
    """Theory for one flow of a normalized scenario (mathis/padhye are None without loss)."""

    p: float
    base_rtt_s: float
    cap_bps: float
    mathis_bps: float | None
    padhye_bps: float | None


def flow_bounds(normalized: dict[str, Any], flow_id: int) -> FlowBounds:
    """Bounds for flow `flow_id` of a normalized scenario (docs/interface.md).

    RTT is the base (propagation) RTT over every segment of the path; the RTO for Padhye is
    Linux's srtt + rto_min, which is what an RTO converges to when the RTT barely varies.
    `p` combines the forward segments' random loss (`per`/`ber`, or a Gilbert-Elliott
    model's long-run loss). The models assume independent losses, so they are left out
    (None) when any forward segment has a bursty (Gilbert-Elliott) loss model.
    """
    flow = normalized["flows"][flow_id]
    access = flow["access"] or normalized["access"]
    rtt_s = base_rtt_ns(normalized, int(access["delay_ns"])) / 1e9
    forwards = [segment.forward for segment in segments(normalized)]
    tcp = flow["tcp"]
    mss_bytes = int(tcp["mss_bytes"])
    size_bytes = wire_bytes(mss_bytes, bool(tcp["timestamps"]))
    losses: list[float] = []
    bursty = False
    for forward in forwards:
        model = forward.get("loss")
        if model:
            bursty = True
            bad = model["p_gb"] / (model["p_gb"] + model["p_bg"])
            losses.append(bad * model["loss_bad"] + (1.0 - bad) * model["loss_good"])
        else:
            losses.append(packet_loss(float(forward["per"]), float(forward["ber"]), size_bytes))
    p = combined_loss(losses)
    slowest_bps = min([int(forward["rate_bps"]) for forward in forwards] + [access["rate_bps"]])
    cap_bps = link_cap_bps(slowest_bps, mss_bytes, size_bytes)
    if p <= 0.0 or bursty:
        return FlowBounds(p, rtt_s, cap_bps, None, None)
    return FlowBounds(
        p=p,
        base_rtt_s=rtt_s,
        cap_bps=cap_bps,
        mathis_bps=mathis_bps(mss_bytes, rtt_s, p),
        padhye_bps=padhye_bps(
            mss_bytes,
            rtt_s,
            p,
            rto_s=rtt_s + LINUX_RTO_MIN_S,
            wmax_pkts=tcp["rwnd_bytes"] / mss_bytes,
        ),
    )
