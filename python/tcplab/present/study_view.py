"""A stored study revision as its figures see it: the runs with a numeric x axis, the human
names and units of its swept keys, what it held fixed, and which runs a time-series figure
shows (`pick_runs`, with the user's `--run`, `--seed` and `--point KEY=VALUE` choices).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError
from ..study.axes import StudyAxes, is_error_rate, study_axes
from ..study.store import Store, param_columns
from .describe import fixed_parameters, swept_keys, variant_settings
from .labels import (
    KeyContext,
    KeyLabel,
    context_of,
    format_number,
    format_value,
    key_label,
    reference_of,
)

LINE = "line"


@dataclass(frozen=True)
class Selection:
    """Which runs a time-series figure shows: a run id (or its unique prefix), a seed, and
    `KEY=VALUE` pairs fixing swept keys (`variant` included). Empty: a representative run
    per line (the median value of the x key, the lowest seed)."""

    run: str | None = None
    seed: int | None = None
    point: tuple[tuple[str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return self.run is None and self.seed is None and not self.point


@dataclass
class StudyView:
    study: str
    revision: int
    runs: pd.DataFrame  # the x key as numbers in its base unit, a `line` label per run
    axes: StudyAxes
    ctx: KeyContext
    definition: Mapping[str, Any] | None
    labels: dict[str, KeyLabel] = field(default_factory=dict)
    #: what the figures of one report share, computed or read once: the grid points of
    #: `runs` and the series files of the runs shown
    _points: pd.DataFrame | None = field(default=None, repr=False)
    _series: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def points(self) -> pd.DataFrame:
        """The grid points of `runs` (`aggregate.aggregate`), computed once."""
        if self._points is None:
            from ..study.aggregate import aggregate

            self._points = aggregate(self.runs)
        return self._points

    def series(self, store: Store, run: Mapping[str, Any]) -> pd.DataFrame:
        """The series of `run` (a row of `runs`: `Store.series`), read once."""
        run_id = str(run["run_id"])
        if run_id not in self._series:
            file = run.get("series_file")
            self._series[run_id] = store.series(run_id, file if isinstance(file, str) else None)
        return self._series[run_id]

    @property
    def x(self) -> str | None:
        """The numeric x key, when it takes more than one value."""
        x = self.axes.x
        return x if x is not None and self.runs[x].nunique(dropna=True) > 1 else None

    @property
    def multi_flow(self) -> bool:
        return bool((self.runs["n_flows"] > 1).any()) if "n_flows" in self.runs else False

    @property
    def variants(self) -> list[str]:
        return sorted(v for v in self.runs["variant"].dropna().unique().tolist() if v) or [""]

    def label(self, key: str) -> KeyLabel:
        if key not in self.labels:
            kind = self.axes.x_unit if key == self.axes.x else ""
            self.labels[key] = key_label(key, kind, self.ctx)
        return self.labels[key]

    @property
    def legend_title(self) -> str:
        """The names of the keys a line label is made of, in its order."""
        return ", ".join(self.label(k).text for k in self.axes.lines) or ""

    def line_of(self, row: Mapping[str, Any]) -> str:
        """A line's legend entry: its keys' values, in the order of `legend_title`."""
        parts = [self.value_text(row, k) for k in self.axes.lines]
        return ", ".join(parts) if parts else "all runs"

    def value_text(self, row: Mapping[str, Any], key: str) -> str:
        """A key's value in a row; "same as flow 0" where the study set it with "=OTHER"
        (`"flows.1.cca" = ["cubic", "=flows.0.cca"]`) rather than by a value it lists."""
        value = row[key]
        other = reference_of(key, self.ctx)
        written = self.ctx.written.get(key, ())
        if other is not None and other in row and row[other] == value and value not in written:
            name = self.label(other).name
            whose = "the algorithm" if name == "algorithm" else name.removesuffix(" algorithm")
            return f"same as {whose}"
        return format_value(value, self.label(key))

    def format_x(self, v: object) -> str:
        """An x value in the axis unit: "1e-05", "4" (Mbit/s)."""
        x = self.axes.x
        return format_value(v, self.label(x)) if x else str(v)

    def x_text(self, v: object) -> str:
        """`packet error rate = 1e-05`, `satellite link rate = 4 Mbit/s`."""
        x = self.axes.x
        if x is None:
            return ""
        lab = self.label(x)
        unit = f" {lab.unit}" if lab.unit else ""
        return f"{lab.name} = {self.format_x(v)}{unit}"

    def fixed_text(self) -> str:
        """What the sweep held fixed, in the base scenario (a variant changes what
        `variants_text` lists for it)."""
        return fixed_parameters(self.definition, swept_keys(self.definition))

    def variants_text(self) -> str:
        pairs = variant_settings(self.definition, self.ctx)
        return "; ".join(f"{name}: {text}" for name, text in pairs)

    def seeds_text(self, seeds: Sequence[int]) -> str:
        s = sorted({int(v) for v in seeds})
        if not s:
            return ""
        if len(s) == 1:
            return f"seed {s[0]}"
        if s == list(range(s[0], s[-1] + 1)):
            return f"seeds {s[0]} to {s[-1]}"
        return "seeds " + ", ".join(str(v) for v in s)


def view_of(runs: pd.DataFrame, info: Mapping[str, Any]) -> StudyView:
    """The view of one study revision's runs (`Store.runs`) with its record
    (`Store.revision_info`)."""
    df, axes = study_axes(runs)
    ctx = context_of(info)
    view = StudyView(
        study=str(info.get("study") or (df["study"].iloc[0] if "study" in df else "")),
        revision=int(info.get("revision") or (df["revision"].iloc[0] if "revision" in df else 0)),
        runs=df,
        axes=axes,
        ctx=ctx,
        definition=info.get("definition"),
    )
    # Only the columns a line label reads (the line keys and those they may refer to): the
    # runs' table is wide, and converting all of it to rows cost more than the labels.
    lines = axes.lines
    read = [*lines, *(o for k in lines if (o := reference_of(k, ctx)) is not None)]
    rows = df[[c for c in dict.fromkeys(read) if c in df]].to_dict("records")
    df[LINE] = [view.line_of(r) for r in rows] if len(df) else []
    return view


def log_x(values: Sequence[float], key: str | None) -> bool:
    """An error rate, or positive values spanning more than two decades, go on a log axis."""
    pos = [v for v in values if v > 0]
    if key is not None and is_error_rate(key):
        return len(pos) > 0
    return len(pos) == len(values) and len(pos) > 1 and max(pos) / min(pos) > 100


def zero_position(values: Sequence[float]) -> float | None:
    """Where x = 0 is drawn on a log axis: one step of the swept values' ratio below the
    smallest positive one (at least a decade), so the break between them is visible."""
    if not any(v == 0 for v in values):
        return None
    pos = sorted({v for v in values if v > 0})
    if not pos:
        return None
    ratio = pos[1] / pos[0] if len(pos) > 1 else 10.0
    return pos[0] / max(ratio, 10.0)


def _matches(column: pd.Series, value: str) -> pd.Series:
    """Rows whose value of a swept key is `value` as written ("4Mbps", "1e-3", "cubic")."""
    text = column.astype(str)
    hit = text == value
    try:
        number = float(value)
    except ValueError:
        return hit
    numeric = pd.to_numeric(column, errors="coerce")
    return hit | numeric.apply(
        lambda v: isinstance(v, float) and math.isfinite(v) and math.isclose(v, number)
    )


def _allowed(column: pd.Series) -> str:
    values = sorted({str(v) for v in column.dropna().tolist()}, key=natural_order)
    return ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")


def natural_order(text: str) -> tuple[float, str]:
    try:
        return (float(text), text)
    except ValueError:
        return (math.inf, text)


def select(raw: pd.DataFrame, view: StudyView, sel: Selection) -> pd.DataFrame:
    """The runs of `view` that `sel` allows (refusing a key, value or run it does not know).
    Matching uses the values as stored (`raw`: units as written)."""
    keep = pd.Series(True, index=view.runs.index)
    keys = ["variant", *param_columns(raw)]
    for key, value in sel.point:
        if key not in keys:
            raise ScenarioError(
                f"--point {key}={value}: {key!r} is not swept in study {view.study!r}; "
                f"allowed: {', '.join(keys)}"
            )
        hit = _matches(raw[key], value)
        if not hit.any():
            raise ScenarioError(
                f"--point {key}={value}: no run has {key} = {value}; allowed: {_allowed(raw[key])}"
            )
        keep &= hit.to_numpy()
    if sel.seed is not None:
        hit = raw["seed"] == sel.seed
        if not hit.any():
            raise ScenarioError(
                f"--seed = {sel.seed}: no run of study {view.study!r} has it; allowed: "
                f"{_allowed(raw['seed'])}"
            )
        keep &= hit.to_numpy()
    if sel.run is not None:
        hit = raw["run_id"].astype(str).str.startswith(sel.run)
        ids = raw.loc[hit, "run_id"].unique()
        if len(ids) != 1:
            problem = "no run has that id" if len(ids) == 0 else f"{len(ids)} runs match"
            raise ScenarioError(
                f"--run = {sel.run!r}: {problem}; allowed: a run id of study {view.study!r} "
                "(tcplab results DB --table runs lists them) or its unique prefix"
            )
        keep &= hit.to_numpy()
    chosen = view.runs[keep.to_numpy()]
    if chosen.empty:
        raise ScenarioError(
            "--point/--seed/--run: no run of study "
            f"{view.study!r} matches all of them together; allowed: a combination that exists "
            "(tcplab results DB --table runs lists the runs)"
        )
    return chosen


@dataclass(frozen=True)
class Picked:
    """The runs a time-series figure shows, and how they were chosen, in words."""

    runs: pd.DataFrame
    how: str


def pick_runs(raw: pd.DataFrame, view: StudyView, sel: Selection) -> Picked:
    """One run per (variant, line): among the runs `sel` allows, those at the median value
    of the x key (unless `sel` fixes it) and the lowest seed (unless `sel` fixes it)."""
    df = select(raw, view, sel)
    fixed = {k for k, _ in sel.point}
    notes: list[str] = []
    x = view.x
    if x is not None and x not in fixed and sel.run is None:
        xs = sorted(df[x].dropna().unique())
        if len(xs) > 1:
            mid = xs[len(xs) // 2]
            df = df[df[x] == mid]
            notes.append(
                f"{view.x_text(mid)} (the median of the swept values; choose another with "
                f"--point {x}=VALUE)"
            )
        elif xs:
            notes.append(view.x_text(xs[0]))
    elif x is not None and len(df[x].dropna().unique()) == 1:
        notes.append(view.x_text(df[x].dropna().iloc[0]))
    order = ["variant", LINE, "seed"]
    df = df.sort_values(order, na_position="first")
    seeds = sorted(df["seed"].unique())
    chosen = df.groupby(["variant", LINE], dropna=False, sort=False).head(1)
    if sel.seed is not None or sel.run is not None:
        notes.append(view.seeds_text(chosen["seed"].tolist()))
    elif len(seeds) > 1:
        notes.append(
            f"{view.seeds_text(chosen['seed'].tolist())} (the lowest of "
            f"{view.seeds_text(seeds)}; choose another with --seed N)"
        )
    else:
        notes.append(view.seeds_text(seeds))
    for key, value in sel.point:
        if key != "variant" and key != x:
            notes.append(f"{view.label(key).name} = {value}")
    return Picked(chosen, "; ".join(n for n in notes if n))


def n_text(ns: Sequence[int]) -> str:
    low, high = min(ns), max(ns)
    return f"n = {low}" if low == high else f"n = {low} to {high}"


def number(v: float, digits: int = 3) -> str:
    return format_number(v, digits)


def plain_number(v: float) -> str:
    """A number for a note: 94890.2 → "94,890", 12.345 → "12.3", 0.00012 → "0.00012"."""
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return format_number(v, 3)
