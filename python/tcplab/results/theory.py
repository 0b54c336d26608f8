"""Closed-form TCP throughput models, to put simulated goodput next to theory.

* Mathis, Semke, Mahdavi, Ott, "The Macroscopic Behavior of the TCP Congestion Avoidance
  Algorithm", ACM SIGCOMM CCR 27(3), 1997: BW = (MSS / RTT) · C / √p, C = √(3/2) for periodic
  loss with one ACK per segment (√(3/4) with delayed ACKs).
* Padhye, Firoiu, Towsley, Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical
  Validation", ACM SIGCOMM 1998, eq. (32) ("PFTK"): adds timeouts and the receiver window.
* The CUBIC response function, RFC 9438 §5.1 ("Fairness to Reno"; §5.1 of RFC 8312 too):
  under periodic loss p CUBIC's average window is (C(3+β)/(4(1-β)))^¼ · RTT^¾ / p^¾ segments
  (1.054 · RTT^0.75 / p^0.75 with C = 0.4, β = 0.7), but never below its Reno-friendly
  estimate (§4.3), an AIMD with alpha = 3(1-β)/(1+β) whose average window is √(3/(2p)), Reno's.

Mathis and Padhye model Reno-style AIMD; CUBIC and BBR are expected to beat them on long fat
paths, which is exactly what the comparison is meant to show. Rates are in bit/s, sizes in
bytes, times in s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..limits import LIMITS
from ..scenario.topology import combined_loss, path_info, segments

MATHIS_C: Final = math.sqrt(1.5)
#: The core's packet sizes and Linux RTO floor (`_core.limits_json`): IPv4 20 B + TCP 20 B,
#: the RFC 7323 option (10 B) padded to 12 B, rto_min 200 ms.
IP_TCP_HEADER_BYTES: Final = LIMITS.header_bytes
TIMESTAMP_OPTION_BYTES: Final = LIMITS.timestamp_option_bytes
LINUX_RTO_MIN_S: Final = LIMITS.rto_min_ns / 1e9
#: CUBIC's constants (RFC 9438 §4.6, §5.1): C in segments/s³, multiplicative decrease β.
#: Linux's are 41·10/1024² ≈ 0.4 and 717/1024 ≈ 0.7; the model takes the RFC's round values.
CUBIC_C: Final = 0.4
CUBIC_BETA: Final = 0.7


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


def aimd_window_pkts(p: float, alpha: float, beta: float) -> float:
    """Average window (segments) of an AIMD that adds `alpha` segments per RTT and cuts to
    `beta` times the window once every 1/p segments: the window saws between βW and W in
    (1-β)W/alpha RTTs, carrying (1+β)W/2 · (1-β)W/alpha = 1/p segments, so
    W = √(2alpha / ((1-β²)p)) and the average (1+β)W/2 = √(alpha(1+β) / (2(1-β)p))."""
    return math.sqrt(alpha * (1.0 + beta) / (2.0 * (1.0 - beta) * p))


def cubic_window_pkts(
    rtt_s: float, p: float, c: float = CUBIC_C, beta: float = CUBIC_BETA
) -> float:
    """CUBIC's average window in segments under periodic loss `p` (RFC 9438 §5.1):
    max((C(3+β)/(4(1-β)))^¼ · RTT^¾ / p^¾, the Reno-friendly AIMD's average), the second
    with alpha = 3(1-β)/(1+β) (RFC 9438 §4.3), which makes it Reno's √(3/(2p))."""
    _check_inputs(1.0, rtt_s, p)
    scale = math.pow(c * (3.0 + beta) / (4.0 * (1.0 - beta)), 0.25)
    concave = scale * math.pow(rtt_s, 0.75) / math.pow(p, 0.75)
    reno_friendly = aimd_window_pkts(p, 3.0 * (1.0 - beta) / (1.0 + beta), beta)
    return max(concave, reno_friendly)


def cubic_bps(
    mss_bytes: float,
    rtt_s: float,
    p: float,
    c: float = CUBIC_C,
    beta: float = CUBIC_BETA,
    wmax_pkts: float | None = None,
) -> float:
    """CUBIC's response function as a rate: `cubic_window_pkts` segments of `mss_bytes` per
    `rtt_s` (at most `wmax_pkts`, the receiver window in segments), in bit/s of payload."""
    _check_inputs(mss_bytes, rtt_s, p)
    window_pkts = cubic_window_pkts(rtt_s, p, c, beta)
    if wmax_pkts is not None:
        window_pkts = min(window_pkts, wmax_pkts)
    return window_pkts * mss_bytes * 8.0 / rtt_s


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
    """Theory for one flow of a normalized scenario (mathis/padhye are None without loss;
    cubic_bps, CUBIC's response function, only for a CUBIC flow with loss)."""

    p: float
    base_rtt_s: float
    cap_bps: float
    mathis_bps: float | None
    padhye_bps: float | None
    cubic_bps: float | None = None


def flow_bounds(normalized: dict[str, Any], flow_id: int) -> FlowBounds:
    """Bounds for flow `flow_id` of a normalized scenario (`flows_bounds` for one flow)."""
    return flows_bounds(normalized, [flow_id])[0]


def flows_bounds(normalized: dict[str, Any], flow_ids: Iterable[int]) -> list[FlowBounds]:
    """Bounds for each flow of `flow_ids` of a normalized scenario (docs/interface.md). The
    path is resolved once for all of them: a run of 10,000 flows asks for 10,000 bounds.

    RTT is the base (propagation) RTT over every segment of the path; the RTO for Padhye is
    Linux's srtt + rto_min, which is what an RTO converges to when the RTT barely varies.
    CUBIC's response function takes the RFC's C = 0.4 and β = 0.7 (not the flow's
    `cca_params`); it and Padhye are capped at the receiver window.
    `p` combines the forward segments' random loss (`per`/`ber`, or a Gilbert-Elliott
    model's long-run loss). The models assume independent losses, so they are left out
    (None) when any forward segment has a bursty (Gilbert-Elliott) loss model.
    """
    flow_rtts_ns = path_info(normalized).flow_base_rtt_ns
    forwards = [segment.forward for segment in segments(normalized)]
    return [
        _bounds(normalized, flow_id, flow_rtts_ns[flow_id] / 1e9, forwards) for flow_id in flow_ids
    ]


def _bounds(
    normalized: dict[str, Any], flow_id: int, rtt_s: float, forwards: list[Mapping[str, Any]]
) -> FlowBounds:
    flow = normalized["flows"][flow_id]
    access = flow["access"] or normalized["access"]
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
    wmax_pkts = tcp["rwnd_bytes"] / mss_bytes
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
            wmax_pkts=wmax_pkts,
        ),
        cubic_bps=(
            cubic_bps(mss_bytes, rtt_s, p, wmax_pkts=wmax_pkts)
            if flow.get("cca") == "cubic"
            else None
        ),
    )


#: The columns a store's `runs` table gets from `run_bounds`.
THEORY_COLUMNS: Final = ("capacity_bps", "mathis_bps", "padhye_bps")


@dataclass(frozen=True)
class RunBounds:
    """Theory for a whole run (its TCP flows together): the payload capacity of the first TCP
    flow's path, and the sums of the flows' Mathis and Padhye rates capped at it (the capacity
    itself on a lossless path)."""

    capacity_bps: float
    mathis_bps: float
    padhye_bps: float


def run_bounds(normalized: dict[str, Any]) -> RunBounds | None:
    """`RunBounds` of a normalized scenario from its flows' `flows_bounds` (None without TCP
    flows). A flow without a model (lossless, or bursty loss) counts as the capacity."""
    bounds = flows_bounds(
        normalized,
        [i for i, flow in enumerate(normalized["flows"]) if flow["app"]["kind"] != "cbr"],
    )
    if not bounds:
        return None
    cap = bounds[0].cap_bps
    mathis = [b.mathis_bps for b in bounds]
    padhye = [b.padhye_bps for b in bounds]
    return RunBounds(
        capacity_bps=cap,
        mathis_bps=cap if None in mathis else min(sum(m for m in mathis if m), cap),
        padhye_bps=cap if None in padhye else min(sum(p for p in padhye if p), cap),
    )
