"""Human names and units for the scenario keys a study sweeps, as figures and tables show them.

A swept key such as `bottleneck.per` or `path.segments.1.rate` is how a study file addresses
a value; a reader of a figure wants "packet error rate" or "satellite link rate (Mbit/s)".
Names come from the key's last part and what it belongs to (the bottleneck, a named path
segment, a flow or a group of flows, the PEP). Units are the ones the study was written in:
a rate swept as `["1Mbps", "4Mbps"]` is shown in Mbit/s, a delay written in ms in ms. Values
keep the text the study used ("4Mbps", "250ms"); numbers are shown with `format_number`.

`KeyContext` carries what a name depends on beyond the key itself: the path's segment names
and the flow entries of the study file (a two-flow study's "flow 0 algorithm" versus the
"algorithm" of a study with one TCP flow entry), built from a stored study revision
(`context_of`). Nothing here imports pandas or matplotlib.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

#: What a key's last part means, as a phrase (without unit).
_LEAF_NAMES: Final[dict[str, str]] = {
    "per": "packet error rate",
    "ber": "bit error rate",
    "return_per": "return-path packet error rate",
    "return_ber": "return-path bit error rate",
    "rate": "rate",
    "return_rate": "return rate",
    "delay": "one-way delay",
    "return_delay": "return one-way delay",
    "queue": "queue",
    "cca": "algorithm",
    "count": "parallel connections",
    "size": "download size",
    "start": "start time",
    "app": "application",
    "mss": "MSS",
    "rwnd": "receive window",
    "initial_window": "initial window",
    "window_scaling": "window scaling",
    "ecn": "ECN",
    "pacing": "pacing",
    "stack": "TCP stack",
    "sack": "SACK",
    "delayed_ack": "delayed ACKs",
    "timestamps": "timestamps",
    "buffer": "PEP buffer",
    "packet_size": "packet size",
    "duration": "run duration",
    "interval": "sampling interval",
    "seed": "seed",
    "pep": "PEP placement",
}

#: Quantities by the unit written in a study: (unit shown, factor from the base value).
#: Base values are what `study.axes` parses them to: bit/s, ms and bytes.
_RATE_UNITS: Final = {
    "bps": ("bit/s", 1.0),
    "kbps": ("kbit/s", 1e-3),
    "mbps": ("Mbit/s", 1e-6),
    "gbps": ("Gbit/s", 1e-9),
    "tbps": ("Tbit/s", 1e-12),
}
_DURATION_UNITS: Final = {"ns": ("ns", 1e6), "us": ("µs", 1e3), "µs": ("µs", 1e3)}
_DURATION_UNITS_MS: Final = {"ms": ("ms", 1.0), "s": ("s", 1e-3), "min": ("min", 1e-3 / 60)}
_SIZE_UNITS: Final = {
    "b": ("bytes", 1.0),
    "kb": ("kB", 1e-3),
    "mb": ("MB", 1e-6),
    "gb": ("GB", 1e-9),
    "kib": ("KiB", 1 / 2**10),
    "mib": ("MiB", 1 / 2**20),
    "gib": ("GiB", 1 / 2**30),
}
_UNIT_OF_TEXT: Final = re.compile(r"^\s*[+-]?[\d.]+(?:[eE][+-]?\d+)?\s*([A-Za-zµ/]*)\s*$")
#: Keys whose plain numbers are byte counts.
_BYTE_KEYS: Final = ("mss", "rwnd", "size", "buffer", "packet_size")


@dataclass(frozen=True)
class FlowEntry:
    """One `[[flows]]` entry of a study file: where its flows start among the normalized
    flows, how many there are and what they run."""

    first: int
    count: int
    app: str


@dataclass(frozen=True)
class KeyContext:
    """What naming a key needs beyond the key: segment names by index, the study file's
    flow entries (empty when unknown), and the values the study wrote for each key (sweep
    lists and variant settings), which choose the unit."""

    segments: tuple[str, ...] = ()
    flow_entries: tuple[FlowEntry, ...] = ()
    written: Mapping[str, tuple[object, ...]] = field(default_factory=dict)

    @property
    def tcp_entries(self) -> int:
        return sum(1 for e in self.flow_entries if e.app != "cbr")


@dataclass(frozen=True)
class KeyLabel:
    """A key as a reader sees it: `name` ("packet error rate"), `unit` ("Mbit/s", or "")
    and the factor from the base value (bit/s, ms, bytes, or the plain number) to `unit`."""

    key: str
    name: str
    unit: str = ""
    factor: float = 1.0

    @property
    def text(self) -> str:
        """`name (unit)` for an axis label."""
        return f"{self.name} ({self.unit})" if self.unit else self.name


def _flow_phrase(index: int, ctx: KeyContext) -> str:
    """ "flow 3" or "flows 0-5" for the study file's flow entry `index`; empty when the study
    has one TCP flow entry (then "the algorithm" is unambiguous)."""
    entries = ctx.flow_entries
    if index < len(entries):
        entry = entries[index]
        if ctx.tcp_entries <= 1 and entry.app != "cbr":
            return ""
        if entry.count == 1:
            return f"flow {entry.first}"
        return f"flows {entry.first}-{entry.first + entry.count - 1}"
    return f"flow {index}" if not entries else ""


def _leaf(part: str) -> str:
    return _LEAF_NAMES.get(part, part.replace("_", " "))


def key_name(key: str, ctx: KeyContext | None = None) -> str:
    """The phrase for a swept key, without unit: `bottleneck.per` → "packet error rate",
    `path.segments.1.rate` → "satellite link rate", `flows.1.cca` → "flow 1 algorithm" (in
    a study with several TCP flow entries), `flows.0.pep.cca` → "PEP-leg algorithm"."""
    ctx = ctx or KeyContext()
    parts = key.split(".")
    leaf = parts[-1]
    if key == "variant":
        return "variant"
    if parts[0] == "bottleneck" and len(parts) == 2:
        if leaf in ("per", "ber", "return_per", "return_ber"):
            return _leaf(leaf)  # the loss of the one bottleneck needs no qualifier
        return f"bottleneck {_leaf(leaf)}"
    if parts[0] == "access" and len(parts) == 2:
        return f"access-link {_leaf(leaf)}"
    if parts[:2] == ["path", "segments"] and len(parts) >= 4 and parts[2].isdigit():
        index = int(parts[2])
        name = ctx.segments[index] if index < len(ctx.segments) else f"segment {index}"
        what = _leaf(leaf)
        return f"{name} link {what}" if leaf in ("rate", "return_rate") else f"{name} {what}"
    if key == "path.pep":
        return "PEP placement"
    if parts[0] == "flows" and len(parts) >= 3 and parts[1].isdigit():
        who = _flow_phrase(int(parts[1]), ctx)
        rest = parts[2:]
        if rest[0] == "pep":
            what = "PEP-leg " + _leaf(rest[-1]) if len(rest) > 1 else "PEP"
        elif rest[0] == "cca_params" and len(rest) > 1:
            what = f"parameter {rest[-1]}"
        else:
            what = _leaf(rest[-1])
        return f"{who} {what}".strip()
    return _leaf(leaf) if len(parts) == 1 else " ".join(_leaf(p) for p in parts if p)


def _written_unit(values: Iterable[object]) -> str | None:
    """The unit most of the written values carry ("Mbps" for ["1Mbps", "4Mbps"])."""
    units: list[str] = []
    for v in values:
        if isinstance(v, str):
            m = _UNIT_OF_TEXT.match(v)
            if m and m.group(1):
                units.append(m.group(1))
    if not units:
        return None
    return max(set(units), key=units.count)


def key_label(key: str, kind: str, ctx: KeyContext | None = None) -> KeyLabel:
    """A key's name and unit; `kind` is what `study.axes` made of its values: "bit/s",
    "ms", "bytes" for quantities written with units, "" for plain numbers or text."""
    ctx = ctx or KeyContext()
    name = key_name(key, ctx)
    unit = _written_unit(ctx.written.get(key, ()))
    low = (unit or "").lower().replace("bit/s", "bps")
    if kind == "bit/s":
        shown, factor = _RATE_UNITS.get(low, ("Mbit/s", 1e-6))
        return KeyLabel(key, name, shown, factor)
    if kind == "ms":
        shown, factor = _DURATION_UNITS_MS.get(low) or _DURATION_UNITS.get(low) or ("ms", 1.0)
        return KeyLabel(key, name, shown, factor)
    if kind == "bytes":
        shown, factor = _SIZE_UNITS.get(low, ("bytes", 1.0))
        return KeyLabel(key, name, shown, factor)
    if key.rsplit(".", 1)[-1] in _BYTE_KEYS:
        return KeyLabel(key, name, "bytes", 1.0)
    return KeyLabel(key, name)


def format_number(value: float, digits: int = 3) -> str:
    """`digits` significant digits, without a float's noise: 2.0571e-06 → "2.06e-06", 0.0001
    → "0.0001", 1e-05 → "1e-05", 64 → "64", 0 → "0"."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exp = text.split("e")
        mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
        return f"{mantissa}e{exp}"
    return text


def format_value(value: object, label: KeyLabel | None = None, digits: int = 3) -> str:
    """A key's value for a tick, legend or table: text as written; numbers in `label`'s unit
    with `digits` significant digits (the unit is in the axis label, not on every tick)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int | float):
        v = float(value)
        if v != v:
            return "-"
        return format_number(v * (label.factor if label else 1.0), digits)
    return str(value)


def context_of(info: Mapping[str, Any]) -> KeyContext:
    """The naming context of a stored study revision (`Store.revision_info`): its base
    scenario's segment names, the flow entries of its study file and the values its sweep
    and variants wrote."""
    definition = info.get("definition") or {}
    base = definition.get("base_scenario") or {}
    segments = tuple(
        str(s.get("name") or f"segment {i}")
        for i, s in enumerate((base.get("path") or {}).get("segments") or [])
    )
    written: dict[str, list[object]] = {}
    for key, values in (definition.get("sweep") or {}).items():
        if isinstance(values, list):
            written.setdefault(key, []).extend(values)
    for settings in (definition.get("variants") or {}).values():
        for key, value in (settings or {}).items():
            written.setdefault(key, []).append(value)
    return KeyContext(
        segments=segments,
        flow_entries=_flow_entries(info.get("file_text"), base),
        written={k: tuple(v) for k, v in written.items()},
    )


def _flow_entries(text: object, base: Mapping[str, Any]) -> tuple[FlowEntry, ...]:
    """The `[[flows]]` entries of a study file (count and app of each), placed on the
    normalized flows; the normalized flows one by one when the file is not stored."""
    raw: Sequence[Any] = ()
    if isinstance(text, str):
        try:
            raw = tomllib.loads(text).get("flows") or ()
        except tomllib.TOMLDecodeError:
            raw = ()
    entries: list[FlowEntry] = []
    first = 0
    for entry in raw if isinstance(raw, list) else ():
        if not isinstance(entry, dict):
            return ()
        count = entry.get("count", 1)
        count = count if isinstance(count, int) and count > 0 else 1
        entries.append(FlowEntry(first, count, str(entry.get("app", "bulk"))))
        first += count
    if entries:
        return tuple(entries)
    flows = base.get("flows") or []
    return tuple(
        FlowEntry(i, 1, str((f.get("app") or {}).get("kind", "bulk"))) for i, f in enumerate(flows)
    )


def reference_of(key: str, ctx: KeyContext) -> str | None:
    """The other key a swept key refers to with `"=OTHER"` (`"flows.1.cca" = ["cubic",
    "=flows.0.cca"]`), if it does."""
    for v in ctx.written.get(key, ()):
        if isinstance(v, str) and v.startswith("="):
            return v[1:]
    return None
