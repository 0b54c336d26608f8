"""CLI plumbing that does not depend on the simulation: exit codes for internal errors,
core errors turned into user errors, version and help, catalogue output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import tcplab
from conftest import GEO_TOML, SCENARIOS, run_cli
from tcplab import ScenarioError, _core, cli, runner
from tcplab.scenario.load import load_scenario


def _boom(_text: str, _series: str | None = None, **_watch: object) -> str:
    raise RuntimeError("boom\nsecond line")


def _core_rejects(_text: str, _series: str | None = None, **_watch: object) -> str:
    raise ValueError("flows[0].cca_params.beta: 5000 is invalid for cubic; allowed: 0 ..= 1024")


def test_internal_error_is_one_line_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("TCPLAB_TRACEBACK", raising=False)
    monkeypatch.setattr(_core, "run_json_series", _boom)
    path = tmp_path / "geo.toml"
    path.write_text(GEO_TOML)
    assert cli.main(["run", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("internal error: RuntimeError: boom second line (a bug in ")
    assert "please report it" in captured.err and "TCPLAB_TRACEBACK=1" in captured.err
    assert captured.err.count("\n") == 1
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
    monkeypatch.setattr(_core, "run_json_series", _core_rejects)
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


HEAVY = ("pandas", "duckdb", "matplotlib", "pyarrow")


def _loaded_by(*argv: str) -> tuple[str, set[str]]:
    """Run `tcplab ARGV` in a fresh interpreter; its stdout and the top-level packages it
    imported."""
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\nfrom tcplab import cli\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        status = cli.main({list(argv)!r})\n"
        "    except SystemExit as exc:\n"
        "        status = exc.code\n"
        "print(out.getvalue(), end='')\n"
        "print('MODULES', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
        "sys.exit(status)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    stdout, _, modules = proc.stdout.rpartition("MODULES ")
    return stdout, set(modules.split())


def test_version_names_the_model_version_and_loads_no_heavy_library() -> None:
    from tcplab import _core

    stdout, modules = _loaded_by("--version")
    assert stdout.strip().endswith(f"model version {_core.model_version()})")
    # not even the scenario model: --version answers before any command is chosen
    assert modules.isdisjoint({*HEAVY, "pydantic", "numpy", "rich"}), modules


@pytest.mark.parametrize("argv", [("--help",), ("run", "--help"), ("sweep", "--help")])
def test_help_loads_no_heavy_library(argv: tuple[str, ...]) -> None:
    stdout, modules = _loaded_by(*argv)
    assert "usage: tcplab" in stdout
    assert modules.isdisjoint({*HEAVY, "pydantic", "numpy"}), modules


def test_a_short_run_loads_neither_duckdb_nor_matplotlib(tmp_path: Path) -> None:
    scenario = SCENARIOS / "lan.toml"
    stdout, modules = _loaded_by("run", str(scenario), "--duration", "100ms")
    assert "cubic" in stdout
    assert modules.isdisjoint(HEAVY), modules
    _, modules = _loaded_by("run", str(scenario), "--duration", "100ms", "--json")
    assert modules.isdisjoint(HEAVY), modules


def test_a_traced_run_loads_only_what_its_files_need(tmp_path: Path) -> None:
    scenario = SCENARIOS / "lan.toml"
    _, modules = _loaded_by("run", str(scenario), "--duration", "100ms", "--pcap", str(tmp_path))
    assert modules.isdisjoint(HEAVY), modules
    # the event log is written as Parquet: pyarrow, and nothing else heavy
    events = tmp_path / "events.parquet"
    _, modules = _loaded_by("run", str(scenario), "--duration", "100ms", "--events", str(events))
    assert "pyarrow" in modules
    assert modules.isdisjoint(set(HEAVY) - {"pyarrow"}), modules
    assert events.stat().st_size > 0


def test_validate_scenario_is_the_old_name_of_check(write_toml: Callable[[str], Path]) -> None:
    path = write_toml(GEO_TOML)
    old, new = run_cli("validate-scenario", str(path)), run_cli("check", str(path))
    assert old.returncode == new.returncode == 0
    assert old.stdout == new.stdout
    assert old.stderr.strip() == "note: `tcplab validate-scenario` is now `tcplab check`"
    assert new.stderr == ""
    assert "validate-scenario" not in run_cli("--help").stdout
