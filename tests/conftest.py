"""Shared helpers: run the CLI in a subprocess, write scenario files, detect the stub core."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from tcplab import _core
from tcplab.loader import load_scenario
from tcplab.normalize import normalized_json

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"
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
