"""Real-stack mode (`tcplab emulate`, `tcplab validate`, `tcplab-emu`).

The first part needs nothing special: topology plans, TCP option mapping, binary lookup
and the conversion of recorded iperf3 JSON (tests/data/realstack, made by record.py there)
into `RunResult`. The second part builds namespaces and runs the kernel's TCP (root, TUN,
iperf3, tcplab-emu); each of its tests skips with the reason when something is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pytest
from conftest import REPO, SCENARIOS, recorded, run_cli
from tcplab.realstack import bins, cleanup, features, fileflow, machine_lock, sockbuf
from tcplab.realstack.calibrate import calibrate
from tcplab.realstack.convert import FlowRun, Grid, links_json, result_json
from tcplab.realstack.emulate import emulate_normalized, recorded_result
from tcplab.realstack.errors import MissingFeature
from tcplab.realstack.iperf import Sample, client_argv, receiver_samples
from tcplab.realstack.kernel_tcp import kernel_tcp
from tcplab.realstack.options import EmulateOptions
from tcplab.realstack.pep_report import PepRun
from tcplab.realstack.plan import plan_topology
from tcplab.results.parse import RunResult
from tcplab.runner import run_scenario
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalize

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "realstack"
MS = 1_000_000


# ---------------------------------------------------------------------------------------
# Fixtures: recorded runs and normalized scenarios
# ---------------------------------------------------------------------------------------


def converted(name: str) -> RunResult:
    normalized, plan, runs, emu = recorded(name)
    data = result_json(normalized, runs, emu, plan.interval_ns, "test")
    return RunResult.from_json(data, wall_s=1.0, scenario=normalized)


def direction(rate_bps: int, delay_ns: int, limit_pkts: int = 100) -> dict[str, Any]:
    return {
        "rate_bps": rate_bps,
        "delay_ns": delay_ns,
        "per": 0.0,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": limit_pkts},
    }


def flow(cca: str = "cubic", **extra: Any) -> dict[str, Any]:
    return {"cca": cca, "start_ns": 0, "app": {"kind": "bulk"}, "tcp": {}, "access": None, **extra}


def dumbbell(flows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": "geo",
        "seed": 1,
        "duration_ns": 60 * 10**9,
        "interval_ns": 10**9,
        "bottleneck": {
            "forward": direction(4_000_000, 250 * MS, 334),
            "reverse": direction(4_000_000, 250 * MS, 334),
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": flows or [flow()],
    }


def sat_path(pep: str, flows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """internet (20 ms) — satellite (250 ms) — lan (1 ms), as in docs/interface.md."""
    return {
        **dumbbell(flows),
        "bottleneck": None,
        "path": {
            "pep": pep,
            "segments": [
                {"name": name, "forward": direction(rate, delay), "reverse": direction(rate, delay)}
                for name, rate, delay in (
                    ("internet", 100_000_000, 20 * MS),
                    ("satellite", 10_000_000, 250 * MS),
                    ("lan", 100_000_000, 1 * MS),
                )
            ],
        },
    }


def pep_flow(cca: str = "cubic", pep_cca: str = "bbr") -> dict[str, Any]:
    return flow(cca, pep={"cca": pep_cca, "tcp": {}, "buffer_bytes": 1 << 20})


# ---------------------------------------------------------------------------------------
# Plans (pure)
# ---------------------------------------------------------------------------------------


def test_dumbbell_plan_folds_the_access_delay_into_the_bottleneck() -> None:
    plan = plan_topology(dumbbell(), "7x1")
    assert plan.namespaces == ("tcplab-7x1-n0", "tcplab-7x1-n1", "tcplab-7x1-s0", "tcplab-7x1-c0")
    (link,) = plan.emu_config(1, 10**9, 0)["links"]
    assert link["name"] == "bottleneck"
    # 250 ms + sender-side and receiver-side access delays (2 x 0.1 ms), both directions.
    assert link["forward"]["delay_ns"] == link["reverse"]["delay_ns"] == 250_200_000
    assert link["a"] == {"netns": "tcplab-7x1-n0", "dev": "tcplab-e0a"}
    assert link["b"] == {"netns": "tcplab-7x1-n1", "dev": "tcplab-e0b"}
    assert [w.emulated is None for w in plan.wires] == [False, True, True]
    assert ("tcplab-7x1-n0", "net.ipv4.ip_forward", "1") in plan.sysctls
    assert plan.emu_netns == "tcplab-7x1-n0"


def test_dumbbell_routes_go_through_the_emulated_segment() -> None:
    plan = plan_topology(dumbbell(), "7x1")
    routes = {(r.netns, r.dest): (r.via, r.dev) for r in plan.routes}
    assert routes[("tcplab-7x1-n0", "10.2.0.0/16")] == ("10.3.0.2", "tcplab-e0a")
    assert routes[("tcplab-7x1-n1", "10.1.0.0/16")] == ("10.3.0.1", "tcplab-e0b")
    assert routes[("tcplab-7x1-s0", "default")] == ("10.1.0.1", "tcplab-h")
    assert routes[("tcplab-7x1-c0", "default")] == ("10.2.0.1", "tcplab-h")


def test_flows_with_their_own_access_links_get_them_emulated() -> None:
    own = {"rate_bps": 100_000_000, "delay_ns": 10 * MS}
    plan = plan_topology(dumbbell([flow(), flow("bbr", access=own)]), "7x2")
    links = {link["name"]: link for link in plan.emu_config(1, 10**9, 0)["links"]}
    assert links["bottleneck"]["forward"]["delay_ns"] == 250 * MS  # nothing folded
    assert links["access.s1"]["forward"]["delay_ns"] == 10 * MS
    assert links["access.s0"]["forward"]["delay_ns"] == 100_000
    # The sending host never drops its own packets; the router side keeps 1000.
    assert links["access.s1"]["forward"]["queue"]["limit_pkts"] == 1_000_000
    assert links["access.s1"]["reverse"]["queue"]["limit_pkts"] == 1000


def test_path_segments_chain_routers_and_route_across_them() -> None:
    plan = plan_topology(sat_path("none"), "7x3")
    assert plan.routers == tuple(f"tcplab-7x3-n{j}" for j in range(4))
    names = [link["name"] for link in plan.emu_config(1, 10**9, 0)["links"]]
    assert names == ["internet", "satellite", "lan"]
    routes = {(r.netns, r.dest): (r.via, r.dev) for r in plan.routes}
    # n1 reaches the lan segment's far end through the satellite segment.
    assert routes[("tcplab-7x3-n1", "10.3.2.0/24")] == ("10.3.1.2", "tcplab-e1a")
    assert routes[("tcplab-7x3-n3", "10.3.0.0/24")] == ("10.3.2.1", "tcplab-e2b")
    assert not plan.peps


def test_transparent_distributed_peps_intercept_at_both_ends_of_the_satellite() -> None:
    plan = plan_topology(sat_path("distributed", [pep_flow("cubic", "bbr")]), "7x4")
    pep1, pep2 = plan.peps
    assert (pep1.netns, pep2.netns) == ("tcplab-7x4-n1", "tcplab-7x4-n2")
    # Satellite leg: the PEP's algorithm; legs ending at a host: the flow's own.
    assert (pep1.cca_downstream, pep1.cca_upstream) == ("cubic", "bbr")
    assert (pep2.cca_downstream, pep2.cca_upstream) == ("bbr", "cubic")
    assert pep1.argv("tcplab-pep")[:4] == [
        "tcplab-pep",
        "--listen",
        "0.0.0.0:7000",
        "--transparent",
    ]
    rules = dict(plan.nft)
    assert (
        'iifname "tcplab-e0b" ip daddr 10.2.0.2 tcp dport 5201 tproxy to :7000'
        in rules["tcplab-7x4-n1"]
    )
    assert "socket transparent 1" in rules["tcplab-7x4-n2"]
    assert ("tcplab-7x4-n1", ("rule", "add", "fwmark", "1", "lookup", "100")) in plan.policy
    assert plan.flows[0].connect_addr == "10.2.0.2"


def test_explicit_gateway_pep_is_the_senders_destination() -> None:
    plan = plan_topology(sat_path("gateway", [pep_flow()]), "7x5", pep="explicit")
    (pep1,) = plan.peps
    assert pep1.upstream == "10.2.0.2:5201"
    assert (plan.flows[0].connect_addr, plan.flows[0].connect_port) == ("10.3.1.1", 7000)
    assert not plan.nft and not plan.policy


def test_explicit_distributed_pep1_connects_to_pep2() -> None:
    plan = plan_topology(sat_path("distributed", [pep_flow()]), "7x6", pep="explicit")
    pep1, pep2 = plan.peps
    assert pep1.upstream == "10.3.2.1:7000"
    assert pep2.upstream == "10.2.0.2:5201"


# ---------------------------------------------------------------------------------------
# TCP options, commands, binaries (pure)
# ---------------------------------------------------------------------------------------


def test_linux_defaults_need_no_route_options_or_window() -> None:
    tcp = kernel_tcp({}, "cubic", "flows[0]")
    assert tcp.sysctls["net.ipv4.tcp_timestamps"] == "1"
    assert tcp.sysctls["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    assert tcp.sender_route == tcp.receiver_route == ()
    assert tcp.window_bytes is None and tcp.notes == ()


def test_tcp_options_map_to_sysctls_routes_and_window() -> None:
    options = {
        "timestamps": True,
        "random_ts_offset": False,
        "sack": False,
        "delayed_ack": False,
        "initial_window_pkts": 4,
        "mss_bytes": 1000,
        "rwnd_bytes": 65535,
        "rack": False,
        "prr": False,
    }
    tcp = kernel_tcp(options, "reno", "flows[1]")
    assert tcp.sysctls["net.ipv4.tcp_timestamps"] == "2"
    assert tcp.sysctls["net.ipv4.tcp_sack"] == "0"
    assert tcp.sysctls["net.ipv4.tcp_recovery"] == "0"
    assert tcp.sender_route == ("initcwnd", "4", "advmss", "1012")
    assert tcp.receiver_route == ("advmss", "1012", "quickack", "1")
    assert tcp.window_bytes == 65535
    assert tcp.notes == ("flows[1].tcp.prr = false: Linux always uses PRR; emulated with PRR",)


def test_a_large_receive_window_raises_the_hosts_buffer_maxima() -> None:
    tcp = kernel_tcp({"rwnd_bytes": 16_000_000}, "cubic", "flows[0]")
    assert tcp.window_bytes == 16_000_000
    # min and default stay Linux's; the maxima grow to the window
    assert tcp.sysctls["net.ipv4.tcp_rmem"] == "4096 131072 16000000"
    assert tcp.sysctls["net.ipv4.tcp_wmem"] == "4096 16384 16000000"
    small = kernel_tcp({"rwnd_bytes": 65535}, "cubic", "flows[0]")
    assert small.sysctls["net.ipv4.tcp_rmem"] == "4096 131072 6291456"
    plan = plan_topology(
        dumbbell([flow(tcp={"rwnd_bytes": 65535}), flow(tcp={"rwnd_bytes": 16_000_000})]), "7x9"
    )
    assert plan.socket_buffer_bytes == 16_000_000
    assert plan.hosts == ("tcplab-7x9-s0", "tcplab-7x9-c0", "tcplab-7x9-s1", "tcplab-7x9-c1")
    assert plan_topology(dumbbell(), "7x9").socket_buffer_bytes is None


class _FakeSysctls:
    """net.core.*mem_max as a kernel shows them: global (a child namespace sees the initial
    namespace's value and cannot write it) or per namespace."""

    def __init__(self, per_netns: bool, value: int = 4_194_304) -> None:
        self.per_netns = per_netns
        self.host: dict[str, int] = dict.fromkeys(sockbuf.CORE_CEILINGS, value)
        self.netns: dict[tuple[str, str], int] = {}

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(sockbuf, "read_host", lambda key: self.host[key])
        monkeypatch.setattr(sockbuf, "write_host", self.host.__setitem__)
        monkeypatch.setattr(sockbuf, "_read_in", self.read_in)
        monkeypatch.setattr(sockbuf, "_write_in", self.write_in)

    def read_in(self, netns: str, key: str) -> int:
        return self.netns.get((netns, key), self.host[key]) if self.per_netns else self.host[key]

    def write_in(self, netns: str, key: str, value: int) -> bool:
        if self.per_netns:
            self.netns[(netns, key)] = value
        return self.per_netns


def test_global_socket_buffer_maxima_are_raised_and_put_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel = _FakeSysctls(per_netns=False)
    kernel.install(monkeypatch)
    undo, notes = cleanup.Cleanup(), list[str]()
    sockbuf.raise_ceilings(16_000_000, ["s0", "c0"], undo, notes.append)
    assert kernel.host == dict.fromkeys(sockbuf.CORE_CEILINGS, 16_000_000)
    assert len(notes) == 2 and "raised from 4194304 to 16000000" in notes[0]
    undo.run()
    assert kernel.host == dict.fromkeys(sockbuf.CORE_CEILINGS, 4_194_304)


def test_a_maximum_changed_by_someone_else_meanwhile_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel = _FakeSysctls(per_netns=False)
    kernel.install(monkeypatch)
    undo, notes = cleanup.Cleanup(), list[str]()
    sockbuf.raise_ceilings(16_000_000, ["s0", "c0"], undo, notes.append)
    kernel.host["net.core.rmem_max"] = 33_554_432
    undo.run()
    assert kernel.host == {"net.core.rmem_max": 33_554_432, "net.core.wmem_max": 4_194_304}
    assert "left as it is" in notes[-1]


def test_per_namespace_maxima_are_set_on_every_host_and_the_global_ones_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kernel = _FakeSysctls(per_netns=True)
    kernel.install(monkeypatch)
    undo, notes = cleanup.Cleanup(), list[str]()
    sockbuf.raise_ceilings(16_000_000, ["s0", "c0"], undo, notes.append)
    assert kernel.host == dict.fromkeys(sockbuf.CORE_CEILINGS, 4_194_304)
    assert {v for v in kernel.netns.values()} == {16_000_000} and len(kernel.netns) == 4
    assert notes == []
    # maxima already large enough: nothing is written
    big = _FakeSysctls(per_netns=False, value=33_554_432)
    big.install(monkeypatch)
    sockbuf.raise_ceilings(16_000_000, ["s0", "c0"], undo, notes.append)
    assert big.host == dict.fromkeys(sockbuf.CORE_CEILINGS, 33_554_432) and notes == []


def test_iperf3_client_runs_the_flows_algorithm_for_its_duration() -> None:
    plan = plan_topology(
        dumbbell([flow("bbr"), {**flow(), "app": {"kind": "file", "size_bytes": 10**6}}]), "7x7"
    )
    bulk, download = (client_argv(f) for f in plan.flows)
    assert bulk[:3] == ["iperf3", "-c", "10.2.0.2"]
    assert bulk[bulk.index("-C") + 1] == "bbr" and bulk[bulk.index("-t") + 1] == "60"
    assert "--get-server-output" in bulk and "-n" not in download
    # emulate runs TCP flows with fileflow: the source connects like iperf3's client, at
    # its start on the monotonic clock; a bulk source (size 0) writes until its stop time
    source = fileflow.source_argv(plan.flows[1], 70.0, 5, 60_000_000_005)
    assert source[source.index("source") :] == [
        "source", "--size", "1000000", "--connect", "10.2.1.2", "--port", "5201",
        "--deadline-s", "70.000", "--cca", "cubic", "--at-mono-ns", "5",
        "--stop-mono-ns", "60000000005",
    ]  # fmt: skip
    source = fileflow.source_argv(plan.flows[0], 70.0, 5, 60_000_000_005)
    assert source[source.index("--size") + 1] == "0"
    assert source[source.index("--cca") + 1] == "bbr"
    sink = fileflow.sink_argv(plan.flows[1], 75.0)
    assert sink[sink.index("sink") + 3 :][:2] == ["--bind", "10.2.1.2"]
    cbr = {**flow(), "app": {"kind": "cbr", "rate_bps": 250_000, "packet_bytes": 1200}}
    udp = client_argv(plan_topology(dumbbell([cbr]), "7x8").flows[0])
    assert udp[udp.index("-u") :][:5] == ["-u", "-b", "250000", "-l", "1200"]


def test_binaries_come_from_tcplab_bin_dir_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "tcplab-emu"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("TCPLAB_BIN_DIR", str(tmp_path))
    assert bins.find_binary("tcplab-emu") == fake
    monkeypatch.setenv("TCPLAB_BIN_DIR", str(tmp_path / "empty"))
    monkeypatch.setenv("PATH", str(tmp_path))
    found = bins.find_binary("tcplab-emu")
    built = [*(REPO / "target").glob("*/tcplab-emu"), *(REPO / "target").glob("*/*/tcplab-emu")]
    assert found in (*built, fake)
    with pytest.raises(MissingFeature, match="tcplab-no-such-binary not found"):
        bins.require_binary("tcplab-no-such-binary")


def test_algorithm_missing_from_the_kernel_names_the_available_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(features, "kernel_ccas", lambda: ["reno", "cubic", "bbr"])
    with pytest.raises(MissingFeature) as info:
        features.check_ccas([("flows[0].cca", "hybla")])
    assert str(info.value) == (
        'flows[0].cca = "hybla": the kernel has no such congestion control; '
        "available: reno, cubic, bbr"
    )


def test_without_root_the_message_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(MissingFeature, match="needs root"):
        features.check_root()


def test_leftover_namespaces_name_their_creator() -> None:
    assert cleanup.owner_pid("tcplab-4242x0a1b-n0") == 4242
    assert cleanup.owner_pid("tcplab-oops") is None
    assert cleanup.new_run_id().startswith(f"{os.getpid()}x")


# ---------------------------------------------------------------------------------------
# iperf3 JSON → RunResult (recorded fixtures, pure)
# ---------------------------------------------------------------------------------------


def test_grid_closes_a_partial_last_interval_at_the_duration() -> None:
    grid = Grid(interval_ns=10**9, duration_ns=2_500_000_000)
    assert grid.t_ns == [10**9, 2 * 10**9, 2_500_000_000]
    assert grid.seconds(2) == 0.5
    assert grid.bucket(10**9, Sample(0, 100 * MS, 1)) == 1
    assert grid.bucket(0, Sample(2_600 * MS, 2_700 * MS, 1)) is None


def test_bulk_goodput_is_the_receivers_bytes_over_the_run() -> None:
    _, plan, runs, _ = recorded("bulk-cubic")
    result = converted("bulk-cubic")
    (f,) = result.flows
    limit = plan.flows[0].run_s * 10**9 - MS
    delivered = sum(s.bytes for s in receiver_samples(runs[0].client) if s.start_ns < limit)
    assert f.bytes_delivered == delivered
    assert f.goodput_bps == pytest.approx(8 * delivered / 4.0)
    assert f.retransmits == runs[0].client["end"]["sum_sent"]["retransmits"]
    assert f.bytes_sent == delivered + f.retransmits * 1448
    assert f.rtt.count > 0 and f.rtt.min_ns is not None and f.rtt.min_ns >= 40 * MS
    assert [link.name for link in result.links] == ["bottleneck.forward", "bottleneck.reverse"]
    # The emulator's counters come through, its timing accuracy as extra numbers.
    assert result.bottleneck.packets_tx > 0
    assert len(result.series.t_ns) == 4 == len(result.series.flows[0].goodput_bps)
    assert sum(result.series.flows[0].goodput_bps) / 8 == pytest.approx(delivered)


def test_an_emulations_recording_converts_again_to_the_same_result() -> None:
    data = json.loads((FIXTURES / "pep-distributed.json").read_text())
    again = recorded_result(data, "test", wall_s=1.0)
    assert again == converted("pep-distributed")


def test_download_completes_when_the_receiver_has_the_whole_file() -> None:
    _, _, runs, _ = recorded("file-bbr")
    (f,) = converted("file-bbr").flows
    assert f.bytes_delivered == 1_000_000 and f.app == "file"
    got, completion = 0, None
    for s in receiver_samples(runs[0].client):  # hand-worked: the report that crosses 1 MB
        if got + s.bytes >= 1_000_000:
            completion = s.start_ns + (1_000_000 - got) / s.bytes * (s.end_ns - s.start_ns)
            break
        got += s.bytes
    assert completion is not None and f.completion_ns == pytest.approx(completion, abs=1)
    assert f.goodput_bps == pytest.approx(8e6 * 1e9 / completion)


def test_fileflow_pair_becomes_a_download_with_exact_completion_and_teardown() -> None:
    t0 = 1_000_000_000  # the source's connect, on the shared monotonic clock
    source = {
        "connect_mono_ns": t0,
        "cca": "reno",
        "fin_acked_mono_ns": t0 + 250 * MS,
        "samples": [
            {
                "t_ns": t0 + 100 * MS,
                "bytes_acked": 100_000,
                "total_retrans": 0,
                "rtt_us": 50_000,
                "snd_cwnd": 20,
                "snd_mss": 1448,
                "state": 1,
            },
            {
                "t_ns": t0 + 200 * MS,
                "bytes_acked": 300_000,
                "total_retrans": 2,
                "rtt_us": 60_000,
                "snd_cwnd": 10,
                "snd_mss": 1448,
                "state": 4,
            },
        ],
    }
    sink = {
        "complete_mono_ns": t0 + 230 * MS,
        "closed_mono_ns": t0 + 240 * MS,
        "log": [(t0 + 60 * MS, 50_000), (t0 + 150 * MS, 250_000), (t0 + 230 * MS, 300_000)],
    }
    client = fileflow.merge(source, sink)
    sent = [i["streams"][0] for i in client["intervals"]]
    assert [(s["start"], s["end"], s["bytes"], s["retransmits"]) for s in sent] == [
        (0.0, 0.1, 100_000, 0),
        (0.1, 0.2, 200_000, 2),
    ]
    assert [(s["rtt"], s["snd_cwnd"]) for s in sent] == [(50_000, 28_960), (60_000, 14_480)]
    got = [i["sum"] for i in client["server_output_json"]["intervals"]]
    # the byte count at each 100 ms boundary: 50,000 by 100 ms, 250,000 by 200 ms
    assert [(g["start"], g["end"], g["bytes"]) for g in got] == [
        (0.0, 0.1, 50_000),
        (0.1, 0.2, 200_000),
        (0.2, 0.23, 50_000),
    ]
    scenario = dumbbell([{**flow("reno"), "app": {"kind": "file", "size_bytes": 300_000}}])
    plan = plan_topology(scenario, "1x1")
    data = result_json(scenario, [FlowRun(plan.flows[0], client)], {}, 10**9, "test")
    f = RunResult.from_json(data, wall_s=1.0, scenario=scenario).flows[0]
    assert (f.completion_ns, f.server_done_ns, f.closed_ns) == (230 * MS, 250 * MS, 240 * MS)
    assert f.goodput_bps == pytest.approx(8 * 300_000 / 0.230)
    assert (f.bytes_delivered, f.retransmits) == (300_000, 2)
    assert f.rtt.mean_ns == 55_000_000


def test_fileflow_download_is_timed_from_connect_to_the_last_byte_and_the_close() -> None:
    result = converted("file-cubic")  # 1 MB, cubic, 10 Mbit/s, 20 ms one way + 0.1 ms access
    (f,) = result.flows
    assert f.bytes_delivered == 1_000_000 and f.app == "file"
    # 1 MB at the 9.65 Mbit/s payload rate of 1500-byte packets takes 0.829 s, after the
    # handshake (one 40.4 ms round trip) and half a round trip to the receiver: >= 0.890 s;
    # slow start costs a few round trips more.
    assert f.completion_ns is not None and 890 * MS <= f.completion_ns <= 1_000 * MS
    assert f.goodput_bps == pytest.approx(8e6 * 1e9 / f.completion_ns)
    assert f.server_done_ns is not None and f.closed_ns is not None
    # The receiver's ACK of the FIN takes one way (20.2 ms) to the sender; its own FIN and
    # the ACK of it a round trip (40.4 ms); the sockets' states are polled every 1 ms.
    assert 20.2 * MS <= f.server_done_ns - f.completion_ns <= 23 * MS
    assert 40.4 * MS <= f.closed_ns - f.completion_ns <= 43 * MS
    assert sum(result.series.flows[0].goodput_bps) / 8 == pytest.approx(1_000_000)
    # The emulation ended after ~1 s of the 5 s scenario: utilization over the 5 s.
    fwd = result.bottleneck
    assert fwd.utilization == pytest.approx(8 * fwd.bytes_tx / (10e6 * 5.0), rel=1e-9)


def test_fileflow_download_through_peps_closes_at_the_nearest_pep() -> None:
    # internet 10 ms — satellite 100 ms — access 5 ms; distributed PEPs; 500 kB with reno
    (f,) = converted("pep-download").flows
    assert f.bytes_delivered == 500_000 and f.completion_ns is not None
    assert f.server_done_ns is not None and f.closed_ns is not None
    # pep1 acknowledged the server's FIN while the end of the file still had the satellite
    # (100 ms) and the access link (5.1 ms) to cross.
    assert f.server_done_ns < f.completion_ns - 105.1 * MS
    # pep2 acknowledges the client's FIN: one access round trip (2 x 5.1 ms) + 1 ms polling.
    assert 10.2 * MS <= f.closed_ns - f.completion_ns <= 12.5 * MS
    assert [(leg.src, leg.dst, leg.cca) for leg in f.legs] == [
        ("server", "pep1", "reno"),
        ("pep1", "pep2", "cubic"),
        ("pep2", "client", "reno"),
    ]
    assert all(leg.bytes_delivered is not None and leg.bytes_delivered >= 500_000 for leg in f.legs)


def test_link_averages_of_an_early_ended_emulation_cover_the_whole_duration() -> None:
    # Downloads ended after 15 s of a 60 s scenario: the link was idle for the other 45 s.
    link = {
        "name": "bottleneck.forward",
        "rate_bps": 4_000_000,
        "utilization": 0.8,
        "queue_mean_pkts": 100.0,
        "queue_max_pkts": 334,
        "queue_drops": 7,
    }
    (row,) = links_json(dumbbell(), {"measured_ns": 15 * 10**9, "links": [link]})
    assert (row["utilization"], row["queue_mean_pkts"]) == (0.2, 25.0)
    assert (row["queue_max_pkts"], row["queue_drops"]) == (334, 7)


def test_a_late_flow_starts_its_series_at_its_start_time() -> None:
    result = converted("two-flows")
    late = result.series.flows[1]
    assert late.goodput_bps[:2] == (0.0, 0.0) and late.goodput_bps[2] > 0
    assert late.cwnd_bytes[:2] == (0, 0) and late.rtt_mean_ns[0] is None
    assert result.flows[1].start_ns == 2 * 10**9
    assert result.jain_fairness > 0.5


def test_cbr_flow_reports_datagrams_and_loss() -> None:
    (f,) = converted("cbr").flows
    assert f.retransmits == 0 and f.rtt.count == 0
    assert f.goodput_bps == pytest.approx(1e6, rel=0.05)
    assert f.kind == "cbr" and f.cbr is not None
    assert f.cbr.packets_sent >= f.cbr.packets_received > 0
    assert f.cbr.loss_ratio == pytest.approx(1 - f.cbr.packets_received / f.cbr.packets_sent)


# ---------------------------------------------------------------------------------------
# tcplab-pep reports → PEP legs (recorded fixture "pep-distributed", pure). Its path:
# internet 100 Mbit/s 10 ms, satellite 10 Mbit/s 100 ms, access 100 Mbit/s 5 ms, 3 s;
# flow 0 bulk (cubic, bbr over the satellite), flow 1 a 500 kB download (reno, cubic);
# PEP buffers 1 MiB. The numbers below are read off the fixture's reports by hand.
# ---------------------------------------------------------------------------------------


def test_bulk_pep_legs_are_counted_until_the_last_pep_saw_the_flows_bytes_acknowledged() -> None:
    result = converted("pep-distributed")
    bulk = result.flows[0]
    assert bulk.bytes_delivered == 883_280  # iperf3's receiver within the 3 s run
    assert [(leg.src, leg.dst, leg.cca) for leg in bulk.legs] == [
        ("server", "pep1", "cubic"),
        ("pep1", "pep2", "bbr"),
        ("pep2", "client", "cubic"),
    ]
    # pep2's sending socket had 834,086 then 923,862 bytes acknowledged at its samples 29
    # and 30 (t = 3839103415750 and 3839203835554 ns): 883,280 in between. The first samples
    # after that: pep1's sample 31 (its receiving socket: 5,964,293 bytes; its sending
    # socket: 94 retransmissions) and pep2's sample 30 (932,549 bytes received, 1
    # retransmission).
    assert [leg.bytes_delivered for leg in bulk.legs] == [5_964_293, 932_549, 883_280]
    for leg in bulk.legs:
        assert leg.bytes_delivered is not None
        assert leg.goodput_bps == pytest.approx(8 * leg.bytes_delivered / 3.0)
    assert [leg.retransmits for leg in bulk.legs] == [185, 94, 1]  # 185: iperf3's sender
    # RTTs: in all of pep1's 31 samples up to then its sending socket had data in flight or
    # got some acknowledged (200.156 ms at the start, 441.238 ms at most); pep2's in 21 of
    # its 30 (10.234 to 17.027 ms).
    satellite, access = bulk.legs[1].rtt, bulk.legs[2].rtt
    assert (satellite.count, satellite.min_ns, satellite.max_ns) == (31, 200_156_000, 441_238_000)
    assert (access.count, access.min_ns, access.max_ns) == (21, 10_234_000, 17_027_000)
    assert bulk.legs[0].rtt == bulk.rtt  # the iperf3 client's own
    assert [(b.node, b.max_bytes, b.limit_bytes) for b in bulk.pep_buffer] == [
        ("pep1", 1_048_576, 1_048_576),
        ("pep2", 66_608, 1_048_576),
    ]
    assert bulk.pep_buffer[0].mean_bytes == pytest.approx(919_446.34, abs=0.01)
    assert bulk.pep_buffer[1].mean_bytes == pytest.approx(1_841.44, abs=0.01)


def test_download_pep_legs_end_when_their_receiver_has_the_file() -> None:
    download = converted("pep-distributed").flows[1]
    completion_ns = 1_406_814_205  # iperf3's receiver had the 500 kB then
    assert download.completion_ns == completion_ns
    assert [(leg.src, leg.dst, leg.cca) for leg in download.legs] == [
        ("server", "pep1", "reno"),
        ("pep1", "pep2", "cubic"),
        ("pep2", "client", "reno"),
    ]
    assert [leg.bytes_delivered for leg in download.legs] == [500_000] * 3
    # The flow's 500,000 bytes acknowledged at pep2 (samples 13/14: 448,918 and 508,286
    # bytes) place the flow's time 0; pep1 received them between its samples 3 and 4
    # (101,397 and 553,173 bytes), pep2 between its samples 13 and 14 (448,917, 515,525).
    acked = 3837502733384 + (500_000 - 448_918) / (508_286 - 448_918) * 100_532_417
    zero = acked - completion_ns
    into_pep1 = 3836362009736 + (500_000 - 101_397) / (553_173 - 101_397) * 99_876_812
    into_pep2 = 3837502733384 + (500_000 - 448_917) / (515_525 - 448_917) * 100_532_417
    expected = [into_pep1 - zero, into_pep2 - zero, completion_ns]
    for leg, span_ns in zip(download.legs, expected, strict=True):
        assert leg.goodput_bps == pytest.approx(8 * 500_000 * 1e9 / span_ns, rel=1e-6)
    assert download.legs[2].goodput_bps == pytest.approx(download.goodput_bps)
    # Counted until then: no retransmission yet on either PEP's sending socket.
    assert [leg.retransmits for leg in download.legs] == [235, 0, 0]


def test_a_pep_that_relayed_nothing_leaves_the_flow_without_legs() -> None:
    normalized, plan, runs, emu = recorded("pep-distributed")
    empty = replace(runs[0], peps=(runs[0].peps[0], PepRun("pep2", {"conns": []})))
    data = result_json(normalized, [empty, runs[1]], emu, plan.interval_ns, "test")
    assert "legs" not in data["flows"][0] and "pep_buffer" not in data["flows"][0]
    assert len(data["flows"][1]["legs"]) == 3


# ---------------------------------------------------------------------------------------
# On the machine (root, TUN, iperf3, tcplab-emu): each test skips with the reason
# ---------------------------------------------------------------------------------------

MISSING = features.missing()
needs_realstack = pytest.mark.skipif(MISSING is not None, reason=f"real-stack mode: {MISSING}")


def _skip_without(*ccas: str) -> None:
    lacking = [c for c in ccas if c not in features.kernel_ccas()]
    if lacking:
        pytest.skip(f"the kernel lacks {', '.join(lacking)}")


def _our_namespaces(pid: int) -> list[str]:
    return [ns for ns in cleanup.namespaces() if cleanup.owner_pid(ns) == pid]


#: Emulator accuracy bounds, set from `tcplab emulate --calibrate` on this 2-core VM (see
#: README "Real-stack mode"): rate within 0.1 %, mean added delay within 0.25 ms.
RATE_TOLERANCE = 0.03
#: Bound on the median added delay's error. The median, not the mean: one stall of the VM
#: (a fresh-clone run on 2026-11-29, alone on the machine: 16 ms, p99 259 ms at 250 ms) holds
#: back every probe in flight and moved the mean by 1.2 ms, while an emulator that gets the
#: delay wrong moves most probes, hence the median.
DELAY_TOLERANCE_NS = 1 * MS
#: The delay's 99th percentile over a probe's ~1,100 packets: its tail holds the VM's own
#: stalls, which hold back the probe sender (not real-time) as well as the emulator, and a
#: single 5-8 ms stall (seen in 2 of 10 test runs on 2026-11-28, one beside a build) puts
#: more than 1 % of the probes behind it. 10 ms still catches an emulator that releases
#: packets late as a rule (a timer tick, a missed deadline per batch).
DELAY_P99_EXCESS_NS = 10 * MS


#: Marked quiet: the bounds hold for an emulator (and probe sender) that get a core when they
#: wake. Beside the simulator's tests, even at nice 19, one CI run's 100 Mbit/s point lost
#: 5.2 % of its rate: a stall longer than the 100-packet queue's 12 ms leaves the link idle.
@pytest.mark.quiet
@needs_realstack
def test_emulator_holds_rate_delay_and_loss() -> None:
    report = calibrate(EmulateOptions(), seconds=2.0, loss_packets=20_000)
    for row in report.rates:
        assert abs(row.error_ratio) <= RATE_TOLERANCE, row
    for delay in report.delays:
        assert abs(delay.median_error_ns) <= DELAY_TOLERANCE_NS, delay
        assert delay.added_p99_ns - delay.configured_ns <= DELAY_P99_EXCESS_NS, delay
    (loss,) = report.losses
    assert abs(loss.z) <= 5.0, loss  # binomial 5-sigma band


#: Agreement of the kernel with the simulator on the GEO path (4 Mbit/s, 250 ms one way,
#: 2xBDP DropTail, lossless, 60 s), measured with `tcplab validate` (README): goodput and
#: the smoothed RTT's time mean within 10 %. CUBIC's lossless GEO case is the agreement
#: matrix's own real test (`test_matrix.py`); this one runs the algorithm that has none.
GOODPUT_TOLERANCE = 0.10
RTT_TOLERANCE = 0.10


@needs_realstack
@pytest.mark.parametrize("cca", ["bbr"])
def test_geo_goodput_and_rtt_agree_with_the_simulator(cca: str) -> None:
    _skip_without(cca)
    scenario = load_scenario(
        SCENARIOS / "geo-sat.toml",
        [("duration", "60s"), ("bottleneck.per", 0.0), ("flows.0.cca", cca)],
    )
    simulated = run_scenario(scenario).flows[0]
    emulated = emulate_normalized(normalize(scenario)).result.flows[0]
    assert emulated.goodput_bps == pytest.approx(simulated.goodput_bps, rel=GOODPUT_TOLERANCE)
    # The kernel's smoothed RTT read every 100 ms against the simulator's, averaged over time.
    sim_rtt, emu_rtt = simulated.rtt.srtt_time_mean_ns, emulated.rtt.srtt_time_mean_ns
    assert sim_rtt is not None and emu_rtt is not None
    assert emu_rtt == pytest.approx(sim_rtt, rel=RTT_TOLERANCE)


@needs_realstack
def test_a_16_mb_receive_window_emulates_and_leaves_the_global_maxima_as_they_were(
    write_toml: Any,
) -> None:
    # iperf3 -w 16 MB: SO_RCVBUF/SO_SNDBUF above this machine's 4 MiB net.core maxima
    path = write_toml(
        'duration = "4s"\n[bottleneck]\nrate = "10Mbps"\ndelay = "10ms"\nqueue = "2bdp"\n'
        '[[flows]]\ncca = "cubic"\n[flows.tcp]\nrwnd = "16MB"\n'
    )
    before = {key: sockbuf.read_host(key) for key in sockbuf.CORE_CEILINGS}
    done = run_cli("emulate", str(path), "--json")
    assert done.returncode == 0, done.stderr
    (f,) = json.loads(done.stdout)["flows"]
    assert f["goodput_bps"] > 5e6  # of 10 Mbit/s, in 4 s with a 20 ms RTT
    assert {key: sockbuf.read_host(key) for key in sockbuf.CORE_CEILINGS} == before


@pytest.fixture
def lock_times(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """When each emulation of this process got the machine's emulation lock."""
    taken: list[float] = []
    original = machine_lock.exclusive

    @contextmanager
    def timed(say: Callable[[str], None]) -> Iterator[None]:
        with original(say):
            taken.append(time.monotonic())
            yield

    monkeypatch.setattr(machine_lock, "exclusive", timed)
    return taken


@needs_realstack
def test_geo_download_completes_and_closes_as_simulated(lock_times: list[float]) -> None:
    # 5 MB over the GEO path (4 Mbit/s, 250 ms one way), lossless: the kernel's download
    # starts half a round trip (250 ms) sooner than the simulator's (its sender opens the
    # connection; the simulator's client opens it and sends a request first).
    scenario = load_scenario(
        SCENARIOS / "file-download.toml", [("bottleneck.per", 0.0), ("duration", "30s")]
    )
    simulated = run_scenario(scenario).flows[0]
    emulated = emulate_normalized(normalize(scenario)).result.flows[0]
    # from the moment it had the machine to itself: other emulations may hold the lock first
    assert time.monotonic() - lock_times[-1] < 25, "the emulation ends with the download"
    assert simulated.completion_ns is not None and emulated.completion_ns is not None
    assert emulated.bytes_delivered == 5_000_000
    shifted = emulated.completion_ns + 250 * MS
    assert shifted == pytest.approx(simulated.completion_ns, rel=GOODPUT_TOLERANCE)
    # The client closes one round trip (500.4 ms) after the last byte; its socket is polled
    # every 1 ms, which a loaded machine may stretch by a few ms (a delayed ACK would be 40).
    assert emulated.closed_ns is not None
    assert 500.4 * MS <= emulated.closed_ns - emulated.completion_ns <= 510 * MS


@needs_realstack
def test_unknown_kernel_algorithm_is_a_one_line_error(write_toml: Any) -> None:
    path = write_toml(
        'duration = "5s"\n[bottleneck]\nrate = "10Mbps"\ndelay = "10ms"\n[[flows]]\ncca = "vegas"\n'
    )
    if "vegas" in features.kernel_ccas():
        pytest.skip("the kernel has vegas")
    done = run_cli("emulate", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert (
        'flows[0].cca = "vegas": the kernel has no such congestion control; available:'
        in done.stderr
    )


@needs_realstack
def test_ctrl_c_removes_namespaces_and_processes(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tcplab",
            "emulate",
            str(SCENARIOS / "geo-sat.toml"),
            "--duration",
            "60s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the run first waits for the machine's emulation lock (other emulations may hold it),
    # which it then marks with its pid
    while machine_lock.lock_path().read_text().strip() != str(proc.pid):
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(_our_namespaces(proc.pid)) < 4:
        time.sleep(0.1)
    assert len(_our_namespaces(proc.pid)) == 4, "the emulation did not build its topology"
    time.sleep(1.0)  # let the emulator and iperf3 start
    children = [
        int(pid)
        for ns in _our_namespaces(proc.pid)
        for pid in subprocess.run(
            ["ip", "netns", "pids", ns], capture_output=True, text=True
        ).stdout.split()
    ]
    assert children, "no emulator or iperf3 running"
    interrupted = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    took_s = time.monotonic() - interrupted
    assert proc.returncode == 130, err
    # what the user waits for: every process stopped and every namespace gone
    assert took_s < 1.0, f"Ctrl-C took {took_s:.2f} s"
    # Notes (e.g. which link backend runs) come first; the error is the last line.
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert all(line.startswith("note: ") for line in err.strip().splitlines()[:-1]), err
    assert _our_namespaces(proc.pid) == []
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]


@needs_realstack
def test_cleanup_removes_leftovers_of_dead_runs() -> None:
    leftover = "tcplab-4194999x0000-n0"  # above any pid: its creator is gone
    subprocess.run(["ip", "netns", "add", leftover], check=True)
    done = run_cli("emulate", "--cleanup")
    assert done.returncode == 0, done.stderr
    assert leftover in done.stdout
    assert leftover not in cleanup.namespaces()


def _pep_binary_missing() -> str | None:
    return None if bins.find_binary("tcplab-pep") else "tcplab-pep not built (crates/pep)"


@needs_realstack
@pytest.mark.parametrize("mode", ["transparent", "explicit"])
def test_gateway_pep_relays_a_flow_over_the_satellite(
    mode: Literal["transparent", "explicit"],
) -> None:
    why = _pep_binary_missing()
    if why is None and mode == "transparent":
        why = features.tproxy_support(f"tcplab-{cleanup.new_run_id()}-probe")
    if why is not None:
        pytest.skip(why)
    scenario: Mapping[str, Any] = {
        **sat_path("gateway", [pep_flow("cubic", "bbr")]),
        "duration_ns": 20 * 10**9,
    }
    result = emulate_normalized(scenario, EmulateOptions(pep=mode)).result
    (f,) = result.flows
    assert f.goodput_bps > 2e6  # a 10 Mbit/s satellite leg with BBR on it
    assert f.rtt.min_ns is not None and f.rtt.min_ns < 100 * MS  # the server's leg ends at PEP1
    # The PEP's report splits the flow: the server's leg (the flow's own algorithm) and
    # PEP1's over the satellite (BBR, read back from its socket), whose RTT is at least the
    # satellite's and the LAN's 2 x 251 ms.
    assert [(leg.src, leg.dst, leg.cca) for leg in f.legs] == [
        ("server", "pep1", "cubic"),
        ("pep1", "client", "bbr"),
    ]
    for leg in f.legs:  # each leg delivered at least what reached the client
        assert leg.bytes_delivered is not None and leg.bytes_delivered >= f.bytes_delivered
    satellite = f.legs[1].rtt
    assert satellite.count > 0 and satellite.min_ns is not None and satellite.min_ns >= 502 * MS
    (buffer,) = f.pep_buffer
    assert (buffer.node, buffer.limit_bytes) == ("pep1", 1 << 20)
    assert buffer.max_bytes is not None and 0 < buffer.max_bytes <= 1 << 20
    assert buffer.mean_bytes is not None and 0 <= buffer.mean_bytes <= buffer.max_bytes


def test_a_second_emulation_waits_for_the_first(tmp_path: Path) -> None:
    # Two processes take the machine's emulation lock: the second says once that it waits,
    # and gets the lock only after the first let go.
    lock = tmp_path / "probe.lock"
    code = (
        "import sys, time; from pathlib import Path\n"
        "from tcplab.realstack import machine_lock as m\n"
        f"m.lock_path = lambda: Path({str(lock)!r})\n"
        "with m.exclusive(lambda s: print('note:', s, flush=True)):\n"
        "    print('got', time.monotonic(), flush=True); time.sleep(float(sys.argv[1]))\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, "1.5"], stdout=subprocess.PIPE, text=True
    ) as first:
        assert first.stdout is not None
        got_first = float(first.stdout.readline().split()[1])
        second = subprocess.run(
            [sys.executable, "-c", code, "0"], capture_output=True, text=True, timeout=30
        )
        first.wait(timeout=30)
    lines = second.stdout.splitlines()
    assert lines[0].startswith(f"note: waiting for another emulation (pid {first.pid})")
    assert float(lines[1].split()[1]) >= got_first + 1.5
