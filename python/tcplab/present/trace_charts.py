"""Figures of one run packet by packet, as `Chart`s: the Stevens time-sequence graph of a
connection (`tseq_chart`, from two capture points) and every change of a sender's cwnd and
ssthresh with its recovery events (`cwnd_events_chart`, from the event log: exact, not
sampled). Which run, which capture point and which time window a figure shows is said in
its caption.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..errors import ScenarioError
from ..trace.tseq import TimeSequence
from .chart import Chart, Panel, Point, Series
from .style import COLOURS, LineStyle

#: Looks of the time-sequence graph's elements (colour-blind-safe palette of `style`).
_DATA: Final = LineStyle(COLOURS[0], "o", "-")
_RETRANS: Final = LineStyle(COLOURS[1], "s", "-")
_DROP: Final = LineStyle(COLOURS[6], "x", "-")
_ACK: Final = LineStyle(COLOURS[2], "none", "-")
_SACK: Final = LineStyle(COLOURS[3], "none", "-")
_CWND: Final = LineStyle(COLOURS[0], "none", "-")
_SSTHRESH: Final = LineStyle(COLOURS[7], "none", "--")
_PACING: Final = LineStyle(COLOURS[5], "none", "-")
#: Recovery events marked on the cwnd line: (event, legend entry, look).
_MARKED: Final = (
    ("recovery_entry", "fast recovery entered", LineStyle(COLOURS[1], "v", "-")),
    ("rto", "retransmission timeout", LineStyle(COLOURS[6], "X", "-")),
    ("undo", "reduction undone (spurious)", LineStyle(COLOURS[2], "^", "-")),
    ("tlp", "tail loss probe", LineStyle(COLOURS[4], "D", "-")),
)
#: Panels of a cwnd-events figure at most (one per flow).
MAX_FLOW_PANELS: Final = 6


def _seq_unit(ts: TimeSequence) -> tuple[float, str]:
    top = max([s + n for _, s, n in ts.data] + [a for _, a in ts.acks] + [0])
    return (1e-6, "MB") if top >= 10e6 else (1e-3, "kB")


def tseq_chart(ts: TimeSequence, where: str, source: str, window_how: str) -> Chart:
    """The time-sequence graph of `ts`, captured `where` (e.g. 'at the sender side of segment
    "bottleneck"'); `source` says which run or files, `window_how` how the window was chosen."""
    scale, unit = _seq_unit(ts)

    def pts(rows: Sequence[tuple[float, int, int]]) -> list[Point]:
        return [Point(t, s * scale) for t, s, _ in rows]

    panel = Panel(
        title=ts.endpoints.text(),
        xlabel="time (s)",
        ylabel=f"relative sequence number ({unit})",
    )
    panel.series.append(Series("data segment", _DATA, pts(ts.data), mark="points"))
    panel.series.append(Series("retransmission", _RETRANS, pts(ts.retransmitted), mark="points"))
    if ts.drops_known:
        panel.series.append(Series("dropped on the link", _DROP, pts(ts.dropped), mark="points"))
    panel.series.append(
        Series("cumulative ACK", _ACK, [Point(t, a * scale) for t, a in ts.acks], mark="steps")
    )
    if ts.sacks:
        panel.series.append(
            Series(
                "SACK block",
                _SACK,
                [Point(t, (le + re) / 2 * scale, le * scale, re * scale) for t, le, re in ts.sacks],
                mark="strokes",
            )
        )
    lo, hi = ts.window_s
    panel.notes.append(
        f"{len(ts.retransmitted)} retransmitted"
        + (f", {len(ts.dropped)} dropped" if ts.drops_known else "")
    )
    drops = (
        "segments dropped on the link (sent at this side, never seen at the other end of the "
        "link; matched by sequence number, length and TSval)"
        if ts.drops_known
        else "no drops marked (no capture of the link's other end)"
    )
    caption = (
        f"Time-sequence (Stevens) graph of the connection {ts.endpoints.text()} as captured "
        f"{where}: each data segment at the sequence number of its first byte, relative to "
        f"the sender's first byte ({unit}); retransmissions (segments that do not advance the "
        f"highest sequence number sent); {drops}; the receiver's cumulative ACK as a step line "
        f"and its SACK blocks as vertical strokes, when they passed this capture point. "
        f"Window {lo:.3f} s to {hi:.3f} s ({window_how}). {source}"
    )
    return Chart(
        "tseq",
        "Time-sequence graph",
        [panel],
        "at this capture point",
        caption.strip(),
        "series",
    )


def _panel_of_flow(
    frame: Any, flow: int, cca: str, legend: Mapping[str, LineStyle]
) -> tuple[Panel, Panel | None]:
    f = frame[(frame["flow"] == flow) & (frame["leg"] == 0)].sort_values("t_ns", kind="stable")
    t = (f["t_ns"] / 1e9).tolist()
    panel = Panel(title=f"flow {flow} {cca}".strip(), xlabel="time (s)", ylabel="window (kB)")
    cwnd = [Point(x, y / 1e3) for x, y in zip(t, f["cwnd_bytes"].tolist(), strict=True)]
    panel.series.append(Series("cwnd", _CWND, cwnd, mark="steps"))
    ss = f["ssthresh_bytes"]
    ss_pts = [
        Point(x, float(y) / 1e3)
        for x, y in zip(t, ss.tolist(), strict=True)
        if y is not None and y == y
    ]
    if ss_pts:
        panel.series.append(Series("ssthresh", _SSTHRESH, ss_pts, mark="steps"))
    for event, label, look in _MARKED:
        rows = f[f["event"] == event]
        if len(rows):
            marks = [
                Point(x / 1e9, y / 1e3)
                for x, y in zip(rows["t_ns"].tolist(), rows["cwnd_bytes"].tolist(), strict=True)
            ]
            panel.series.append(Series(label, look, marks, mark="points"))
    pacing = f["pacing_rate_bps"]
    if not pacing.notna().any():
        return panel, None
    rate = Panel(
        title=f"flow {flow} {cca}".strip(), xlabel="time (s)", ylabel="pacing rate (Mbit/s)"
    )
    rate.series.append(
        Series(
            "pacing rate",
            _PACING,
            [
                Point(x, float(y) / 1e6)
                for x, y in zip(t, pacing.tolist(), strict=True)
                if y is not None and y == y
            ],
            mark="steps",
        )
    )
    phases = f[f["event"].isin(["cc_phase", "start"]) & f["cc_phase"].notna()]
    for name, rows in phases.groupby("cc_phase", observed=True, sort=False):
        look = legend[str(name)]
        rate.series.append(
            Series(
                f"{name} begins",
                look,
                [
                    Point(x / 1e9, float(y) / 1e6)
                    for x, y in zip(
                        rows["t_ns"].tolist(),
                        rows["pacing_rate_bps"].fillna(0).tolist(),
                        strict=True,
                    )
                ],
                mark="points",
            )
        )
    return panel, rate


def cwnd_events_chart(
    frame: Any,
    flows: Sequence[Mapping[str, Any]],
    source: str,
    chosen: Sequence[int] | None = None,
) -> Chart:
    """cwnd and ssthresh at every change, with the recovery events marked (and, for a paced
    sender, the pacing rate with its controller's phases) of the TCP flows of an event log
    (`chosen`: these flow ids)."""
    tcp = [f for f in flows if f.get("kind") == "tcp"]
    ids = [int(f["id"]) for f in tcp]
    if chosen:
        missing = [c for c in chosen if c not in ids]
        if missing:
            raise ScenarioError(
                f"--flow = {missing[0]}: not a TCP flow of the event log; allowed: "
                + ", ".join(str(i) for i in ids)
            )
        ids = list(chosen)
    present = set(frame["flow"].unique().tolist())
    ids = [i for i in ids if i in present][:MAX_FLOW_PANELS]
    if not ids:
        raise ScenarioError("the event log has no events of a TCP flow; allowed: another log")
    cca = {int(f["id"]): str(f.get("cca") or "") for f in tcp}
    phase_names = sorted({str(p) for p in frame["cc_phase"].dropna().unique().tolist()})
    looks = {
        n: LineStyle(COLOURS[(i + 1) % len(COLOURS)], "^v<>sDpo"[i % 8], "-")
        for i, n in enumerate(phase_names)
    }
    panels: list[Panel] = []
    for flow in ids:
        window, rate = _panel_of_flow(frame, flow, cca.get(flow, ""), looks)
        panels.append(window)
        if rate is not None:
            panels.append(rate)
    sub = frame[frame["flow"].isin(ids)]
    counts = sub["event"].value_counts()
    lost = int(sub.loc[sub["event"] == "loss_marked", "segments"].sum())
    t0, t1 = sub["t_ns"].min() / 1e9, sub["t_ns"].max() / 1e9
    caption = (
        "Congestion window and slow-start threshold at every change (from the event log: "
        "one step per sender action that changed them, not samples), with the fast "
        "recoveries entered, retransmission timeouts, undone reductions and tail loss probes "
        f"marked on the cwnd line; {int(counts.get('retransmission', 0))} retransmissions and "
        f"{lost} segments marked lost in the events shown ({t0:.3f} s to {t1:.3f} s). "
        "A paced sender's pacing rate is drawn below its window, its controller's phases "
        f"(BBR's mode) marked where they begin. {source}"
    )
    return Chart(
        "cwnd-events",
        "Congestion window at every change",
        panels,
        "from the event log",
        caption.strip(),
        "series",
        shared_legend=False,
        columns=1 if len(panels) <= 2 else 2,
    )
