"""`tcplab validate`: the simulator and the kernel side by side.

For each algorithm the kernel offers (and the simulator knows), every TCP flow of the
scenario (and every PEP leg) is set to it, the scenario is simulated and emulated, and the
two are compared flow by flow: goodput, mean RTT and retransmissions, as the ratio
emulated / simulated and the difference emulated - simulated. Goodput rows of a lossy path
carry the closed-form models too (Mathis, Padhye, and CUBIC's response function for CUBIC
flows; `theory.flow_bounds`).

`tcplab validate --matrix` (`matrix`) runs a built-in grid of such comparisons instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..catalogue import ccas
from ..results.parse import FlowResult, RunResult
from ..results.theory import flow_bounds
from ..runner import run_scenario
from ..scenario.load import Overrides, ScenarioSource, load_scenario, override_pairs, raw_scenario
from ..scenario.normalize import normalize
from . import features
from .emulate import emulate_normalized
from .errors import MissingFeature
from .options import EmulateOptions


@dataclass(frozen=True)
class Agreement:
    """One metric of one flow under one algorithm."""

    cca: str
    flow: int
    metric: str
    unit: str
    simulated: float | None
    emulated: float | None
    #: closed-form models of this metric, in its unit (goodput: Mathis, Padhye, CUBIC)
    models: Mapping[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.simulated is None or self.emulated is None or self.simulated == 0:
            return None
        return self.emulated / self.simulated

    @property
    def difference(self) -> float | None:
        if self.simulated is None or self.emulated is None:
            return None
        return self.emulated - self.simulated

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "cca": self.cca,
            "flow": self.flow,
            "metric": self.metric,
            "unit": self.unit,
            "simulated": self.simulated,
            "emulated": self.emulated,
            "ratio": self.ratio,
            "difference": self.difference,
            "models": dict(self.models),
        }


def comparable_ccas(requested: Sequence[str] | None = None) -> list[str]:
    """Algorithms both the kernel and the simulator have (in the kernel's order), or the
    requested ones (each must be in both)."""
    kernel = features.kernel_ccas()
    simulated = {info.name for info in ccas()}
    both = [name for name in kernel if name in simulated]
    if requested is None:
        return both
    for name in requested:
        if name not in both:
            raise MissingFeature(
                f'--ccas "{name}": not offered by both the kernel and the simulator; '
                f"allowed: {', '.join(both) or 'none'}"
            )
    return list(requested)


def _with_cca(raw: Mapping[str, Any], cca: str) -> list[tuple[str, Any]]:
    """Overrides that give every TCP flow (and its PEP legs) algorithm `cca`."""
    pairs: list[tuple[str, Any]] = []
    for i, flow in enumerate(raw.get("flows", [])):
        if flow.get("app", "bulk") == "cbr":
            continue
        pairs.append((f"flows.{i}.cca", cca))
        if "cca_params" in flow:
            pairs.append((f"flows.{i}.cca_params", {}))
        if isinstance(flow.get("pep"), Mapping) and "cca" in flow["pep"]:
            pairs.append((f"flows.{i}.pep.cca", cca))
    return pairs


def compare(cca: str, simulated: RunResult, emulated: RunResult) -> list[Agreement]:
    """Goodput (Mbit/s), mean RTT (ms) and retransmissions of each TCP flow."""
    rows = []
    for sim, emu in zip(simulated.flows, emulated.flows, strict=True):
        if getattr(sim, "kind", "tcp") == "cbr":
            continue
        rows += _flow_rows(cca, sim, emu, goodput_models(simulated.scenario, sim.id))
    return rows


def goodput_models(scenario: Mapping[str, Any], flow_id: int) -> dict[str, float]:
    """The closed-form goodput models (Mbit/s) that apply to a flow: none without loss."""
    bounds = flow_bounds(dict(scenario), flow_id)
    named = {"Mathis": bounds.mathis_bps, "Padhye": bounds.padhye_bps, "CUBIC": bounds.cubic_bps}
    return {name: value / 1e6 for name, value in named.items() if value is not None}


def _flow_rows(
    cca: str, sim: FlowResult, emu: FlowResult, models: Mapping[str, float]
) -> list[Agreement]:
    def ms(value: float | None) -> float | None:
        return None if value is None else value / 1e6

    return [
        Agreement(
            cca,
            sim.id,
            "goodput",
            "Mbit/s",
            sim.goodput_bps / 1e6,
            emu.goodput_bps / 1e6,
            models,
        ),
        # The kernel exposes its smoothed RTT only, read every 100 ms: compare it with the
        # simulator's smoothed RTT averaged over time, not with the mean of every sample.
        Agreement(
            cca,
            sim.id,
            "mean RTT",
            "ms",
            ms(sim.rtt.srtt_time_mean_ns),
            ms(emu.rtt.srtt_time_mean_ns),
        ),
        Agreement(
            cca, sim.id, "retransmissions", "", float(sim.retransmits), float(emu.retransmits)
        ),
    ]


def validate(
    scenario: ScenarioSource,
    seed: int | None = None,
    duration: str | None = None,
    overrides: Overrides = (),
    *,
    algorithms: Sequence[str] | None = None,
    options: EmulateOptions | None = None,
) -> list[Agreement]:
    """Simulate and emulate `scenario` once per algorithm; the agreement rows."""
    features.check_base()
    base: list[tuple[str, Any]] = override_pairs(overrides)
    if seed is not None:
        base.append(("seed", seed))
    if duration is not None:
        base.append(("duration", duration))
    raw = raw_scenario(scenario)
    rows: list[Agreement] = []
    for cca in comparable_ccas(algorithms):
        loaded = load_scenario(scenario, [*base, *_with_cca(raw, cca)])
        simulated = run_scenario(loaded)
        emulated = emulate_normalized(normalize(loaded), options).result
        rows += compare(cca, simulated, emulated)
    return rows
