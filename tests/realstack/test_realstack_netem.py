"""The netem link backend (`tcplab emulate --link netem`).

The first part is pure: the `tc`/`ethtool` commands a plan turns into, checked against
argv worked out by hand, the refusals, and how `--link auto` chooses. The second part needs
root; this machine's kernel has no sch_netem, so the live netem run skips there, while the
error of `--link netem` and the tbf/fifo part of the commands are checked on it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import SCENARIOS, run_cli
from tcplab.errors import ScenarioError
from tcplab.realstack import commands, features, netem
from tcplab.realstack.cleanup import delete_netns, new_run_id
from tcplab.realstack.emulate import choose_link, emulate_normalized
from tcplab.realstack.errors import MissingFeature
from tcplab.realstack.options import EmulateOptions
from tcplab.realstack.plan import Plan, plan_topology
from tcplab.runner import run_scenario
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalize
from test_realstack import MISSING, dumbbell, flow, sat_path

MS = 1_000_000
NO_NETEM = (
    "the kernel has no sch_netem (CONFIG_NET_SCH_NETEM; tc: Specified qdisc kind is unknown.)"
)


def geo() -> dict[str, Any]:
    """4 Mbit/s, 250 ms one way, 2xBDP = 334 packets, PER 1e-3 forward; 0.1 ms access."""
    scenario = dumbbell([flow()])
    scenario["bottleneck"]["forward"]["per"] = 1e-3
    return scenario


def netem_plan(scenario: dict[str, Any], run_id: str = "7x1") -> Plan:
    return replace(plan_topology(scenario, run_id), link="netem")


# ---------------------------------------------------------------------------------------
# Commands (pure)
# ---------------------------------------------------------------------------------------


def test_geo_dumbbell_becomes_netem_tbf_and_a_packet_fifo() -> None:
    plan = netem_plan(geo())
    cmds = netem.link_commands(plan)
    # Offloads off on both ends of the three veth pairs: bottleneck, sender and receiver
    # access links.
    ends = [
        ("tcplab-7x1-n0", "tcplab-e0a"),
        ("tcplab-7x1-n1", "tcplab-e0b"),
        ("tcplab-7x1-s0", "tcplab-h"),
        ("tcplab-7x1-n0", "tcplab-s0"),
        ("tcplab-7x1-n1", "tcplab-c0"),
        ("tcplab-7x1-c0", "tcplab-h"),
    ]
    assert cmds[:6] == [
        ["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"]
        for ns, dev in ends
    ]
    fwd = ["tc", "-n", "tcplab-7x1-n0", "qdisc", "add", "dev", "tcplab-e0a"]
    rev = ["tc", "-n", "tcplab-7x1-n1", "qdisc", "add", "dev", "tcplab-e0b"]
    # delay: 250 ms + the two 0.1 ms access links folded in = 250.2 ms = 250200 µs;
    # rate: 4e6 * 1514 / 1500 = 4037333.3 -> 4037333 bit/s (the Ethernet header's share);
    # tbf limit (sizes its default bfifo): 334 packets * 1500 B = 501000 B;
    # the queue itself: pfifo of 334 packets; loss: PER 1e-3 = 0.1 %, forward only.
    assert cmds[6:] == [
        [*fwd, "root", "handle", "1:", "netem", "delay", "250200us", "limit", "1000000",
         "loss", "random", "0.1%"],
        [*fwd, "parent", "1:1", "handle", "2:", "tbf", "rate", "4037333bit", "burst", "1600",
         "limit", "501000"],
        [*fwd, "parent", "2:1", "handle", "3:", "pfifo", "limit", "334"],
        [*rev, "root", "handle", "1:", "netem", "delay", "250200us", "limit", "1000000"],
        [*rev, "parent", "1:1", "handle", "2:", "tbf", "rate", "4037333bit", "burst", "1600",
         "limit", "501000"],
        [*rev, "parent", "2:1", "handle", "3:", "pfifo", "limit", "334"],
    ]  # fmt: skip
    assert netem.qdisc_kinds(plan) == ("netem", "tbf", "pfifo")
    # No TUN devices and no emulator configuration with netem.
    assert not any(plan.tun(w) for w in plan.wires)
    assert plan.emu_config(1, 10**9, 0)["links"] == []


def test_three_segment_path_shapes_each_segment_on_its_own_routers() -> None:
    plan = netem_plan(sat_path("none"), "7x2")
    roots = [c for c in netem.link_commands(plan) if c[0] == "tc" and "root" in c]
    tbfs = [c for c in netem.link_commands(plan) if "tbf" in c]
    # (namespace, device, delay): forward leaves the server-side end `a` of each segment,
    # reverse the end `b`; the 0.1 ms access delays go on the end segments only:
    # internet 20 + 0.1 ms, satellite 250 ms, lan 1 + 0.1 ms.
    assert [(c[2], c[6], c[12]) for c in roots] == [
        ("tcplab-7x2-n0", "tcplab-e0a", "20100us"),
        ("tcplab-7x2-n1", "tcplab-e0b", "20100us"),
        ("tcplab-7x2-n1", "tcplab-e1a", "250000us"),
        ("tcplab-7x2-n2", "tcplab-e1b", "250000us"),
        ("tcplab-7x2-n2", "tcplab-e2a", "1100us"),
        ("tcplab-7x2-n3", "tcplab-e2b", "1100us"),
    ]
    # 100e6 * 1514 / 1500 = 100933333.3; 10e6 * 1514 / 1500 = 10093333.3;
    # 100-packet queues: 150000 B.
    assert [(c[c.index("rate") + 1], c[-1]) for c in tbfs] == [
        ("100933333bit", "150000"),
        ("100933333bit", "150000"),
        ("10093333bit", "150000"),
        ("10093333bit", "150000"),
        ("100933333bit", "150000"),
        ("100933333bit", "150000"),
    ]
    # 4 veth pairs of hosts and routers' access + 3 segments: 10 ends without offloads.
    assert sum(c[4] == "ethtool" for c in netem.link_commands(plan)) == 10


def test_byte_queue_gilbert_elliott_and_codel_map_to_their_qdiscs() -> None:
    scenario = geo()
    scenario["bottleneck"]["forward"]["queue"] = {"kind": "droptail", "limit_bytes": 65536}
    scenario["bottleneck"]["forward"]["loss"] = {
        "kind": "gilbert_elliott",
        "p_gb": 0.01,
        "p_bg": 0.1,
        "loss_good": 0.0,
        "loss_bad": 0.5,
    }
    scenario["bottleneck"]["reverse"]["queue"] = {
        "kind": "codel",
        "limit_pkts": 100,
        "codel": {"target_ns": 5 * MS, "interval_ns": 100 * MS, "ecn": False},
    }
    fwd_root, fwd_tbf, fwd_leaf, _, _, rev_leaf = netem.link_commands(netem_plan(scenario))[6:]
    # gemodel p r 1-h 1-k: good->bad 1 %, bad->good 10 %, loss 50 % bad, 0 % good.
    assert fwd_root[-6:] == ["loss", "gemodel", "1%", "10%", "50%", "0%"]
    assert fwd_tbf[-1] == "65536" and fwd_leaf[-3:] == ["bfifo", "limit", "65536"]
    assert rev_leaf[-8:] == [
        "codel", "limit", "100", "target", "5000us", "interval", "100000us", "noecn",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "value", "feature"),
    [
        ("outages", [[10**9, 2 * 10**9]], "outages"),
        ("rate_trace", [[0, 10**6, None]], "rate traces"),
        ("ber", 1e-7, "a bit error rate"),
        ("ecn_threshold_pkts", 20, "ECN threshold marking"),
        ("queue", {"kind": "red", "limit_pkts": 100}, "RED"),
        ("queue", {"kind": "codel", "limit_bytes": 150000}, "CoDel with a byte limit"),
    ],
)
def test_what_netem_cannot_express_is_refused_by_name(key: str, value: Any, feature: str) -> None:
    scenario = geo()
    scenario["bottleneck"]["forward"][key] = value
    why = netem.refusal(plan_topology(scenario, "7x3"))
    assert why is not None and why.startswith(f"bottleneck.forward: {feature}")
    assert why.endswith("cannot be expressed with tc netem; use --link emu")


def test_qdisc_counters_become_the_links_report() -> None:
    (fwd, _) = netem.shaped(netem_plan(geo()))
    shown = [
        {"kind": "netem", "handle": "1:", "bytes": 1_514_000 + 1_514, "packets": 1001, "drops": 7},
        {"kind": "tbf", "handle": "2:", "bytes": 1_514_000, "packets": 1000, "drops": 5},
        {"kind": "pfifo", "handle": "3:", "bytes": 1_514_000, "packets": 1000, "drops": 5},
    ]
    before = netem.Counters(packets=1, bytes=1514)
    report = netem.link_report(fwd, netem.Counters.parse(shown).minus(before), 3 * 10**9)
    # 1000 frames of 1514 B = 1500 B of IP each; 12e6 bit over 3 s of a 4 Mbit/s link = 1.
    assert report["bytes_tx"] == 1_500_000 and report["packets_tx"] == 1000
    assert report["utilization"] == pytest.approx(1.0)
    # netem counts the queue's 5 drops among its own 7: 2 losses.
    assert (report["queue_drops"], report["error_drops"]) == (5, 2)


# ---------------------------------------------------------------------------------------
# Choosing the backend (pure: the probe is replaced)
# ---------------------------------------------------------------------------------------


def test_auto_chooses_emu_when_the_probe_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "link_qdisc_support", lambda kinds: NO_NETEM)
    plan = choose_link(plan_topology(geo(), "7x4"), EmulateOptions(link="auto"))
    assert plan.link == "emu"
    assert plan.notes[-1] == f"links: tcplab-emu (--link auto: {NO_NETEM})"
    assert [w.name for w in plan.wires if plan.tun(w)] == ["bottleneck"]


def test_auto_chooses_netem_when_the_kernel_has_it(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(features, "link_qdisc_support", lambda kinds: asked.append(kinds))
    plan = choose_link(plan_topology(geo(), "7x5"), EmulateOptions())
    assert plan.link == "netem" and asked == [("netem", "tbf", "pfifo")]
    assert "links: tc netem + tbf (--link auto)" in plan.notes


def test_auto_keeps_emu_for_what_netem_cannot_express(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "link_qdisc_support", lambda kinds: pytest.fail("probed"))
    scenario = geo()
    scenario["bottleneck"]["forward"]["outages"] = [[0, 10**9]]
    plan = choose_link(plan_topology(scenario, "7x6"), EmulateOptions())
    assert plan.link == "emu"
    assert plan.notes[-1] == "links: tcplab-emu (--link auto: bottleneck.forward: outages " \
        "cannot be expressed with tc netem)"  # fmt: skip
    with pytest.raises(ScenarioError, match=r"^--link netem: bottleneck.forward: outages"):
        choose_link(plan_topology(scenario, "7x6"), EmulateOptions(link="netem"))


def test_netem_requested_without_sch_netem_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "link_qdisc_support", lambda kinds: NO_NETEM)
    with pytest.raises(MissingFeature) as info:
        choose_link(plan_topology(geo(), "7x7"), EmulateOptions(link="netem"))
    assert str(info.value) == f"--link netem: {NO_NETEM}; allowed: auto, emu, netem"


def test_emu_requested_never_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(features, "link_qdisc_support", lambda kinds: pytest.fail("probed"))
    plan = choose_link(plan_topology(geo(), "7x8"), EmulateOptions(link="emu"))
    assert plan.link == "emu" and plan.notes[-1] == "links: tcplab-emu (--link emu)"


# ---------------------------------------------------------------------------------------
# On the machine (root)
# ---------------------------------------------------------------------------------------

needs_realstack = pytest.mark.skipif(MISSING is not None, reason=f"real-stack mode: {MISSING}")


def _netem_missing() -> str | None:
    return features.link_qdisc_support(("netem", "tbf", "pfifo"))


@needs_realstack
def test_link_netem_on_a_kernel_without_it_is_a_one_line_error() -> None:
    why = _netem_missing()
    if why is None:
        pytest.skip("the kernel has sch_netem")
    done = run_cli(
        "emulate", str(SCENARIOS / "geo-sat.toml"), "--duration", "5s", "--link", "netem"
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr == f"error: --link netem: {why}; allowed: auto, emu, netem\n"


@needs_realstack
def test_tbf_fifo_and_ethtool_commands_are_accepted_by_this_kernel() -> None:
    """The queue half of the generated commands, with tbf at the root instead of under
    netem (which this kernel may lack), and the offload switch."""
    if features.link_qdisc_support(("tbf", "pfifo")) is not None:
        pytest.skip("the kernel has no tbf or pfifo")
    ns = f"tcplab-{new_run_id()}-n0"
    commands.run(["ip", "netns", "add", ns])
    try:
        commands.run(["ip", "-n", ns, "link", "add", "tcplab-e0a", "type", "veth", "peer",
                      "name", "tcplab-e0b"])  # fmt: skip
        commands.run(commands.in_netns(ns, ["ethtool", "-K", "tcplab-e0a", *netem.OFFLOADS_OFF]))
        plan = netem_plan(geo())
        (fwd, _) = netem.shaped(plan)
        _, tbf, leaf = netem.direction_commands(replace(fwd, netns=ns))
        at = tbf.index("parent")
        commands.run([*tbf[:at], "root", *tbf[at + 2 :]])
        commands.run(leaf)
        shown = commands.run(["tc", "-n", ns, "qdisc", "show", "dev", "tcplab-e0a"])
        assert "tbf 2: root" in shown and "pfifo 3: parent 2:1 limit 334p" in shown
    finally:
        delete_netns(ns)


@needs_realstack
def test_geo_over_netem_agrees_with_the_simulator() -> None:
    why = _netem_missing()
    if why is not None:
        pytest.skip(why)  # e.g. "the kernel has no sch_netem (…)"
    scenario = load_scenario(
        SCENARIOS / "geo-sat.toml", [("duration", "60s"), ("bottleneck.per", 0.0)]
    )
    simulated = run_scenario(scenario).flows[0]
    emulation = emulate_normalized(normalize(scenario), EmulateOptions(link="netem"))
    assert emulation.link == "netem"
    assert emulation.to_json_dict()["emulation"]["link"] == "netem"
    emulated = emulation.result.flows[0]
    assert emulated.goodput_bps == pytest.approx(simulated.goodput_bps, rel=0.10)
    assert emulated.rtt.min_ns is not None and emulated.rtt.min_ns >= 500 * MS
