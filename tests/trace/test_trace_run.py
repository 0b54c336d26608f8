"""Recording a run packet by packet, as a user does it: `tcplab run --pcap DIR --events FILE`
(and `tcplab.run(..., trace=tcplab.Trace(...))`), its filters and one-line errors; what the
captures show between two capture points; the event log as Parquet; the time-sequence and
cwnd-events figures from files, from a stored study run, and in the study's report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import SCENARIOS, assert_user_error, run_cli
from tcplab import Trace, run
from tcplab.present.draw import render, to_svg
from tcplab.present.report import build_report
from tcplab.present.style import make_style
from tcplab.present.trace_plot import chart_from_files
from tcplab.study.grid import study_from_dict
from tcplab.study.store import Store
from tcplab.study.sweep import run_study
from tcplab.trace.events import COLUMNS, read_events
from tcplab.trace.pcapng import frames, tcp_segment
from tcplab.trace.tseq import time_sequence

SENDER, RECEIVER = "bottleneck.sender-side.pcapng", "bottleneck.receiver-side.pcapng"


def _without_wall_time(d: dict[str, object]) -> dict[str, object]:
    """A result's numbers and event count, without what the wall clock decides."""
    volatile = ("wall_s", "events_per_wall_s", "provenance")
    return {k: v for k, v in d.items() if k not in volatile}


def test_a_traced_run_has_the_same_result_and_writes_both_captures_and_the_log(
    tmp_path: Path,
) -> None:
    plain = run(SCENARIOS / "two-flows.toml", duration="40s")
    traced = run(
        SCENARIOS / "two-flows.toml",
        duration="40s",
        trace=Trace(pcap=tmp_path / "pcap", events=tmp_path / "events.parquet"),
    )
    assert _without_wall_time(plain.to_json_dict()) == _without_wall_time(traced.to_json_dict())
    assert traced.trace is not None
    names = sorted(c.path.name for c in traced.trace.captures)
    assert names == [RECEIVER, SENDER]
    assert all(c.packets > 1000 and c.path.stat().st_size == c.bytes for c in traced.trace.captures)
    frame, provenance, flows = read_events(tmp_path / "events.parquet")
    assert tuple(frame.columns) == COLUMNS
    assert len(frame) == traced.trace.event_count > 0
    assert provenance["seed"] == traced.seed and provenance["model_version"] == traced.model_version
    assert [f["cca"] for f in flows] == [f.cca for f in traced.flows]
    # per flow: one start record, then its changes in time order
    for flow in traced.flows:
        mine = frame[frame["flow"] == flow.id]
        assert mine["t_ns"].is_monotonic_increasing
        assert (mine["event"] == "start").sum() == 1
        assert int((mine["event"] == "retransmission").sum()) == flow.retransmits
    assert not (tmp_path / "events.parquet.raw").exists()


def test_cli_run_writes_the_captures_and_says_where(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli(
        "run",
        str(SCENARIOS / "geo-sat.toml"),
        "--duration",
        "10s",
        "--pcap",
        str(out),
        "--events",
        str(tmp_path / "ev.parquet"),
    )
    assert done.returncode == 0, done.stderr
    assert f"capture {out / SENDER}" in done.stdout.replace("\n", "")
    assert "event log" in done.stdout
    assert (out / SENDER).stat().st_size > 0 and (out / RECEIVER).stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--pcap", "{file}/sub"], ["--pcap = ", "cannot create the directory"]),
        (["--pcap", "/proc/tcplab-trace"], ["--pcap = ", "cannot create the directory"]),
        (["--events", "{tmp}/ev.csv"], ["--events = ", "unknown file extension", ".parquet"]),
        (["--events", "{tmp}/missing/ev.parquet"], ["--events = ", "directory does not exist"]),
        (["--trace-flow", "0"], ["--trace-flow", "with --pcap DIR or --events"]),
        (["--pcap", "{tmp}/p", "--pcap-link", "satellite"], ["--pcap-link", "bottleneck"]),
        (["--pcap", "{tmp}/p", "--trace-flow", "3"], ["--trace-flow = 3", "0 to 0"]),
        (["--pcap", "{tmp}/p", "--trace-window", "20s:10s"], ["--trace-window", "ends before"]),
        (["--pcap", "{tmp}/p", "--trace-window", "10"], ["--trace-window", "FROM:TO"]),
        (["--pcap", "{tmp}/p", "--snaplen", "20"], ["--snaplen", "64"]),
    ],
)
def test_trace_mistakes_are_one_line_errors(
    tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    plain_file = tmp_path / "file"
    plain_file.write_text("")
    argv = [a.format(file=plain_file, tmp=tmp_path) for a in args]
    done = run_cli("run", str(SCENARIOS / "geo-sat.toml"), "--duration", "2s", *argv)
    assert_user_error(done, *fragments)


def test_filters_keep_one_flow_in_a_time_window(tmp_path: Path) -> None:
    done = run_cli(
        "run",
        str(SCENARIOS / "two-flows.toml"),
        "--duration",
        "40s",
        "--pcap",
        str(tmp_path),
        "--trace-flow",
        "1",
        "--trace-window",
        "34s:35s",
    )
    assert done.returncode == 0, done.stderr
    segs = [tcp_segment(f) for f in frames(tmp_path / SENDER)]
    assert segs and all(s is not None for s in segs)
    assert all(34e9 <= s.t_ns < 35e9 for s in segs if s)
    # flow 1: sender 10.0.0.2, receiver 10.128.0.2 (README, "Packet traces")
    assert {(s.src[0], s.dst[0]) for s in segs if s} == {
        (bytes([10, 0, 0, 2]), bytes([10, 128, 0, 2])),
        (bytes([10, 128, 0, 2]), bytes([10, 0, 0, 2])),
    }


def test_the_time_sequence_view_finds_every_segment_the_link_dropped(tmp_path: Path) -> None:
    # A download that completes well before the run ends: nothing is left in flight, so
    # the data segments seen at the sender side and never at the receiver side are the
    # forward link's queue and error drops, all of them.
    result = run(
        SCENARIOS / "file-download.toml",
        overrides=["bottleneck.per=1e-2", "duration=120s"],
        trace=Trace(pcap=tmp_path),
    )
    (flow,) = result.flows
    assert flow.completion_ns is not None and flow.completion_ns < 100e9
    ts = time_sequence(tmp_path / SENDER, tmp_path / RECEIVER, 0, (0, 120 * 10**9))
    fwd = result.bottleneck
    assert len(ts.dropped) == fwd.queue_drops + fwd.error_drops > 20
    assert len(ts.retransmitted) == flow.retransmits
    # the receiver opens (the file client): the data flows the other way all the same
    assert ts.endpoints.sender[0] == bytes([10, 0, 0, 1])
    assert max(s + n for _, s, n in ts.data) == 5_000_000
    assert max(a for _, a in ts.acks) == 5_000_000 + 1  # the FIN takes one


# ------------------------------------------------------------------- figures


@pytest.fixture(scope="module")
def traced_geo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("geo")
    run(
        SCENARIOS / "geo-sat.toml",
        overrides=["duration=60s", "bottleneck.per=1e-3", "flows.0.cca=bbr"],
        trace=Trace(pcap=tmp, events=tmp / "events.parquet"),
    )
    return tmp


def _svg(kind: str, source: Path) -> tuple[str, str]:
    c = chart_from_files(kind, str(source), None, (None, None), None)
    return to_svg(render(c, make_style(), caption=False)), c.caption


def test_tseq_from_captures_names_its_axes_capture_point_and_window(traced_geo: Path) -> None:
    svg, caption = _svg("tseq", traced_geo)
    assert "time (s)" in svg and "relative sequence number (kB)" in svg
    for entry in ("data segment", "retransmission", "dropped on the link", "cumulative ACK"):
        assert entry in svg
    assert "at this capture point" in svg  # the legend's title
    assert 'sender side of segment "bottleneck"' in caption
    assert "20 round trips of the handshake from one round trip before the first" in caption
    # every data segment of the window is a marker
    groups = dict(re.findall(r'<g id="(pts-0-\d+)">(.*?)</g>', svg, re.S))
    assert groups["pts-0-0"].count("<use") > 100


def test_cwnd_events_from_the_log_draws_every_change_and_bbrs_pacing(traced_geo: Path) -> None:
    svg, caption = _svg("cwnd-events", traced_geo / "events.parquet")
    frame, _, _ = read_events(traced_geo / "events.parquet")
    assert "window (kB)" in svg and "pacing rate (Mbit/s)" in svg
    assert "from the event log" in svg
    for phase in ("startup", "drain", "probe_bw"):
        assert f"{phase} begins" in svg
    changes = int((frame["event"] == "cwnd").sum())
    assert changes > 100
    assert "not samples" in caption


def test_plot_command_draws_trace_kinds_from_files_and_refuses_what_they_are_not(
    traced_geo: Path, tmp_path: Path
) -> None:
    fig = tmp_path / "t.svg"
    done = run_cli("plot", str(traced_geo), "--kind", "tseq", "--window", "2s:4s", "-o", str(fig))
    assert done.returncode == 0, done.stderr
    assert "window 2.000 s to 4.000 s" in fig.read_text().lower() or fig.stat().st_size > 0
    done = run_cli("plot", str(traced_geo / SENDER), "--kind", "cwnd-events", "-o", str(fig))
    assert_user_error(done, "not an event log")
    done = run_cli("plot", str(traced_geo), "--kind", "tseq", "--flow", "4", "-o", str(fig))
    assert_user_error(done, "--flow = 4", "1 TCP connection")
    done = run_cli(
        "plot", str(traced_geo), "--kind", "goodput", "--window", "1s:2s", "-o", str(fig)
    )
    assert_user_error(done, "--window", "tseq or cwnd-events")


STUDY = {
    "duration": "20s",
    "study": {"name": "trace"},
    "bottleneck": {"rate": "4Mbps", "delay": "100ms", "queue": "1bdp", "per": 1e-3},
    "flows": [{"cca": "cubic"}],
    "sweep": {"flows.0.cca": ["cubic", "bbr"], "repetitions": 1},
}


def test_a_study_report_shows_the_representative_runs_packets(tmp_path: Path) -> None:
    store = Store(tmp_path / "trace.duckdb")
    run_study(study_from_dict(json.loads(json.dumps(STUDY))), store, jobs=2, progress=False)
    page = build_report(store)
    for kind in ("tseq", "cwnd-events"):
        m = re.search(
            rf"<figure class='fig' id='[^']*' data-kind='{kind}'><svg.*?</figure>", page, re.S
        )
        assert m is not None, kind
        assert "simulated again from its stored scenario" in m.group(0)
    # the same figure from the command line, of the run another seed or line chooses
    fig = tmp_path / "tseq.svg"
    done = run_cli(
        "plot", str(store.path), "--kind", "tseq", "--point", "flows.0.cca=bbr", "-o", str(fig)
    )
    assert done.returncode == 0, done.stderr
    assert "bbr" in fig.read_text()
