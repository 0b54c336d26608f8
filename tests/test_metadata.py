"""The project's metadata: CITATION.cff is valid CFF 1.2.0 (cffconvert's schema check) and
names the package's version; the license and authors the wheel declares are the files'."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import tcplab

REPO = Path(__file__).resolve().parents[1]


def test_citation_cff_is_valid_and_names_this_version() -> None:
    cffconvert = Path(sys.executable).parent / "cffconvert"
    proc = subprocess.run(
        [cffconvert, "--validate", "--infile", REPO / "CITATION.cff"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "valid" in proc.stdout.lower()
    cff = (REPO / "CITATION.cff").read_text()
    assert f'version: "{tcplab.__version__}"' in cff


def test_citation_cff_check_fails_on_an_invalid_file(tmp_path: Path) -> None:
    """The check can fail: a file without the required `authors` is refused."""
    bad = tmp_path / "CITATION.cff"
    text = (REPO / "CITATION.cff").read_text()
    bad.write_text(text.replace('authors:\n  - name: "The tcplab maintainers"\n', ""))
    cffconvert = Path(sys.executable).parent / "cffconvert"
    proc = subprocess.run(
        [cffconvert, "--validate", "--infile", bad], capture_output=True, text=True
    )
    assert proc.returncode != 0


def test_license_and_version_have_one_source() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    cargo = tomllib.loads((REPO / "Cargo.toml").read_text())["workspace"]["package"]
    assert pyproject["license"] == cargo["license"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert "version" in pyproject["dynamic"] and tcplab.__version__ == cargo["version"]
