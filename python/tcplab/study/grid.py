"""Study files: a scenario plus a `[sweep]` table, expanded into runs.

```toml
[study]                                  # optional
name = "geo-leaky"
description = "..."
base_seed = 1                            # seeds are base_seed .. base_seed + repetitions - 1

[sweep]
"bottleneck.per" = { log = [1e-6, 5e-2], points = 16 }
"flows.0.cca" = ["reno", "cubic"]
repetitions = 10

[[sweep.variants]]                       # optional named override sets: one more grid axis
name = "4mbps"
[[sweep.variants]]
name = "50-20mbps"
set = { "bottleneck.rate" = "50Mbps", "bottleneck.return_rate" = "20Mbps" }
```

The grid is the Cartesian product of the axes (and variants) times the repetitions. Every
point is validated like a scenario with overrides, and a bad value is reported under the study
key that set it (`sweep.<key>` or `sweep.variants[i].set.<key>`). A run is identified by
(scenario hash, seed, model version): the hash covers the whole normalized scenario without
its seed and name, so an unchanged grid point maps to the same key in every session — which
is what makes an interrupted sweep resumable. The study's own identity is its effective
definition (`Study.definition`): a study name can have several numbered revisions in one
database (docs/results.md "Identity").
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError, field_error, overridden_key
from ..files import MAX_SCENARIO_FILE_BYTES, read_text
from ..input_limits import MAX_POINTS, MAX_REPETITIONS
from ..scenario.identity import scenario_hash as scenario_hash
from ..scenario.load import load_scenario, read_toml
from ..scenario.model import Scenario
from ..scenario.normalize import normalize
from .paper import Paper

if TYPE_CHECKING:
    from ..catalogue import CcaInfo
    from .store import Member, RevisionPlan, RunKey


@dataclass(frozen=True)
class Axis:
    """One swept key and its values, in order."""

    path: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class RunSpec:
    """One run of a study: where it sits in the grid and what the core receives."""

    study: str
    variant: str
    params: dict[str, Any]
    seed: int
    scenario_hash: str
    normalized: dict[str, Any] = field(repr=False)
    scenario_toml: str = field(repr=False, default="")
    #: the simulator's model version the run is (to be) computed with
    model_version: int | None = None
    #: each `[[flows]]` table's count (`runner.flow_tables`): how the core's errors number flows
    flow_tables: tuple[int, ...] = ()

    @property
    def key(self) -> RunKey:
        from .store import RunKey

        return RunKey(self.scenario_hash, self.seed, self.model_version)

    @property
    def run_id(self) -> str:
        return self.key.run_id

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True)


@dataclass(frozen=True)
class Study:
    name: str
    description: str
    base: dict[str, Any]
    axes: tuple[Axis, ...]
    variants: tuple[Variant, ...]
    repetitions: int
    base_seed: int
    text: str = ""
    #: where the study file is: trace files it names are relative to it
    base_dir: Path | None = None
    #: the paper the study reproduces (`[study.paper]`; not part of the definition)
    paper: Paper | None = None

    @property
    def n_points(self) -> int:
        n = len(self.variants)
        for axis in self.axes:
            n *= len(axis.values)
        return n

    @property
    def n_runs(self) -> int:
        return self.n_points * self.repetitions

    def points(self) -> Iterator[tuple[Variant, dict[str, Any]]]:
        """Grid points in a stable order: variants outermost, then the axes as written.
        A text value `"=other.key"` takes the value of another swept key at the same point
        (e.g. `"flows.1.cca" = ["cubic", "=flows.0.cca"]`: the competitor is the flow itself).
        """
        for variant in self.variants:
            for combo in itertools.product(*(axis.values for axis in self.axes)):
                params = {axis.path: value for axis, value in zip(self.axes, combo, strict=True)}
                yield variant, {k: _resolve(params, k, v) for k, v in params.items()}

    def runs(self, model_version: int | None = None) -> Iterator[RunSpec]:
        """Every run, validated; seeds vary fastest. `model_version` goes into each run's key
        (None: the core's)."""
        if model_version is None:
            from .. import _core

            model_version = _core.model_version()
        from ..catalogue import ccas
        from ..runner import flow_tables

        # read from the core once for the grid, not once per point (~1.4 ms each)
        catalogue = ccas()
        for variant, params in self.points():
            pairs = [*variant.overrides, *params.items()]
            scenario = _validate_point(self, variant, pairs, catalogue)
            normalized = normalize(scenario)
            digest = scenario_hash(normalized)
            tables = flow_tables(scenario)
            for rep in range(self.repetitions):
                seed = self.base_seed + rep
                run = dict(normalized)
                run["seed"] = seed
                yield RunSpec(
                    self.name,
                    variant.name,
                    params,
                    seed,
                    digest,
                    run,
                    self.text,
                    model_version,
                    tables,
                )

    def definition(self) -> dict[str, Any]:
        """The effective definition: everything that decides which runs the study has — the
        base scenario after every override (normalized, without name and seed), the swept
        keys and their values, the variants, repetitions and base seed. Not the description,
        the name or the file's comments."""
        base = normalize(load_scenario(self.base, base_dir=self.base_dir))
        return {
            "base_scenario": {k: v for k, v in base.items() if k not in ("seed", "name")},
            "sweep": {axis.path: list(axis.values) for axis in self.axes},
            "variants": {v.name: dict(v.overrides) for v in self.variants},
            "repetitions": self.repetitions,
            "base_seed": self.base_seed,
        }

    def definition_json(self) -> str:
        return json.dumps(self.definition(), sort_keys=True, separators=(",", ":"), default=str)

    def revision_plan(self, model_version: int) -> RevisionPlan:
        """What the store needs to find or make this study's revision."""
        from .store import RevisionPlan

        text = self.definition_json()
        return RevisionPlan(
            study=self.name,
            description=self.description,
            file_text=self.text,
            definition_json=text,
            definition_hash=hashlib.sha256(text.encode()).hexdigest()[:16],
            model_version=model_version,
            n_runs=self.n_runs,
        )


def members(specs: Sequence[RunSpec]) -> list[Member]:
    """A revision's grid as the store records it."""
    from .store import Member

    return [Member(spec.run_id, spec.variant, spec.params_json) for spec in specs]


def _resolve(params: Mapping[str, Any], key: str, value: Any) -> Any:
    if isinstance(value, str) and value.startswith("="):
        ref = value[1:]
        if ref not in params or ref == key:
            others = ", ".join(f"={k}" for k in params if k != key) or "none"
            raise field_error(f"sweep.{key}", value, "refers to no other swept key", others)
        target = params[ref]
        if isinstance(target, str) and target.startswith("="):
            raise field_error(f"sweep.{key}", value, "a reference cannot point to a reference")
        return target
    return value


def _validate_point(
    study: Study,
    variant: Variant,
    pairs: Sequence[tuple[str, Any]],
    catalogue: tuple[CcaInfo, ...] | None = None,
) -> Scenario:
    try:
        return load_scenario(study.base, pairs, base_dir=study.base_dir, catalogue=catalogue)
    except ScenarioError as exc:
        message = str(exc)
        # The loader names an override `overrides["KEY"]`; in a study the key came from the file.
        index = next((i for i, v in enumerate(study.variants) if v == variant), 0)
        variant_keys = {k for k, _ in variant.overrides}
        found = overridden_key(message)
        if found:
            key = _override_key(found[0], [k for k, _ in pairs])
            where = (
                f"sweep.variants[{index}].set.{key}"
                if key in variant_keys and key not in {a.path for a in study.axes}
                else f"sweep.{key}"
            )
            message = where + message[found[1] :]
        suffix = f" (variant {variant.name})" if variant.name else ""
        raise ScenarioError(f"{message}{suffix}") from None


def _override_key(reported: str, keys: Sequence[str]) -> str:
    """The study key a loader message is about: the loader may spell list indices as
    `flows[0]` where the study wrote `flows.0`."""
    dotted = re.sub(r"\[(\d+)\]", r".\1", reported)
    for key in keys:
        if dotted == key or dotted.startswith(key + ".") or key.startswith(dotted + "."):
            return key
    return dotted


def _number(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise field_error(where, value, "must be a number")
    return float(value)


def _axis_values(path: str, spec: Any) -> tuple[Any, ...]:
    where = f"sweep.{path}"
    if isinstance(spec, list):
        if not spec:
            raise field_error(where, spec, "an empty list sweeps nothing", "at least one value")
        return tuple(spec)
    if not isinstance(spec, dict):
        raise field_error(
            where,
            spec,
            "must be a list or a range table",
            "[v1, v2, ...], {log = [a, b], points = n}, {lin = [a, b], points = n}",
        )
    kinds = [k for k in ("log", "lin") if k in spec]
    unknown = set(spec) - {"log", "lin", "points"}
    if len(kinds) != 1 or unknown or "points" not in spec:
        raise field_error(
            where,
            spec,
            "a range table needs exactly one of log/lin and points",
            "{log = [a, b], points = n} or {lin = [a, b], points = n}",
        )
    kind = kinds[0]
    bounds = spec[kind]
    if not isinstance(bounds, list) or len(bounds) != 2:
        raise field_error(f"{where}.{kind}", bounds, "must be [start, stop]")
    lo, hi = (_number(f"{where}.{kind}", b) for b in bounds)
    points = spec["points"]
    if isinstance(points, bool) or not isinstance(points, int) or not 1 <= points <= MAX_POINTS:
        raise field_error(f"{where}.points", points, "out of range", f"1 ..= {MAX_POINTS}")
    if points == 1:
        return (lo,)
    if kind == "log":
        if lo <= 0 or hi <= 0:
            raise field_error(f"{where}.log", bounds, "log ranges need positive bounds")
        a, b = math.log10(lo), math.log10(hi)
        values = [10 ** (a + (b - a) * i / (points - 1)) for i in range(points)]
        # Round to 6 significant digits so 1e-5 stays 1e-05, not 9.999999999999999e-06.
        return tuple(float(f"{v:.6g}") for v in values)
    step = (hi - lo) / (points - 1)
    return tuple(float(f"{lo + step * i:.12g}") for i in range(points))


def _no_swept_seed(axes: Sequence[Axis], variants: Sequence[Variant]) -> None:
    """Each run's seed is the study's (base_seed + repetition): a seed set by the grid would be
    replaced, so it is refused rather than ignored."""
    allowed = "[study] base_seed = N and [sweep] repetitions = M (seeds N, N+1, ...)"
    problem = "a study's runs take their seeds from base_seed and repetitions"
    for axis in axes:
        if re.sub(r"\s", "", axis.path) == "seed":
            raise field_error(f"sweep.{axis.path}", list(axis.values), problem, allowed)
    for index, variant in enumerate(variants):
        for key, value in variant.overrides:
            if str(key).strip() == "seed":
                raise field_error(f"sweep.variants[{index}].set.seed", value, problem, allowed)


def _variants(raw: Any) -> tuple[Variant, ...]:
    if raw is None:
        return (Variant(""),)
    if not isinstance(raw, list) or not raw:
        raise field_error("sweep.variants", raw, "must be an array of tables", "[[sweep.variants]]")
    out: list[Variant] = []
    names: set[str] = set()
    for i, entry in enumerate(raw):
        where = f"sweep.variants[{i}]"
        if not isinstance(entry, dict):
            raise field_error(where, entry, "must be a table")
        unknown = set(entry) - {"name", "set"}
        if unknown:
            key = sorted(unknown)[0]
            raise field_error(f"{where}.{key}", entry[key], "unknown key", "name, set")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise field_error(f"{where}.name", name, "a variant needs a non-empty name")
        if name in names:
            raise field_error(f"{where}.name", name, "duplicate variant name")
        names.add(name)
        overrides = entry.get("set", {})
        if not isinstance(overrides, dict):
            raise field_error(f"{where}.set", overrides, "must be a table of key paths")
        out.append(Variant(name, tuple(overrides.items())))
    return tuple(out)


def study_from_dict(
    raw: Mapping[str, Any],
    *,
    default_name: str = "study",
    text: str = "",
    base_dir: Path | None = None,
) -> Study:
    """Split a study dict into its base scenario and sweep; validates the sweep's shape and
    the base scenario (so mistakes surface before any run starts)."""
    data = dict(raw)
    meta = data.pop("study", {}) or {}
    sweep = data.pop("sweep", {}) or {}
    if not isinstance(meta, dict):
        raise field_error("study", meta, "must be a table")
    if not isinstance(sweep, dict):
        raise field_error("sweep", sweep, "must be a table")
    unknown_meta = set(meta) - {"name", "description", "base_seed", "paper"}
    if unknown_meta:
        key = sorted(unknown_meta)[0]
        raise field_error(
            f"study.{key}", meta[key], "unknown key", "name, description, base_seed, paper"
        )
    paper = Paper.from_toml(meta["paper"]) if "paper" in meta else None
    name = meta.get("name", data.get("name", default_name))
    if not isinstance(name, str) or not name:
        raise field_error("study.name", name, "must be a non-empty string")
    base_seed = meta.get("base_seed", data.get("seed", 1))
    if isinstance(base_seed, bool) or not isinstance(base_seed, int) or base_seed < 0:
        raise field_error("study.base_seed", base_seed, "must be a non-negative integer")
    reps = sweep.pop("repetitions", 1)
    if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= MAX_REPETITIONS:
        raise field_error("sweep.repetitions", reps, "out of range", f"1 ..= {MAX_REPETITIONS}")
    variants = _variants(sweep.pop("variants", None))
    axes = tuple(Axis(str(path), _axis_values(str(path), spec)) for path, spec in sweep.items())
    _no_swept_seed(axes, variants)
    data.setdefault("name", name)
    study = Study(
        name,
        str(meta.get("description", "")),
        data,
        axes,
        variants,
        reps,
        base_seed,
        text,
        base_dir,
        paper,
    )
    from ..limits import LIMITS

    if study.n_runs > LIMITS.max_runs:
        raise field_error("sweep", study.n_runs, "too many runs", f"at most {LIMITS.max_runs}")
    load_scenario(data, base_dir=base_dir)  # the base must be valid on its own
    return study


def load_study(path: str | Path) -> Study:
    """Read a study (or plain scenario) TOML file."""
    p = Path(path)
    raw = read_toml(p)
    text = read_text(p, MAX_SCENARIO_FILE_BYTES)
    return study_from_dict(raw, default_name=p.stem, text=text, base_dir=p.parent)
