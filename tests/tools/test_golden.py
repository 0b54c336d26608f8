"""Golden results: the core's exact result for every `scenarios/*.toml` and for the first grid
point of every preset study (at most 30 s simulated), compared field for field with
`tests/golden/<case>.json`.

When a case fails with "results changed: bump MODEL_VERSION and regenerate", the simulator's
numbers changed. If that is intended, bump `MODEL_VERSION` in `crates/core/src/model.rs`
(stored runs of the old version then stop counting as "already stored"), rebuild
(`make build`) and regenerate in one command:

    .venv/bin/python -m tcplab.tools.golden --update

The tool refuses to rewrite goldens while MODEL_VERSION is the one they were made with,
unless `--reason "..."` says why the numbers change without a model change (e.g. a scenario
file was edited, which changes its run key anyway). New scenarios and studies are added, and
removed ones dropped, by `--update` alone. `python -m tcplab.tools.golden` (no option) checks,
as this test does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tcplab import _core
from tcplab.tools import golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
CASES = golden.cases()


@pytest.fixture(scope="module")
def fresh() -> dict[str, dict[str, Any]]:
    return golden.documents(CASES)


def test_the_goldens_cover_every_scenario_and_preset_and_this_model_version() -> None:
    manifest, docs = golden.read_dir(GOLDEN)
    names = [case.name for case in CASES]
    assert sorted(docs) == names == manifest["cases"], (
        "golden files and cases differ: run `python -m tcplab.tools.golden --update`"
    )
    scenarios = sorted(p.stem for p in (golden.repo_root() / "scenarios").glob("*.toml"))
    assert [n.removeprefix("scenario-") for n in names if n.startswith("scenario-")] == scenarios
    assert manifest["model_version"] == _core.model_version(), (
        f"goldens made with MODEL_VERSION {manifest['model_version']}, the core has "
        f"{_core.model_version()}: regenerate with `python -m tcplab.tools.golden --update`"
    )


@pytest.mark.parametrize("case", [c.name for c in CASES])
def test_result_is_the_golden_one(case: str, fresh: dict[str, dict[str, Any]]) -> None:
    stored = json.loads((GOLDEN / f"{case}.json").read_text())
    problem = golden.verdict(stored, fresh[case])
    assert problem is None, problem
    # field for field, and byte for byte as the tool writes it
    assert golden.text(fresh[case]) == (GOLDEN / f"{case}.json").read_text()


def test_golden_durations_are_short_but_reach_late_flows() -> None:
    by_name = {c.name: c for c in CASES}
    # geo-sat.toml runs 600 s: its golden 30 s
    assert by_name["scenario-geo-sat"].scenario["duration_ns"] == 30 * 10**9
    # two-flows.toml's second flow starts at 30 s: 10 s more than that (of its 180 s)
    assert by_name["scenario-two-flows"].scenario["duration_ns"] == 40 * 10**9
    # ns2-goodput.toml is 11 s already
    assert by_name["scenario-ns2-goodput"].scenario["duration_ns"] == 11 * 10**9
    assert all(c.scenario["duration_ns"] <= 40 * 10**9 for c in CASES)


def test_a_changed_number_under_the_same_model_version_is_named() -> None:
    case = CASES[0]
    doc = json.loads((GOLDEN / f"{case.name}.json").read_text())
    changed = json.loads(json.dumps(doc))
    changed["result"]["flows"][0]["bytes_delivered"] += 1
    problem = golden.verdict(doc, changed)
    assert problem is not None
    assert "results changed: bump MODEL_VERSION and regenerate" in problem
    assert "result.flows[0].bytes_delivered" in problem


def _tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tcplab.tools.golden", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_update_refuses_to_rewrite_without_a_bump_or_a_reason(tmp_path: Path) -> None:
    work = tmp_path / "golden"
    shutil.copytree(GOLDEN, work)
    target = work / f"{CASES[0].name}.json"
    tampered = json.loads(target.read_text())
    tampered["result"]["events"] += 1
    target.write_text(golden.text(tampered))
    assert _tool("--dir", str(work)).returncode == 1  # the check sees it
    refused = _tool("--update", "--dir", str(work))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "bump MODEL_VERSION" in refused.stderr and "--reason" in refused.stderr
    assert json.loads(target.read_text()) == tampered  # untouched
    done = _tool("--update", "--dir", str(work), "--reason", "test")
    assert done.returncode == 0, done.stderr
    assert _tool("--dir", str(work)).returncode == 0
    assert json.loads((work / golden.MANIFEST).read_text())["reason"] == "test"
    # goldens of an older model version are rewritten without a reason
    manifest = json.loads((work / golden.MANIFEST).read_text())
    manifest["model_version"] = _core.model_version() - 1
    (work / golden.MANIFEST).write_text(golden.text(manifest))
    target.write_text(golden.text(tampered))
    bumped = _tool("--update", "--dir", str(work))
    assert bumped.returncode == 0, bumped.stderr
    assert f"updated {CASES[0].name}" in bumped.stdout
    assert json.loads((work / golden.MANIFEST).read_text())["reason"] == (
        f"MODEL_VERSION {_core.model_version() - 1} -> {_core.model_version()}"
    )
