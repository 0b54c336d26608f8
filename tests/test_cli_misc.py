"""CLI plumbing that does not depend on the simulation: exit codes for internal errors,
core errors turned into user errors, version and help, catalogue output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tcplab
from conftest import GEO_TOML, run_cli
from tcplab import ScenarioError, _core, cli, runner
from tcplab.loader import load_scenario


def _boom(_text: str) -> str:
    raise RuntimeError("boom\nsecond line")


def _core_rejects(_text: str) -> str:
    raise ValueError("flows[0].cca_params.beta: 5000 is invalid for cubic; allowed: 0 ..= 1024")


def test_internal_error_is_one_line_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("TCPLAB_TRACEBACK", raising=False)
    monkeypatch.setattr(_core, "run_json", _boom)
    path = tmp_path / "geo.toml"
    path.write_text(GEO_TOML)
    assert cli.main(["run", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == "internal error: RuntimeError: boom second line\n"
    assert captured.out == ""


def test_core_value_error_becomes_a_scenario_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_core, "run_json", _core_rejects)
    scenario = load_scenario(
        {"duration": "1s", "bottleneck": {"rate": "1Mbps", "delay": "1ms"}, "flows": [{}]},
        catalogue=(),
    )
    with pytest.raises(ScenarioError) as info:
        runner.run_scenario(scenario)
    assert str(info.value) == (
        "simulation core: flows[0].cca_params.beta: 5000 is invalid for cubic; allowed: 0 ..= 1024"
    )


def test_core_error_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(_core, "run_json", _core_rejects)
    path = tmp_path / "geo.toml"
    path.write_text(GEO_TOML)
    assert cli.main(["run", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: simulation core: flows[0].cca_params.beta: ")
    assert captured.err.count("\n") == 1 and captured.out == ""


def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"tcplab {tcplab.__version__} (core ")


def test_help_exits_zero() -> None:
    proc = run_cli("run", "--help")
    assert proc.returncode == 0
    assert "--series" in proc.stdout and "--set" in proc.stdout


def test_ccas_json_matches_the_catalogue() -> None:
    proc = run_cli("ccas", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [entry["name"] for entry in json.loads(proc.stdout)] == [c.name for c in tcplab.ccas()]


def test_public_api() -> None:
    for name in ("run", "load_scenario", "Scenario", "RunResult", "ScenarioError", "ccas"):
        assert hasattr(tcplab, name)
    assert isinstance(tcplab.__version__, str) and tcplab.__version__


def test_version_names_the_model_version_and_loads_no_heavy_library() -> None:
    import subprocess
    import sys

    from tcplab import _core

    code = (
        "import sys\nfrom tcplab import cli\ncli.main(['--version'])\n"
        "heavy = ('pandas', 'duckdb', 'matplotlib', 'pyarrow')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    version, heavy = proc.stdout.splitlines()
    assert version.endswith(f"model version {_core.model_version()})")
    assert heavy == "[]"
