"""`python -m tcplab.tools.theory_check`: the simulator against theory, as a table.

Reno (Linux, SACK, delayed ACKs) on a loss-limited path (100 Mbit/s, 100-packet queue) is
compared with the Mathis bound at p = 1e-3 and the Padhye (PFTK) model at p = 1e-2, for a
terrestrial and a satellite RTT; a 64 KB receive window over 550 ms is compared with one
window per RTT. The same cases are asserted (±25 %, ±3 %) by `crates/core/tests/validation.rs`.
"""

from __future__ import annotations

import argparse
from typing import Any, Final

from rich.console import Console
from rich.table import Table

from ..limits import LIMITS
from ..results.theory import flow_bounds
from ..runner import run

ACCESS_DELAY_S = 0.0001
MSS_BYTES: Final[int] = LIMITS.tcp_defaults["mss_bytes"]


def _scenario(rtt_s: float, per: float, duration_s: int, rwnd: int | None = None) -> dict[str, Any]:
    one_way_ms = (rtt_s / 2 - 2 * ACCESS_DELAY_S) * 1e3
    flow: dict[str, Any] = {"cca": "reno"}
    if rwnd is not None:
        flow["tcp"] = {"rwnd": rwnd, "window_scaling": False}
    return {
        "name": "validation",
        "duration": f"{duration_s}s",
        "seed": 1,
        "bottleneck": {
            "rate": "100Mbps",
            "delay": f"{one_way_ms}ms",
            "per": per,
            "queue": "100pkts",
        },
        "flows": [flow],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tcplab.tools.theory_check", description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the run lengths")
    args = ap.parse_args(argv)
    table = Table(title="tcplab Reno vs theory (goodput, Mbit/s)")
    for col in ("case", "RTT ms", "p", "simulated", "model", "model value", "ratio"):
        table.add_column(col, justify="right" if col not in ("case", "model") else "left")
    for rtt_s, base_dur in ((0.05, 600), (0.55, 3000)):
        dur = int(base_dur * args.scale)
        for per, model in ((1e-3, "Mathis"), (1e-2, "Padhye")):
            r = run(_scenario(rtt_s, per, dur))
            got = r.flows[0].goodput_bps
            # the references every summary shows: RTT and loss as the core sees the path
            bounds = flow_bounds(dict(r.scenario), 0)
            want = bounds.mathis_bps if model == "Mathis" else bounds.padhye_bps
            assert want is not None  # a lossy path with independent losses
            table.add_row(
                f"reno {dur}s",
                f"{rtt_s * 1e3:.0f}",
                f"{per:g}",
                f"{got / 1e6:.3f}",
                model,
                f"{want / 1e6:.3f}",
                f"{got / want:.3f}",
            )
    r = run(_scenario(0.55, 0.0, int(300 * args.scale), rwnd=65535))
    want = 45 * MSS_BYTES * 8 / 0.5504
    got = r.flows[0].goodput_bps
    table.add_row(
        "64 KB rwnd",
        "550",
        "0",
        f"{got / 1e6:.3f}",
        "45 segments/RTT",
        f"{want / 1e6:.3f}",
        f"{got / want:.3f}",
    )
    Console().print(table)


if __name__ == "__main__":
    main()
