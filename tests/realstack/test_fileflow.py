"""`fileflow`, the kernel-side TCP source and sink of `tcplab emulate`, on the loopback
interface (no namespaces or root needed)."""

from __future__ import annotations

import json
import socket
import time

import pytest
from tcplab.realstack import fileflow


def test_a_bulk_source_blocked_by_its_peer_stops_at_its_stop_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The peer accepts but never reads, so the source's sends block once the buffers are
    full, as behind a retransmission timeout on a lossy path: the source must still end at
    its stop time and print its JSON, not wait out its 30 s deadline (the emulation stops a
    source that outlasts the run and loses its numbers)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        stop_ns = time.monotonic_ns() + 500_000_000
        started = time.monotonic()
        argv = ["source", "--connect", "127.0.0.1", "--port", str(port), "--size", "0"]
        argv += ["--deadline-s", "30", "--stop-mono-ns", str(stop_ns), "--cca", "reno"]
        # the listener's backlog takes the connection; nobody reads from it
        assert fileflow.main(argv) == 0
        took_s = time.monotonic() - started
    out = json.loads(capsys.readouterr().out)
    assert took_s < 3.0, f"the source took {took_s:.1f} s"
    assert "error" not in out and "timed_out" not in out, out
    assert stop_ns <= out["written_mono_ns"] < stop_ns + 500_000_000
    assert out["samples"], "no TCP_INFO sample"
