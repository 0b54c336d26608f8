"""The wheel of `make dist`, installed as a new user installs it: `pip install` into a fresh
virtualenv outside the checkout, then the commands the README starts with.

`make test` builds dist/ first (the Makefile's `test-py` depends on `dist`), so a missing or
stale wheel is a failure here, never a skip. The manylinux claim is checked by reading the
glibc symbol versions every ELF file of the wheel needs (pyelftools), independently of
maturin's and auditwheel's own checks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from tcplab.results.provenance import git_commit, git_describe

REPO = Path(__file__).resolve().parents[2]
DIST = REPO / "dist"
#: manylinux2014 = glibc 2.17 (PEP 599): no symbol of a later glibc may be needed
MAX_GLIBC = (2, 17)


def the_wheel() -> Path:
    wheels = sorted(DIST.glob("tcplab-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {DIST}, found {wheels}: run `make dist`"
    return wheels[0]


def test_the_wheel_is_of_this_tree() -> None:
    """Every Python file in the wheel is the source tree's, and it records this commit: the
    install test below tests the code of this checkout, not an old build."""
    wheel = the_wheel()
    with zipfile.ZipFile(wheel) as zf:
        info = json.loads(zf.read("tcplab/_build_info.json"))
        stale = [
            name
            for name in zf.namelist()
            if name.endswith(".py") and zf.read(name) != (REPO / "python" / name).read_bytes()
        ]
    assert not stale, f"{wheel.name} is stale ({stale[:3]} differ): run `make dist`"
    assert info == {"git_commit": git_commit(), "git_describe": git_describe()}


def test_wheel_tags_and_contents() -> None:
    wheel = the_wheel()
    # name-version-python-abi-platform: one wheel for every CPython >= 3.11 (abi3)
    _, _, python_tag, abi, platform = wheel.stem.split("-")
    assert (python_tag, abi) == ("cp311", "abi3")
    assert platform.split(".") == ["manylinux2014_x86_64", "manylinux_2_17_x86_64"] or (
        platform.split(".") == ["manylinux2014_aarch64", "manylinux_2_17_aarch64"]
    )
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for binary in ("tcplab/bin/tcplab-emu", "tcplab/bin/tcplab-pep"):
            mode = zf.getinfo(binary).external_attr >> 16
            assert mode & 0o111, f"{binary} is not executable in the wheel"
        metadata = zf.read("tcplab-0.1.0.dist-info/METADATA").decode()
    examples = {"geo-sat.toml", "traces/cell.down", "tutorial.ipynb", "README.md"}
    assert {f"tcplab/examples/{name}" for name in examples} <= names
    assert "tcplab-0.1.0.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata
    assert "Author: The tcplab maintainers" in metadata


def _elf_files(wheel: Path, into: Path) -> Iterator[Path]:
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if zf.read(name)[:4] == b"\x7fELF":
                yield Path(zf.extract(name, into))


def _glibc_versions(path: Path) -> set[tuple[int, ...]]:
    """The GLIBC_x.y versions an ELF file needs (its .gnu.version_r entries)."""
    found: set[tuple[int, ...]] = set()
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".gnu.version_r")
        assert isinstance(section, GNUVerNeedSection), f"{path.name}: no version needs"
        for _, auxiliaries in section.iter_versions():
            for aux in auxiliaries:
                match = re.fullmatch(r"GLIBC_([\d.]+)", aux.name)
                if match:
                    found.add(tuple(int(part) for part in match.group(1).split(".")))
    return found


def test_every_elf_file_needs_at_most_glibc_2_17(tmp_path: Path) -> None:
    elf = list(_elf_files(the_wheel(), tmp_path))
    assert {p.name for p in elf} == {"_core.abi3.so", "tcplab-emu", "tcplab-pep"}
    for path in elf:
        versions = _glibc_versions(path)
        assert versions and max(versions) <= MAX_GLIBC, (path.name, max(versions))


def test_the_wheel_installs_and_works_outside_the_checkout(tmp_path: Path) -> None:
    wheel = the_wheel()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    # --no-compile: byte-compiling pandas, matplotlib & co. is most of an install's CPU time
    # and tells nothing about the wheel (Python compiles what it imports anyway)
    quiet = ("--quiet", "--disable-pip-version-check", "--no-compile")
    pip = subprocess.run(
        [bin_dir / "pip", "install", *quiet, wheel],
        capture_output=True,
        text=True,
        check=False,
    )
    assert pip.returncode == 0, pip.stderr
    work = tmp_path / "work"
    work.mkdir()
    # nothing from the checkout or its virtualenv: a clean environment, the wheel's tcplab
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(tmp_path)}
    env.update({k: os.environ[k] for k in ("LANG", "TMPDIR") if k in os.environ})

    def tcplab(*argv: str) -> str:
        proc = subprocess.run(
            [bin_dir / "tcplab", *argv], cwd=work, env=env, capture_output=True, text=True
        )
        print(f"$ tcplab {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    build = json.loads(zipfile.ZipFile(wheel).read("tcplab/_build_info.json"))
    assert f"git {build['git_describe']}," in tcplab("--version")

    where = subprocess.run(
        [bin_dir / "python", "-c", WHERE], cwd=work, env=env, capture_output=True, text=True
    )
    assert where.returncode == 0, where.stderr
    package, emu, pep = (Path(line) for line in where.stdout.split())
    assert package.is_relative_to(venv) and not package.is_relative_to(REPO)
    assert emu == package / "bin" / "tcplab-emu" and pep == package / "bin" / "tcplab-pep"
    for binary in (emu, pep):  # they run here
        usage = subprocess.run([binary, "--help"], capture_output=True, text=True)
        assert f"usage: {binary.name}" in usage.stdout + usage.stderr

    tcplab("examples", "copy", "ex")
    run = json.loads(tcplab("run", "ex/geo-sat.toml", "--duration", "60s", "--json"))
    provenance = run["provenance"]
    assert provenance["git_commit"] == build["git_commit"]
    assert provenance["tcplab_version"] == "0.1.0"
    # the same scenario and seed give the same numbers from the wheel as from the checkout
    same = ("run", "scenarios/geo-sat.toml", "--duration", "60s", "--json")
    here = subprocess.run(
        [sys.executable, "-m", "tcplab", *same],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    checkout = json.loads(here.stdout)
    for key in ("bytes_delivered", "retransmits", "rtt_mean_ms", "final_cwnd_bytes"):
        assert run["flows"][0][key] == checkout["flows"][0][key], key

    tcplab("study", "run", "goodput-ns2", "--duration", "2s", "--no-progress")
    report = (work / "goodput-ns2.html").read_text()
    assert "Experimented Goodput Measurement of Standard TCP Versions" in report  # its paper
    commits = subprocess.run(
        [bin_dir / "python", "-c", COMMITS], cwd=work, env=env, capture_output=True, text=True
    )
    assert commits.returncode == 0, commits.stderr
    assert json.loads(commits.stdout) == [build["git_commit"]]

    assert "usage: tcplab emulate" in tcplab("emulate", "--help")


#: where the installed package and its binaries are (run in the fresh virtualenv)
WHERE = """
from pathlib import Path
import tcplab
from tcplab.realstack.bins import find_binary
print(Path(tcplab.__file__).parent, find_binary("tcplab-emu"), find_binary("tcplab-pep"))
"""

#: the distinct commits the study's stored runs name
COMMITS = """
import json
from tcplab import Store
runs = Store("goodput-ns2.duckdb").runs("goodput-ns2")
print(json.dumps(sorted(set(runs["git_commit"]))))
"""


@pytest.fixture(autouse=True)
def _no_checkout_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.delenv("TCPLAB_BIN_DIR", raising=False)
