"""Shared helpers: run the CLI in a subprocess, write scenario files, detect the stub core."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tcplab import _core
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalized_json

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"
#: recorded emulations (iperf3 and emulator JSON; made by tests/data/realstack/record.py)
REALSTACK_FIXTURES = REPO / "tests" / "data" / "realstack"
STUB_MESSAGE = "core not built yet"

#: A valid scenario (the GEO demo path); tests derive broken variants by replacing one line.
GEO_TOML = """\
name = "geo-sat"
duration = "600s"
seed = 1

[bottleneck]
rate = "4Mbps"
delay = "250ms"
per = 1e-4
queue = "2bdp"

[access]
rate = "1Gbps"
delay = "0.1ms"

[[flows]]
cca = "cubic"
app = "bulk"

[flows.tcp]
mss = 1448
"""


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m tcplab ARGS` with the interpreter running the tests (the project venv)."""
    return subprocess.run(
        [sys.executable, "-m", "tcplab", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        check=False,
    )


def render_in_chromium(page: Path, tmp_path: Path) -> str:
    """Load an HTML report in headless Chromium; the attributes of its rendered `<body>`
    (where the reports' check script records `data-figures` and `data-errors`). Skips when
    Chromium is not installed (`make test` installs Debian's)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make test installs Debian's chromium)")
    proc = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    return proc.stdout[proc.stdout.index("<body") :].split(">", 1)[0]


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str], Path]:
    """Write TOML text to a fresh file and return its path."""
    counter = iter(range(1_000_000))

    def write(text: str) -> Path:
        path = tmp_path / f"scenario{next(counter)}.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


def require_real_core() -> None:
    """Skip when (and only when) the extension is still the stub that answers every run with
    "core not built yet"; any other failure of the probe is a real error and propagates."""
    probe = load_scenario(
        {
            "duration": "100ms",
            "interval": "10ms",
            "bottleneck": {"rate": "10Mbps", "delay": "1ms"},
            "flows": [{"cca": "reno"}],
        },
        catalogue=(),
    )
    try:
        _core.run_json(normalized_json(probe))
    except ValueError as exc:
        if str(exc) == STUB_MESSAGE:
            pytest.skip("the Rust core is still the stub (core not built yet)")
        raise


# --- core features of docs/interface.md "Paths, PEPs, mixed traffic and changing links" ------
#
# Tests that run the issue-5 features on the core skip while the core does not have them yet,
# and run by themselves once it does. Each feature is probed with a tiny scenario written here
# by hand from the interface document (not through `normalize`), so a core that implements
# the contract makes the probe pass, and any disagreement between the Python normalizer and
# the contract then fails the real test instead of hiding behind a skip.

_PROBE_DIR: dict[str, Any] = {
    "rate_bps": 10_000_000,
    "delay_ns": 1_000_000,
    "per": 0.0,
    "ber": 0.0,
    "queue": {"kind": "droptail", "limit_pkts": 100},
}
#: What an old core says about a key or value it does not know (serde and `check_dir`).
_NOT_SUPPORTED = ("unknown field", "unknown variant", "unknown queue discipline")


def _probe_scenario() -> dict[str, Any]:
    return {
        "name": "probe",
        "seed": 1,
        "duration_ns": 100_000_000,
        "interval_ns": 10_000_000,
        "bottleneck": {"forward": dict(_PROBE_DIR), "reverse": dict(_PROBE_DIR)},
        "access": {"rate_bps": 1_000_000_000, "delay_ns": 100_000},
        "flows": [{"cca": "reno", "cca_params": {}, "start_ns": 0, "app": {"kind": "bulk"}}],
    }


def _segments(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "forward": dict(_PROBE_DIR), "reverse": dict(_PROBE_DIR)} for n in names]


def _probe(feature: str) -> dict[str, Any]:
    s = _probe_scenario()
    forward = s["bottleneck"]["forward"]
    if feature == "path":
        del s["bottleneck"]
        s["path"] = {"pep": "none", "segments": _segments("a", "b")}
    elif feature == "pep":
        del s["bottleneck"]
        segs = _segments("internet", "satellite", "access")
        segs[1]["forward"]["delay_ns"] = segs[1]["reverse"]["delay_ns"] = 20_000_000
        s["path"] = {"pep": "distributed", "segments": segs}
        s["flows"][0]["pep"] = {"cca": "reno", "cca_params": {}, "buffer_bytes": 4_194_304}
    elif feature == "cbr":
        app = {"kind": "cbr", "rate_bps": 250_000, "packet_bytes": 1200}
        s["flows"].append({"cca": "reno", "start_ns": 0, "app": app})
    elif feature == "red":
        red = {"min_th_pkts": 5, "max_th_pkts": 15, "max_p": 0.1, "w_q": 0.002}
        forward["queue"] = {"kind": "red", "limit_pkts": 100, "red": red}
    elif feature == "codel":
        codel = {"target_ns": 5_000_000, "interval_ns": 100_000_000, "ecn": True}
        forward["queue"] = {"kind": "codel", "limit_pkts": 100, "codel": codel}
    elif feature == "gilbert_elliott":
        forward["loss"] = {
            "kind": "gilbert_elliott",
            "p_gb": 0.01,
            "p_bg": 0.1,
            "loss_good": 0.0,
            "loss_bad": 0.5,
        }
    elif feature == "outages":
        forward["outages"] = [[10_000_000, 20_000_000]]
    elif feature == "rate_trace":
        forward["rate_trace"] = [[0, 10_000_000, None], [50_000_000, 5_000_000, 2_000_000]]
    elif feature == "delivery_trace":
        forward["delivery_trace"] = {
            "opportunities_ns": [1_000_000, 1_000_000, 2_000_000],
            "period_ns": 2_000_000,
            "bytes_per_opportunity": 1500,
        }
    else:
        raise AssertionError(f"no probe for {feature!r}")
    return s


@functools.cache
def core_lacks(feature: str) -> str | None:
    """None when the core runs `feature`; else the core's one-line refusal."""
    try:
        _core.run_json(json.dumps(_probe(feature)))
    except ValueError as exc:
        message = str(exc)
        if message == STUB_MESSAGE or any(text in message for text in _NOT_SUPPORTED):
            return message
        raise
    return None


FEATURES = (
    "path",
    "pep",
    "cbr",
    "red",
    "codel",
    "gilbert_elliott",
    "outages",
    "rate_trace",
    "delivery_trace",
)


def features_of(normalized: dict[str, Any]) -> list[str]:
    """The issue-5 features a normalized scenario uses (see `FEATURES`)."""
    found: set[str] = set()
    if "path" in normalized:
        found.add("path")
        if normalized["path"]["pep"] != "none":
            found.add("pep")
    directions = [
        d
        for segment in (
            normalized["path"]["segments"] if "path" in normalized else [normalized["bottleneck"]]
        )
        for d in (segment["forward"], segment["reverse"])
    ]
    for d in directions:
        kind = d["queue"]["kind"]
        if kind != "droptail":
            found.add(kind)
        if d.get("loss"):
            found.add("gilbert_elliott")
        for key in ("outages", "rate_trace", "delivery_trace"):
            if d.get(key):
                found.add(key)
    if any(flow["app"]["kind"] == "cbr" for flow in normalized["flows"]):
        found.add("cbr")
    return [f for f in FEATURES if f in found]


def require_core_features(*features: str) -> None:
    """Skip, naming the feature and quoting the core, while the core lacks one of them."""
    require_real_core()
    for feature in features:
        refusal = core_lacks(feature)
        if refusal is not None:
            pytest.skip(f"the core does not implement {feature} yet (core: {refusal})")


def store_run(
    store: Any,
    study: str,
    run: Any,
    params: dict[str, Any] | None = None,
    *,
    scenario_hash: str = "h1",
    seed: int = 1,
) -> str:
    """Store one hand-made `RunResult` as the only run of a new revision of `study` (what a
    sweep does, without a grid); returns its run id."""
    from tcplab.results.provenance import Build
    from tcplab.study.store import Member, RevisionPlan, RunKey, RunRecord

    params = params or {}
    key = RunKey(scenario_hash, seed, run.model_version or _core.model_version())
    plan = RevisionPlan(
        study, "", "", "{}", f"hand-{scenario_hash}-{seed}", key.model_version or 0, 1
    )
    member = Member(key.run_id, "", json.dumps(params, sort_keys=True))
    choice = store.open_revision(plan, [member], Build.current(), on_change="new")
    store.add_runs(study, choice.revision, [RunRecord(key, "", params, run.scenario, run)])
    return key.run_id


def recorded(name: str) -> tuple[dict[str, Any], Any, list[Any], dict[str, Any]]:
    """A recorded emulation `tests/data/realstack/NAME.json`: its normalized scenario, the
    emulation plan, the flows' runs (with their PEPs' reports) and the emulator's report."""
    from tcplab.realstack.convert import FlowRun
    from tcplab.realstack.pep_report import PepRun
    from tcplab.realstack.plan import plan_topology

    data = json.loads((REALSTACK_FIXTURES / f"{name}.json").read_text())
    plan = plan_topology(data["normalized"], "1x0")
    peps = data.get("peps") or [[] for _ in plan.flows]
    runs = [
        FlowRun(f, c, tuple(PepRun(p["node"], p["report"]) for p in flow_peps))
        for f, c, flow_peps in zip(plan.flows, data["clients"], peps, strict=True)
    ]
    return data["normalized"], plan, runs, data["emu"]
