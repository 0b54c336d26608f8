"""Where the packet-level figures (`--kind tseq`, `--kind cwnd-events`) get their data:
capture files or an event log a run wrote (`tcplab run --pcap DIR --events FILE`,
`tcplab emulate --pcap DIR`), or a stored run of a study, simulated again with tracing
(`trace.rerun`). The charts themselves are `trace_charts`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError, field_error
from ..study.store import Store
from ..trace.request import SIDES
from .chart import Chart
from .study_view import Selection, StudyView, pick_runs
from .trace_charts import cwnd_events_chart, tseq_chart

#: The packet-level kinds of `tcplab plot`.
TRACE_KINDS = ("tseq", "cwnd-events")
_CAPTURES = (".pcapng", ".pcap")


def _window_text(start_ns: int | None, end_ns: int | None) -> str:
    if start_ns is None and end_ns is None:
        return ""
    a = "the start" if start_ns is None else f"{start_ns / 1e9:g} s"
    b = "the default end" if end_ns is None else f"{end_ns / 1e9:g} s"
    return f"chosen with --window: {a} to {b}"


_DEFAULT_WINDOW = (
    "the default: 20 round trips of the handshake from one round trip before the first "
    "retransmitted segment was first sent; choose another with --window FROM:TO"
)


def _capture_pair(source: Path, link: str | None) -> tuple[Path, Path | None, str]:
    """The sender-side capture, its receiver-side partner (if there) and the segment name."""
    if source.is_dir():
        found = sorted(source.glob(f"*.{SIDES[0]}.pcapng"))
        names = [p.name.removesuffix(f".{SIDES[0]}.pcapng") for p in found]
        if not names:
            raise ScenarioError(f"{source}: no *.{SIDES[0]}.pcapng capture in the directory")
        if link is None:
            link = "bottleneck" if "bottleneck" in names or len(names) > 1 else names[0]
        if link not in names:
            raise field_error("--pcap-link", link, "no capture of it", ", ".join(names))
        sender = source / f"{link}.{SIDES[0]}.pcapng"
    elif source.suffix.lower() in _CAPTURES:
        sender = source
        name = source.name
        link = name.split(".")[0]
        if not name.endswith(f".{SIDES[0]}.pcapng"):
            return sender, None, link
    else:
        raise ScenarioError(
            f"{source}: not a capture; allowed: a directory of tcplab run --pcap, "
            "a .pcapng or .pcap file"
        )
    receiver = sender.with_name(sender.name.replace(SIDES[0], SIDES[1]))
    return sender, receiver if receiver.exists() else None, link


def chart_from_files(
    kind: str,
    source: str,
    flow: int | None,
    window_ns: tuple[int | None, int | None],
    link: str | None,
) -> Chart:
    """A packet-level figure of capture files (`tseq`) or an event log (`cwnd-events`)."""
    from ..trace.events import read_events
    from ..trace.tseq import time_sequence

    path = Path(source)
    if not path.exists():
        raise ScenarioError(f"{source}: no such file or directory")
    if kind == "cwnd-events":
        if path.suffix.lower() != ".parquet":
            raise ScenarioError(
                f"--kind cwnd-events: {source} is not an event log; allowed: the .parquet "
                "file of tcplab run --events, or a results .duckdb"
            )
        frame, provenance, flows = read_events(path)
        frame = _in_window(frame, window_ns)
        where = f"Event log {path.name}" + _provenance_text(provenance)
        return cwnd_events_chart(frame, flows, where, None if flow is None else [flow])
    sender, receiver, segment = _capture_pair(path, link)
    ts = time_sequence(sender, receiver, flow or 0, window_ns)
    how = _window_text(*window_ns) or _DEFAULT_WINDOW
    where = f'at the sender side of segment "{segment}" ({sender.name})'
    source_text = f"TCP connection {flow or 0} of the capture (in order of appearance)."
    return tseq_chart(ts, where, source_text, how)


def _in_window(frame: pd.DataFrame, window_ns: tuple[int | None, int | None]) -> pd.DataFrame:
    lo, hi = window_ns
    keep = pd.Series(True, index=frame.index)
    if lo is not None:
        keep &= frame["t_ns"] >= lo
    if hi is not None:
        keep &= frame["t_ns"] < hi
    return frame[keep]


def _provenance_text(p: Mapping[str, Any]) -> str:
    if not p:
        return "."
    return (
        f" (scenario hash {p.get('scenario_hash')}, seed {p.get('seed')}, model version "
        f"{p.get('model_version')})."
    )


def chart_from_run(
    kind: str,
    store: Store,
    view: StudyView,
    runs: pd.DataFrame,
    sel: Selection,
    flow: int | None = None,
    window_ns: tuple[int | None, int | None] = (None, None),
    reruns: dict[str, Any] | None = None,
) -> Chart:
    """A packet-level figure of a stored run (the representative run of `pick_runs`, or
    the one `sel` chooses), simulated again with tracing. `reruns` keeps the repeated runs
    between figures (the caller closes them)."""
    from ..trace.rerun import Rerun

    picked = pick_runs(runs, view, sel)
    if picked.runs.empty:
        raise ScenarioError("--run/--seed/--point: no run matches; allowed: another choice")
    row = picked.runs.iloc[0]
    run_id = str(row["run_id"])
    cache = reruns if reruns is not None else {}
    rerun = cache.get(run_id)
    if rerun is None:
        rerun = cache[run_id] = Rerun(row.to_dict(), store.scenario_of(run_id))
    try:
        line = str(row.get("line") or "")
        what = f"{view.study} revision {view.revision}" + (f", {line}" if line else "")
        source = (
            f"Run {run_id} of study {what}"
            + (f" at {picked.how}" if picked.how else "")
            + "; simulated again from its stored scenario and seed (the same model version "
            "gives the same packets; its goodput and retransmissions were checked against "
            "the stored run's)."
        )
        fixed = view.fixed_text()
        if fixed:
            source += f" Fixed: {fixed}."
        events_path, flows = rerun.events()
        from ..trace.events import read_events

        frame, _, _ = read_events(events_path)
        tcp_ids = [int(f["id"]) for f in flows if f["kind"] == "tcp"]
        chosen = tcp_ids[0] if flow is None and tcp_ids else flow
        if chosen is None or chosen not in tcp_ids:
            raise field_error(
                "--flow", chosen, "not a TCP flow of the run", ", ".join(map(str, tcp_ids))
            )
        if kind == "cwnd-events":
            frame = _in_window(frame, window_ns)
            return cwnd_events_chart(frame, flows, source, None if flow is None else [flow])
        return _tseq_of_rerun(rerun, frame, chosen, window_ns, source)
    finally:
        if reruns is None:
            rerun.close()


def _tseq_of_rerun(
    rerun: Any,
    frame: pd.DataFrame,
    flow: int,
    window_ns: tuple[int | None, int | None],
    source: str,
) -> Chart:
    """The flow's captures around the chosen window: with a default end, from the event
    log's first retransmission (the capture then starts far enough before it to hold the
    segment's first transmission, and `time_sequence` picks the window in it)."""
    from ..trace.tseq import time_sequence

    lo, hi = window_ns
    how = _window_text(lo, hi)
    rtt_s = rerun.base_rtt_s(flow)
    rtt_ns = int(rtt_s * 1e9)
    if lo is None or hi is None:
        mine = frame[(frame["flow"] == flow) & (frame["leg"] == 0)]
        retrans = mine[mine["event"] == "retransmission"]["t_ns"]
        begin = int(mine["t_ns"].min()) if len(mine) else 0
        first = int(retrans.iloc[0]) if len(retrans) else None
        start = begin if first is None else max(first - _LOOK_BACK_NS - 4 * rtt_ns, 0)
        end = (first if first is not None else begin) + 21 * rtt_ns
        capture = (lo if lo is not None else start, hi if hi is not None else end)
        how = (
            f"20 base round trips of {rtt_ns / 1e6:.1f} ms from one round trip before the "
            "first retransmitted segment was first sent (or from the flow's start); choose "
            "another with --window FROM:TO"
        )
    else:
        capture = (lo, hi)
    sender, receiver = rerun.captures(flow, *capture)
    ts = time_sequence(sender, receiver, 0, window_ns, rtt_s=rtt_s)
    where = f'at the sender side of segment "{rerun.bottleneck()}" (flow {flow})'
    return tseq_chart(ts, where, source, how)


#: How far before the first retransmission a stored run's capture starts, to hold the
#: segment's first transmission (a retransmission timeout backs off to at most a minute,
#: but the first comes within seconds).
_LOOK_BACK_NS = 10 * 10**9
