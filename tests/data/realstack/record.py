"""Record the iperf3/emulator fixtures of tests/realstack/test_realstack.py (needs root).

    .venv/bin/python tests/data/realstack/record.py [NAME ...]   # default: all of them

Each fixture is `{"normalized": scenario, "clients": [iperf3 client JSON per flow],
"emu": tcplab-emu report}`, exactly what `convert.result_json` consumes; a PEP scenario's
also has `"peps": [[{"node", "report"} per PEP, in path order] per flow]` (tcplab-pep's
`--report` files; needs tcplab-pep and, for transparent PEPs, TPROXY).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tcplab.realstack.cleanup import new_run_id
from tcplab.realstack.emulate import _run_traffic
from tcplab.realstack.options import EmulateOptions
from tcplab.realstack.plan import plan_topology
from tcplab.realstack.topology import topology

HERE = Path(__file__).resolve().parent


def _dir(rate_bps: int, delay_ns: int, limit_pkts: int, per: float = 0.0) -> dict[str, Any]:
    return {
        "rate_bps": rate_bps,
        "delay_ns": delay_ns,
        "per": per,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": limit_pkts},
        "ecn_threshold_pkts": None,
    }


def _flow(cca: str, app: dict[str, Any], start_ns: int = 0) -> dict[str, Any]:
    return {
        "cca": cca,
        "cca_params": {},
        "start_ns": start_ns,
        "app": app,
        "tcp": {},
        "access": None,
    }


def _scenario(
    name: str, seconds: int, rate_bps: int, delay_ns: int, flows: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "name": name,
        "seed": 1,
        "duration_ns": seconds * 10**9,
        "interval_ns": 10**9,
        "bottleneck": {
            "forward": _dir(rate_bps, delay_ns, 100, 1e-3),
            "reverse": _dir(rate_bps, delay_ns, 100),
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": flows,
    }


def _pep_flow(
    cca: str, pep_cca: str, app: dict[str, Any], buffer_bytes: int = 1 << 20
) -> dict[str, Any]:
    return {**_flow(cca, app), "pep": {"cca": pep_cca, "tcp": {}, "buffer_bytes": buffer_bytes}}


def _pep_path(name: str, seconds: int, flows: list[dict[str, Any]]) -> dict[str, Any]:
    """internet 100 Mbit/s 10 ms, satellite 10 Mbit/s 100 ms, access 100 Mbit/s 5 ms; PEPs at
    both ends of the satellite."""
    segs = (
        ("internet", 100_000_000, 10_000_000),
        ("satellite", 10_000_000, 100_000_000),
        ("access", 100_000_000, 5_000_000),
    )
    return {
        "name": name,
        "seed": 1,
        "duration_ns": seconds * 10**9,
        "interval_ns": 10**9,
        "path": {
            "pep": "distributed",
            "segments": [
                {"name": seg, "forward": _dir(rate, delay, 200), "reverse": _dir(rate, delay, 200)}
                for seg, rate, delay in segs
            ],
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": flows,
    }


FIXTURES = {
    "bulk-cubic": _scenario(
        "bulk-cubic", 4, 10_000_000, 20_000_000, [_flow("cubic", {"kind": "bulk"})]
    ),
    "file-bbr": _scenario(
        "file-bbr",
        5,
        10_000_000,
        20_000_000,
        [_flow("bbr", {"kind": "file", "size_bytes": 1_000_000})],
    ),
    "two-flows": _scenario(
        "two-flows",
        5,
        10_000_000,
        20_000_000,
        [_flow("reno", {"kind": "bulk"}), _flow("cubic", {"kind": "bulk"}, 2 * 10**9)],
    ),
    "cbr": _scenario(
        "cbr",
        3,
        10_000_000,
        20_000_000,
        [_flow("cubic", {"kind": "cbr", "rate_bps": 1_000_000, "packet_bytes": 1000})],
    ),
    # Downloads since `fileflow` (the two fixtures above and below with a download were
    # recorded when downloads ran as iperf3 bulk flows; the conversion still reads those).
    "file-cubic": _scenario(
        "file-cubic",
        5,
        10_000_000,
        20_000_000,
        [_flow("cubic", {"kind": "file", "size_bytes": 1_000_000})],
    ),
    "pep-download": _pep_path(
        "pep-download", 4, [_pep_flow("reno", "cubic", {"kind": "file", "size_bytes": 500_000})]
    ),
    "pep-distributed": _pep_path(
        "pep-distributed",
        3,
        [
            _pep_flow("cubic", "bbr", {"kind": "bulk"}),
            _pep_flow("reno", "cubic", {"kind": "file", "size_bytes": 500_000}),
        ],
    ),
}


def record(name: str, normalized: dict[str, Any]) -> None:
    plan = plan_topology(normalized, new_run_id())
    with topology(plan, normalized, EmulateOptions(), int(normalized["duration_ns"])) as topo:
        runs = _run_traffic(topo, normalized)
        report = topo.stop_emulator()
    data: dict[str, Any] = {
        "normalized": normalized,
        "clients": [run.client for run in runs],
        "emu": report,
    }
    if any(run.peps for run in runs):
        data["peps"] = [
            [{"node": pep.node, "report": pep.report} for pep in run.peps] for run in runs
        ]
    (HERE / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    for fixture_name in sys.argv[1:] or FIXTURES:
        record(fixture_name, FIXTURES[fixture_name])
        print(f"recorded {fixture_name}")
