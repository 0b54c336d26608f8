"""Human-readable tables for the CLI (rich). Numbers are shown in Mbit/s, ms and s."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..catalogue import CcaInfo
from ..results.parse import LinkResult, RunResult
from ..results.theory import CUBIC_BETA, CUBIC_C, FlowBounds, flows_bounds
from ..scenario.topology import bottleneck_link_names, direction, pep_mode

if TYPE_CHECKING:
    from ..tools.demo import DemoRow
    from ..trace.request import TraceOutput


#: How the CUBIC response function is labelled wherever it is shown.
CUBIC_MODEL = (
    f"CUBIC model (RFC 9438 §5.1, C = {CUBIC_C:g}, beta = {CUBIC_BETA:g}, at least the "
    "Reno-friendly window)"
)


def wide_console() -> Console:
    """A console for tables on stdout; logs and pipes get a wide fixed width so tables are not
    squeezed into 80 columns."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def _mbps(value_bps: float | None) -> str:
    return "-" if value_bps is None else f"{value_bps / 1e6:.3f}"


def _ms(value_ns: float | None) -> str:
    return "-" if value_ns is None else f"{value_ns / 1e6:.1f}"


def _link_line(label: str, link: LinkResult, ecn: bool = False) -> str:
    marks = f", ECN marks {link.ecn_marks}" if ecn or link.ecn_marks else ""
    aqm = f", AQM drops {link.aqm_drops}" if link.aqm_drops else ""
    outage = f", outage drops {link.outage_drops}" if link.outage_drops else ""
    return (
        f"{label} {link.rate_bps / 1e6:g} Mbit/s: utilization {link.utilization * 100:.1f} %, "
        f"queue drops {link.queue_drops}{aqm}, error drops {link.error_drops}{outage}{marks}, "
        f"mean queue {link.queue_mean_pkts:.1f} pkts (max {link.queue_max_pkts})"
    )


def _marks_ecn(scenario: Mapping[str, Any], link_name: str) -> bool:
    """The normalized scenario gives this link direction ECN marking (a step threshold, or
    a RED/CoDel queue that marks)."""
    config = direction(scenario, link_name)
    queue = config.get("queue", {})
    kind = queue.get("kind", "droptail")
    return config.get("ecn_threshold_pkts") is not None or bool(
        kind in ("red", "codel") and queue.get(kind, {}).get("ecn")
    )


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.2f}"


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:.0f} KiB"


def _secs(value_ns: int | None) -> str:
    return "-" if value_ns is None else f"{value_ns / 1e9:.3f}"


def _tcp_table(result: RunResult, bounds: Sequence[FlowBounds]) -> Table:
    lossy = any(b.mathis_bps is not None for b in bounds)
    cubic = any(b.cubic_bps is not None for b in bounds)
    # file downloads close their connections: when the client's side was closed
    teardown = any(f.closed_ns is not None for f in result.tcp_flows)
    table = Table(
        title=(
            f"{result.name}: {result.duration_ns / 1e9:g} s simulated, seed {result.seed}, "
            f"{result.wall_s:.2f} s wall, {result.events:,} events"
        )
    )
    for header in ("id", "cca", "goodput Mbit/s", "throughput Mbit/s", "retrans", "RTO"):
        table.add_column(header, justify="left" if header == "cca" else "right")
    for header in ("RTT mean ms", "RTT min ms", "RTT p95 ms", "completion s"):
        table.add_column(header, justify="right")
    if teardown:
        table.add_column("closed s", justify="right")
    if lossy:
        table.add_column("Mathis Mbit/s", justify="right")
        table.add_column("Padhye Mbit/s", justify="right")
    if cubic:
        table.add_column("CUBIC model Mbit/s", justify="right")
    for flow, bound in zip(result.tcp_flows, bounds, strict=True):
        cells = [
            str(flow.id),
            flow.cca,
            _mbps(flow.goodput_bps),
            _mbps(flow.throughput_bps),
            str(flow.retransmits),
            str(flow.rto_count),
            _ms(flow.rtt.mean_ns),
            _ms(flow.rtt.min_ns),
            _ms(flow.rtt.p95_ns),
            _secs(flow.completion_ns),
        ]
        if teardown:
            cells.append(_secs(flow.closed_ns))
        if lossy:
            cells += [_mbps(bound.mathis_bps), _mbps(bound.padhye_bps)]
        if cubic:
            cells.append(_mbps(bound.cubic_bps))
        table.add_row(*cells)
    return table


def _cbr_table(result: RunResult) -> Table:
    """CBR (UDP) flows: offered rate, goodput, datagram loss and one-way delay."""
    table = Table(title="CBR flows (UDP)")
    headers = ("id", "rate Mbit/s", "goodput Mbit/s", "sent", "received", "loss %")
    for header in (*headers, "OWD mean ms", "OWD p95 ms", "OWD max ms"):
        table.add_column(header, justify="right")
    flows = result.scenario.get("flows") or []
    for flow in result.cbr_flows:
        app = flows[flow.id].get("app", {}) if flow.id < len(flows) else {}
        cbr = flow.cbr
        if cbr is None:
            continue
        table.add_row(
            str(flow.id),
            _mbps(app.get("rate_bps")),
            _mbps(flow.goodput_bps),
            str(cbr.packets_sent),
            str(cbr.packets_received),
            _pct(cbr.loss_ratio),
            _ms(cbr.owd.mean_ns),
            _ms(cbr.owd.p95_ns),
            _ms(cbr.owd.max_ns),
        )
    return table


def _cross_table(result: RunResult) -> Table:
    """Cross-traffic sources: the load they realised and what their link carried."""
    table = Table(title="cross traffic (not among the flows)")
    headers = ("id", "kind", "link", "bursts", "sent Mbit/s", "delivered Mbit/s", "dropped %")
    for header in headers:
        table.add_column(header, justify="left" if header in ("kind", "link") else "right")
    for cross in result.cross:
        dropped = cross.packets_dropped / cross.packets_sent if cross.packets_sent else 0.0
        table.add_row(
            str(cross.id),
            cross.kind,
            cross.link,
            str(cross.bursts),
            _mbps(cross.sent_bps),
            _mbps(cross.delivered_bps),
            _pct(dropped),
        )
    return table


def _cross_tcp_table(result: RunResult) -> Table:
    """TCP cross traffic's connections: how many, how long they took, what they delivered."""
    table = Table(title="TCP cross traffic: connections")
    headers = (
        *("id", "cca", "started", "completed", "refused", "open", "peak"),
        *("mean completion ms", "goodput Mbit/s", "retransmits"),
    )
    for header in headers:
        table.add_column(header, justify="left" if header == "cca" else "right")
    for cross in result.cross:
        tcp = cross.tcp
        if tcp is None:
            continue
        table.add_row(
            str(cross.id),
            tcp.cca,
            *(str(n) for n in (tcp.connections_started, tcp.connections_completed)),
            *(str(n) for n in (tcp.connections_refused, tcp.connections_open)),
            str(tcp.connections_peak),
            _ms(tcp.completion_mean_ns),
            _mbps(tcp.goodput_bps),
            str(tcp.retransmits),
        )
    return table


def _legs_table(result: RunResult) -> Table:
    """The TCP connections of PEP-split flows, server side first."""
    table = Table(title=f"PEP legs (pep = {pep_mode(result.scenario)})")
    headers = ("flow", "leg", "cca", "goodput Mbit/s", "retrans", "RTT mean ms", "RTT p95 ms")
    teardown = any(leg.closed_ns is not None for f in result.tcp_flows for leg in f.legs)
    for header in (*headers, *(("FIN acked s", "closed s") if teardown else ())):
        table.add_column(header, justify="left" if header in ("leg", "cca") else "right")
    for flow in result.tcp_flows:
        for leg in flow.legs:
            cells = [
                str(flow.id),
                leg.label,
                leg.cca or "-",
                _mbps(leg.goodput_bps),
                "-" if leg.retransmits is None else str(leg.retransmits),
                _ms(leg.rtt.mean_ns),
                _ms(leg.rtt.p95_ns),
            ]
            if teardown:
                cells += [_secs(leg.sender_done_ns), _secs(leg.closed_ns)]
            table.add_row(*cells)
    return table


def print_run(result: RunResult, series_path: str | None = None) -> None:
    """Per-flow tables (TCP; CBR; PEP legs), every link, and theory where there is loss."""
    console = wide_console()
    scenario = result.scenario
    tcp_flows = result.tcp_flows
    bounds = flows_bounds(dict(scenario), [flow.id for flow in tcp_flows])
    if tcp_flows or not result.cbr_flows:
        console.print(_tcp_table(result, bounds))
    else:
        console.print(
            f"{result.name}: {result.duration_ns / 1e9:g} s simulated, seed {result.seed}, "
            f"{result.wall_s:.2f} s wall, {result.events:,} events"
        )
    if result.cbr_flows:
        console.print(_cbr_table(result))
    if result.cross:
        console.print(_cross_table(result))
        if any(cross.tcp is not None for cross in result.cross):
            console.print(_cross_tcp_table(result))
    if any(flow.legs for flow in tcp_flows):
        console.print(_legs_table(result))
    for flow in tcp_flows:
        for buffer in flow.pep_buffer:
            console.print(
                f"flow {flow.id} PEP buffer at {buffer.node}: mean {_kib(buffer.mean_bytes)}, "
                f"max {_kib(buffer.max_bytes)} of {_kib(buffer.limit_bytes)}"
            )
    if "path" in scenario:
        for link in result.links:
            console.print(_link_line(link.name, link, _marks_ecn(scenario, link.name)))
    else:
        forward, reverse = bottleneck_link_names(scenario)
        console.print(_link_line("bottleneck", result.bottleneck, _marks_ecn(scenario, forward)))
        returns = [link for link in result.links if link.name == reverse]
        if returns:
            console.print(_link_line("return", returns[0], _marks_ecn(scenario, reverse)))
    if len(tcp_flows) > 1:
        console.print(f"Jain fairness (TCP goodput): {result.jain_fairness:.4f}")
    if any(b.mathis_bps is not None for b in bounds):
        first = next(b for b in bounds if b.mathis_bps is not None)
        console.print(
            f"theory: loss p = {first.p:g}, base RTT {first.base_rtt_s * 1e3:.1f} ms; Mathis "
            "C = sqrt(3/2); Padhye b = 1, T0 = RTT + 200 ms, Wmax = rwnd"
            + (f"; {CUBIC_MODEL}" if any(b.cubic_bps is not None for b in bounds) else "")
        )
    if series_path is not None:
        console.print(f"series written to {series_path}")


def print_trace(trace: TraceOutput) -> None:
    """One line per capture file written, and the event log."""
    console = wide_console()
    for c in trace.captures:
        console.print(
            escape(
                f"capture {c.path} ({c.side} of {c.segment}): {c.packets:,} packets, "
                f"{c.bytes / 1e6:.1f} MB"
            )
        )
    if trace.events is not None:
        console.print(escape(f"event log {trace.events}: {trace.event_count:,} events"))


def print_catalogue(catalogue: Sequence[CcaInfo]) -> None:
    """Every algorithm on one row (cells wrap); parameters one per line as `key=default`."""
    console = wide_console()
    if not catalogue:
        console.print("the simulation core lists no algorithms (is the core built?)")
        return
    table = Table(
        title=f"congestion-control algorithms ({len(catalogue)})",
        caption=escape("parameters go in [flows.cca_params]; `tcplab ccas NAME` explains each"),
        show_lines=True,
        expand=True,
    )
    table.add_column("name", no_wrap=True)
    table.add_column("feedback", no_wrap=True)
    table.add_column("design", ratio=4)
    table.add_column("reference", ratio=3)
    table.add_column("parameters (default)", ratio=3)
    for info in catalogue:
        params = "\n".join(f"{p.toml_key}={p.default_text}" for p in info.params)
        # Text(): summaries and references may contain [brackets], which rich reads as markup
        table.add_row(
            Text(info.name),
            Text(info.feedback),
            Text(info.summary),
            Text(info.reference or "-"),
            Text(params or "-"),
        )
    console.print(table)


def print_cca(info: CcaInfo) -> None:
    """One algorithm in detail: design, reference and every parameter with its help (plain
    lines rather than a table, so long help text wraps as prose)."""
    console = wide_console()
    console.print(Text(f"{info.name} ({info.feedback}-based)", style="bold"))
    console.print(Text(f"  {info.summary}"))
    console.print(Text(f"  reference: {info.reference or '-'}"))
    if not info.params:
        console.print("  no parameters")
        return
    console.print(Text("parameters (write them under [flows.cca_params], defaults shown):"))
    for p in info.params:
        # numbers carry their unit in the default already ("16 pkts", "717/1024")
        kind = {
            "duration": 'a duration, e.g. "25ms"',
            "rate": 'a rate, e.g. "10Mbps"',
            "bool": "true or false",
        }.get(p.kind, "")
        console.print(Text(f"  {p.toml_key} = {p.default_text}" + (f"  ({kind})" if kind else "")))
        console.print(Text(f"      {p.help or '-'}"))


def print_demo(rows: Sequence[DemoRow], written: Sequence[Path]) -> None:
    console = wide_console()
    if not rows:
        return
    first = rows[0]
    bounds = first.bounds
    scenario = first.result.scenario
    table = Table(
        title=(
            f"GEO satellite: {scenario['bottleneck']['forward']['rate_bps'] / 1e6:g} Mbit/s, "
            f"base RTT {bounds.base_rtt_s * 1e3:.1f} ms, p = {bounds.p:g}, "
            f"{scenario['duration_ns'] / 1e9:g} s"
        )
    )
    headers = ("cca", "feedback", "goodput Mbit/s", "% of cap", "x Mathis", "retrans", "RTO")
    for header in (*headers, "RTT mean ms", "util %", "wall s"):
        table.add_column(header, justify="left" if header in ("cca", "feedback") else "right")
    for row in rows:
        flow = row.result.flows[0]
        mathis = row.bounds.mathis_bps
        table.add_row(
            row.cca.name,
            row.cca.feedback,
            _mbps(flow.goodput_bps),
            f"{flow.goodput_bps / row.bounds.cap_bps * 100:.1f}",
            "-" if mathis is None else f"{flow.goodput_bps / mathis:.2f}",
            str(flow.retransmits),
            str(flow.rto_count),
            _ms(flow.rtt.mean_ns),
            f"{row.result.bottleneck.utilization * 100:.1f}",
            f"{row.result.wall_s:.2f}",
        )
    console.print(table)
    console.print(
        f"link cap (payload share of 1500 B packets): {_mbps(bounds.cap_bps)} Mbit/s; "
        f"Mathis (MSS 1448 B, C = sqrt(3/2)): {_mbps(bounds.mathis_bps)} Mbit/s; "
        f"Padhye (b = 1, T0 = RTT + 200 ms): {_mbps(bounds.padhye_bps)} Mbit/s"
    )
    cubic = next((row.bounds.cubic_bps for row in rows if row.bounds.cubic_bps is not None), None)
    if cubic is not None:
        console.print(f"{CUBIC_MODEL}: {_mbps(cubic)} Mbit/s (for the cubic row)")
    console.print("wrote " + ", ".join(str(path) for path in written))
