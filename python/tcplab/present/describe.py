"""What a study held fixed, in a sentence for figure captions and report headers.

A figure shows what varied; its caption must say what did not: the path (rates, delays,
queues, loss), the flows (how many, which algorithm, application, MSS, window) and the run
length. Those come from the revision's effective definition (its normalized base scenario);
whatever the sweep or a variant sets is left out here and named where it varies (on an axis,
in a legend, in a panel title). Variants are listed with their settings. No heavy imports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .labels import KeyContext, format_number, key_label, key_name


def _seconds(ns: int) -> str:
    return f"{format_number(ns / 1e9, 4)} s"


def _touched(keys: Iterable[str], *prefixes: str) -> bool:
    """Some swept or variant key sets a field under one of `prefixes` (dotted, TOML keys)."""
    return any(k == p or k.startswith(p + ".") for k in keys for p in prefixes)


def _rate_text(bps: object) -> str:
    """4000000 → "4 Mbit/s"."""
    if not isinstance(bps, int | float):
        return "?"
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bps >= scale:
            return f"{format_number(bps / scale, 4)} {unit}"
    return f"{format_number(float(bps), 4)} bit/s"


def _size_text(n: int) -> str:
    """6291456 → "6 MiB", 4000000 → "4 MB", 1460 → "1460 B": the unit a person would have
    written it in."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("GB", 10**9), ("MB", 10**6)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    for unit, factor in (("KiB", 2**10), ("kB", 10**3)):
        if n >= 10 * factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} B"


def _ms(ns: object) -> str:
    if not isinstance(ns, int | float):
        return "?"
    return f"{format_number(ns / 1e6, 4)} ms"


def _sizes_vary(keys: Iterable[str]) -> bool:
    """A varied key changes a rate or a delay, so a queue given in BDPs is sized again at
    each point and the base scenario's packet count is not what every point ran."""
    return any(
        k.split(".")[-1] in ("rate", "return_rate", "delay")
        or k == "access"
        or k.startswith("access.")
        for k in keys
    )


def _queue(q: Mapping[str, Any] | None, sizes_vary: bool = False) -> str:
    if not q:
        return "queue ?"
    kind = {"droptail": "DropTail", "red": "RED", "codel": "CoDel"}.get(str(q.get("kind")), "")
    limit = q.get("limit_pkts")
    if sizes_vary:
        return (
            f"{kind} queue ({limit} packets at the base rate and delay; "
            "a BDP-sized queue is sized per point)"
        ).strip()
    return f"{kind} queue {limit} packets".strip()


def _link(
    d: Mapping[str, Any],
    rev: Mapping[str, Any] | None,
    keys: set[str],
    prefix: str,
    resized: bool = False,
) -> list[str]:
    """Rate, delay, queue and loss of one link direction (and the return rate when it
    differs), each left out when a key under `prefix` varies it."""
    out: list[str] = []
    if not _touched(keys, f"{prefix}.rate"):
        rate = _rate_text(d.get("rate_bps"))
        if (
            rev
            and rev.get("rate_bps") != d.get("rate_bps")
            and not _touched(keys, f"{prefix}.return_rate")
        ):
            rate += f" (return {_rate_text(rev.get('rate_bps'))})"
        out.append(rate)
    if not _touched(keys, f"{prefix}.delay"):
        out.append(f"one-way delay {_ms(d.get('delay_ns'))}")
    if not _touched(keys, f"{prefix}.queue"):
        out.append(_queue(d.get("queue"), resized))
    for field, name in (("per", "PER"), ("ber", "BER")):
        value = d.get(field)
        if isinstance(value, int | float) and value > 0 and not _touched(keys, f"{prefix}.{field}"):
            out.append(f"{name} {format_number(value)}")
    return out


def _path(base: Mapping[str, Any], keys: set[str], resized: bool = False) -> str:
    if "path" in base:
        parts = []
        for i, seg in enumerate(base["path"].get("segments") or []):
            bits = _link(seg["forward"], seg.get("reverse"), keys, f"path.segments.{i}", resized)
            parts.append(f"{seg.get('name') or f'segment {i}'} " + ", ".join(bits))
        pep = base["path"].get("pep")
        text = "path: " + " — ".join(parts)
        if pep and not _touched(keys, "path.pep"):
            text += f"; PEP {pep}"
        return text
    bn = base.get("bottleneck") or {}
    bits = _link(bn.get("forward") or {}, bn.get("reverse"), keys, "bottleneck", resized)
    text = "bottleneck " + ", ".join(bits) if bits else ""
    access = base.get("access") or {}
    if access and not _touched(keys, "access"):
        text += (
            f"; access links {_rate_text(access.get('rate_bps'))}, {_ms(access.get('delay_ns'))}"
        )
    return text


def _flows(base: Mapping[str, Any], keys: set[str]) -> str:
    flows = base.get("flows") or []
    tcp = [f for f in flows if (f.get("app") or {}).get("kind") != "cbr"]
    cbr = [f for f in flows if (f.get("app") or {}).get("kind") == "cbr"]
    parts: list[str] = []
    if tcp:
        ccas = sorted({str(f.get("cca")) for f in tcp})
        head = f"{len(tcp)} TCP flow{'s' if len(tcp) > 1 else ''}"
        details: list[str] = []
        if not _touched(keys, *(f"flows.{i}.cca" for i in range(len(flows)))):
            details.append("/".join(ccas))
        app = tcp[0].get("app") or {}
        if app.get("kind") == "file" and not _touched(keys, "flows.0.size"):
            details.append(f"{_size_text(int(app.get('size_bytes', 0)))} downloads")
        elif app.get("kind") == "file":
            details.append("downloads")
        tcp_opts = tcp[0].get("tcp") or {}
        if tcp_opts.get("stack") == "ns2":
            details.append("ns-2 agents")
        if not _touched(keys, "flows.0.tcp.mss") and "mss_bytes" in tcp_opts:
            details.append(f"MSS {tcp_opts['mss_bytes']} B")
        if not _touched(keys, "flows.0.tcp.rwnd") and "rwnd_bytes" in tcp_opts:
            details.append(f"rwnd {_size_text(int(tcp_opts['rwnd_bytes']))}")
        if any(f.get("start_ns") for f in tcp):
            starts = ", ".join(_seconds(int(f.get("start_ns") or 0)) for f in tcp)
            details.append(f"starting at {starts}")
        parts.append(head + (f" ({', '.join(details)})" if details else ""))
    if cbr:
        rates = sorted({_rate_text((f.get("app") or {}).get("rate_bps")) for f in cbr})
        parts.append(f"{len(cbr)} CBR/UDP flow{'s' if len(cbr) > 1 else ''} ({'/'.join(rates)})")
    return " + ".join(parts)


def fixed_parameters(definition: Mapping[str, Any] | None, varied: Iterable[str]) -> str:
    """One sentence: the path, the flows and the run length of the base scenario, without
    what `varied` names (the swept keys; variants are listed by `variant_settings`). Empty
    without a definition."""
    if not definition:
        return ""
    base = definition.get("base_scenario") or {}
    keys = set(varied)
    # Variants are listed apart, but a rate or delay they set re-sizes a BDP queue too.
    resized = _sizes_vary(keys | variant_keys(definition))
    bits = [b for b in (_path(base, keys, resized), _flows(base, keys)) if b]
    duration = base.get("duration_ns")
    if isinstance(duration, int) and not _touched(keys, "duration"):
        interval = base.get("interval_ns")
        every = f", sampled every {_seconds(interval)}" if interval else ""
        bits.append(f"{_seconds(duration)} runs{every}")
    return "; ".join(bits)


def variant_settings(
    definition: Mapping[str, Any] | None, ctx: KeyContext
) -> list[tuple[str, str]]:
    """`(variant, "bottleneck rate 50Mbps, ...")` for each named variant ("as fixed" for
    one that sets nothing)."""
    if not definition:
        return []
    out = []
    for name, settings in (definition.get("variants") or {}).items():
        if not name:
            continue
        text = ", ".join(
            f"{key_name(k, ctx)} {_written(v, key_label(k, '', ctx).unit)}"
            for k, v in sorted((settings or {}).items())
        )
        out.append((str(name), text or "as fixed"))
    return out


def _written(value: object, unit: str = "") -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int) and unit == "bytes":
        return _size_text(value)
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def swept_keys(definition: Mapping[str, Any] | None) -> set[str]:
    """The keys the sweep varies."""
    return set((definition or {}).get("sweep") or {})


def variant_keys(definition: Mapping[str, Any] | None) -> set[str]:
    """Every key some variant sets."""
    keys: set[str] = set()
    for settings in ((definition or {}).get("variants") or {}).values():
        keys |= set((settings or {}).keys())
    return keys


__all__ = ["fixed_parameters", "swept_keys", "variant_keys", "variant_settings"]
