"""`tcplab emulate --pcap DIR`: the kernel's packets captured where the simulator captures
its own (both ends of the bottleneck), in the same file names and time base, readable by
Wireshark and by `tcplab plot --kind tseq`. Needs the real-stack mode (root, TUN, iperf3,
tcplab-emu), tcpdump and tshark; waits for the machine's emulation lock like every
emulation."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SCENARIOS
from tcplab.realstack import features
from tcplab.realstack.emulate import emulate_normalized
from tcplab.realstack.options import EmulateOptions
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalize
from tcplab.trace.request import Trace
from tcplab.trace.tseq import time_sequence

MISSING = features.missing(("tcpdump",))
TSHARK = shutil.which("tshark")
pytestmark = [
    pytest.mark.skipif(MISSING is not None, reason=f"real-stack mode: {MISSING}"),
    pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (make test installs it)"),
]

SENDER, RECEIVER = "bottleneck.sender-side.pcapng", "bottleneck.receiver-side.pcapng"


def test_emulate_captures_the_kernels_packets_at_both_ends_of_the_bottleneck(
    tmp_path: Path,
) -> None:
    # 20 s of CUBIC on the GEO path at PER 1e-3: the emulator drops packets (its queue and
    # the simulator's loss draws), which the sender side sees and the receiver side does not.
    scenario = load_scenario(
        SCENARIOS / "geo-sat.toml", [("duration", "20s"), ("bottleneck.per", 1e-3)]
    )
    out = tmp_path / "emu"
    emulation = emulate_normalized(
        normalize(scenario), EmulateOptions(capture=Trace(pcap=out, snaplen_bytes=65_535))
    )
    result = emulation.result
    assert result.trace is not None
    assert sorted(c.path.name for c in result.trace.captures) == [RECEIVER, SENDER]
    assert TSHARK is not None
    for name in (SENDER, RECEIVER):
        rows = subprocess.run(
            [
                TSHARK,
                "-n",
                "-r",
                str(out / name),
                "-o",
                "tcp.check_checksum:TRUE",
                "-o",
                "ip.check_checksum:TRUE",
                "-T",
                "fields",
                "-e",
                "frame.time_epoch",
                "-e",
                "ip.checksum.status",
                "-e",
                "tcp.checksum.status",
                "-e",
                "_ws.malformed",
                "-e",
                "frame.protocols",
                "-e",
                "tcp.checksum",
                "-e",
                "tcp.checksum_calculated",
                "-e",
                "_ws.col.Info",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        ).stdout.splitlines()
        fields = [r.split("\t") for r in rows]
        assert len(fields) > 1000
        # timed from the emulation's t = 0, within its 20 s (and the grace of its end)
        assert all(0 <= float(f[0]) < 40 for f in fields)
        # The flows' TCP segments, with correct checksums; whatever else the kernel sent
        # through the link (an ICMP error quoting a header) parses too. Linux's incremental
        # checksum updates (segmentation offload done in software) now and then write 0xffff
        # where a full computation gives 0x0000: the same one's-complement zero (RFC 1624
        # section 3), accepted by every receiver, though Wireshark marks it bad.
        tcp = [f for f in fields if f[4].removesuffix(":data") == "raw:ip:tcp"]
        assert len(tcp) > 0.99 * len(fields)
        bad = [
            f
            for f in tcp
            if not (
                f[1] == "1" and (f[2] == "1" or (f[5], f[6]) == ("0xffff", "0x0000")) and f[3] == ""
            )
        ]
        assert not bad, bad[:5]
        assert not [f for f in fields if f[3]], "malformed frames"
    # What the emulated link dropped is what the sender side has and the receiver side lacks.
    ts = time_sequence(out / SENDER, out / RECEIVER, 0, (0, 40 * 10**9))
    fwd = result.bottleneck
    assert len(ts.dropped) == fwd.queue_drops + fwd.error_drops > 0
    assert ts.data and ts.acks
