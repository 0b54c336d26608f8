"""`make dist`: the sdist and a portable wheel in dist/, from what `make build` compiled.

The wheel holds, besides the Python package and the extension:
- tcplab/bin/tcplab-emu, tcplab-pep: the real-stack binaries (target/<triple>/tools/, linked
  against glibc 2.17 like the extension), found by `tcplab.realstack.bins`;
- tcplab/examples/: a copy of the repository's scenarios/ (`tcplab examples`);
- tcplab/_build_info.json: the commit and `git describe` of the tree it was built from
  (`tcplab.results.provenance`), so results of an installed wheel name their source.

Those three are staged into python/tcplab/ only while maturin packs them (pyproject.toml's
`include`), then removed again, so a source tree never runs from stale copies. The sdist holds
the examples and the build info too (not the binaries: it builds from source). The wheel is
then checked with auditwheel, which reads every ELF file in it (maturin's own check reads the
extension only): it must be consistent with manylinux_2_17.

Run by the Makefile with the environment it exports (CARGO_BUILD_TARGET, the zig linker) and
the build's RUSTFLAGS (its profile, `tcplab.tools.pgo`): with other flags cargo would compile
the extension again, without the profile.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "tcplab"
BINARIES = ("tcplab-emu", "tcplab-pep")
#: the manylinux policy the wheel claims (and auditwheel must confirm)
POLICY = "manylinux2014"
POLICY_TAG = "manylinux_2_17"
#: the files of scenarios/ that are examples (scenario and study files, traces, the reference)
EXAMPLE_PATTERNS = ("*.toml", "*.ipynb", "README.md", "studies/*.toml", "traces/*")


def fail(message: str) -> None:
    print(f"make dist: {message}", file=sys.stderr)
    raise SystemExit(1)


def run(*argv: str) -> str:
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        fail(f"{' '.join(argv[:3])} failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout + proc.stderr


def binaries() -> list[Path]:
    triple = os.environ.get("CARGO_BUILD_TARGET")
    if not triple:
        fail("CARGO_BUILD_TARGET is not set; run it through `make dist`")
    found = [ROOT / "target" / str(triple) / "tools" / name for name in BINARIES]
    missing = [str(p) for p in found if not p.is_file()]
    if missing:
        fail(f"missing {', '.join(missing)}; `make build` builds them")
    return found


def example_files() -> list[Path]:
    source = ROOT / "scenarios"
    return sorted({p for pattern in EXAMPLE_PATTERNS for p in source.glob(pattern) if p.is_file()})


@contextmanager
def staged(bins: list[Path]) -> Iterator[dict[str, str]]:
    """The binaries, examples and build info in python/tcplab/ for the time of the block."""
    sys.path.insert(0, str(ROOT / "python"))
    from tcplab.results.provenance import BUILD_INFO_FILE, git_commit, git_describe

    commit, describe = git_commit(), git_describe()
    if not commit or not describe:
        fail("not a git checkout: the build's commit cannot be recorded")
    info = {"git_commit": commit, "git_describe": describe}
    made = [PACKAGE / "bin", PACKAGE / "examples", PACKAGE / BUILD_INFO_FILE]
    for path in made:
        if path.exists():
            fail(f"{path.relative_to(ROOT)} exists; remove it (a staging left behind?)")
    try:
        (PACKAGE / "bin").mkdir()
        for binary in bins:
            shutil.copy2(binary, PACKAGE / "bin" / binary.name)
        for example in example_files():
            target = PACKAGE / "examples" / example.relative_to(ROOT / "scenarios")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(example, target)
        (PACKAGE / BUILD_INFO_FILE).write_text(json.dumps(info, indent=2) + "\n")
        yield info
    finally:
        shutil.rmtree(PACKAGE / "bin", ignore_errors=True)
        shutil.rmtree(PACKAGE / "examples", ignore_errors=True)
        (PACKAGE / BUILD_INFO_FILE).unlink(missing_ok=True)


def check_policy(wheel: Path) -> str:
    """The platform tag auditwheel finds the wheel consistent with; it must be POLICY_TAG."""
    shown = run(str(Path(sys.executable).parent / "auditwheel"), "show", str(wheel))
    match = re.search(r'consistent with the following platform tag:\s*"([^"]+)"', shown)
    if match is None:
        fail(f"auditwheel show: unexpected output:\n{shown}")
    tag = match.group(1) if match else ""
    if not tag.startswith(POLICY_TAG + "_"):
        fail(f"{wheel.name}: auditwheel finds it consistent with {tag}, not {POLICY_TAG}:\n{shown}")
    return tag


def main() -> None:
    out = ROOT / "dist"
    out.mkdir(exist_ok=True)
    for old in [*out.glob("tcplab-*.whl"), *out.glob("tcplab-*.tar.gz")]:
        old.unlink()
    maturin = str(Path(sys.executable).parent / "maturin")
    with staged(binaries()) as info:
        run(maturin, "build", "--release", "--compatibility", POLICY, "--out", str(out))
        run(maturin, "sdist", "--out", str(out))
    wheels, sdists = sorted(out.glob("tcplab-*.whl")), sorted(out.glob("tcplab-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        fail(f"expected one wheel and one sdist in dist/, found {wheels + sdists}")
    tag = check_policy(wheels[0])
    for path in (*wheels, *sdists):
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size / 2**20:.1f} MiB")
    print(f"auditwheel: consistent with {tag}; built from {info['git_describe']}")


if __name__ == "__main__":
    main()
