"""The PGO profile's freshness check: it must notice every change the profile depends on (the
extension's Rust sources and Cargo files) and no other."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tcplab.tools import pgo
from tcplab.tools.golden import repo_root


def _tree(root: Path) -> Path:
    for name in ("Cargo.toml", "Cargo.lock", "crates/core/Cargo.toml", "crates/py/Cargo.toml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    (root / "crates/core/src/net").mkdir(parents=True)
    (root / "crates/core/src/net/link.rs").write_text("pub fn rate() -> u64 { 1 }\n")
    (root / "crates/py/src").mkdir(parents=True)
    (root / "crates/py/src/lib.rs").write_text("// the module\n")
    (root / "packaging/pgo").mkdir(parents=True)
    (root / pgo.PROFILE).write_bytes(b"\xff\x6c\x70\x72\x6f\x66\x72\x81")
    record = {"sources_sha256": pgo.sources_sha256(root)}
    (root / pgo.RECORD).write_text(json.dumps(record))
    return root


def test_a_profile_trained_on_these_sources_is_current(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert pgo.check(root) is None
    # what the extension is not built from does not matter
    (root / "README.md").write_text("changed\n")
    (root / "crates/core/src/notes.txt").write_text("not Rust\n")
    (root / "crates/emu").mkdir(parents=True)
    (root / "crates/emu/main.rs").write_text("fn main() {}\n")
    assert pgo.check(root) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda r: (r / "crates/core/src/net/link.rs").write_text("pub fn rate() -> u64 { 2 }\n"),
        lambda r: (r / "crates/core/src/net/new.rs").write_text("\n"),
        lambda r: (r / "crates/core/src/net/link.rs").rename(r / "crates/core/src/net/l.rs"),
        lambda r: (r / "crates/py/src/lib.rs").write_text("// the module, edited\n"),
        lambda r: (r / "Cargo.lock").write_text("# a dependency moved\n"),
        lambda r: (r / "crates/core/Cargo.toml").write_text("# another feature\n"),
    ],
    ids=["edit", "new-file", "rename", "py-crate", "lockfile", "manifest"],
)
def test_any_change_to_what_the_extension_is_built_from_makes_it_stale(
    tmp_path: Path, change: Callable[[Path], object]
) -> None:
    root = _tree(tmp_path)
    change(root)
    problem = pgo.check(root)
    assert problem is not None and "make pgo" in problem


def test_a_missing_or_unreadable_record_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / pgo.RECORD).write_text("{not json")
    problem = pgo.check(root)
    assert problem is not None and str(pgo.RECORD) in problem and "\n" not in problem
    (root / pgo.PROFILE).unlink()
    problem = pgo.check(root)
    assert problem is not None and "missing" in problem


def test_the_checkouts_profile_is_current() -> None:
    """The committed profile was trained on the committed sources (`make pgo` after a change
    to the core)."""
    assert pgo.check(repo_root()) is None
