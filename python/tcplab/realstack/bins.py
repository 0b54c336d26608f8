"""Where the real-stack binaries are: `$TCPLAB_BIN_DIR`; the package's own `tcplab/bin/` (a
wheel ships `tcplab-emu` and `tcplab-pep` there); the repository's build directories (an
editable install runs from the source tree: `make build` builds `target/<triple>/tools/`, a
plain `cargo build --release` `target/release/`; the newest wins); then `PATH`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from .errors import MissingFeature

#: python/tcplab/realstack/bins.py → the package directory (a wheel's binaries are in bin/)
_PACKAGE_DIR: Final = Path(__file__).resolve().parents[1]
#: ... and the repository root, three levels above the package, in a source tree.
_REPO_ROOT: Final = Path(__file__).resolve().parents[3]
#: cargo's output directories under target/, with and without an explicit target triple
_BUILD_DIRS: Final = ("release", "tools", "*/release", "*/tools")

#: How to get each binary when it is missing.
_HINTS: Final = {
    "tcplab-emu": "the wheel ships it in tcplab/bin/; in a source tree build it with "
    "`make build` (cargo build --profile tools -p tcplab-emu)",
    "tcplab-pep": "the wheel ships it in tcplab/bin/; in a source tree build it with "
    "`make build` (cargo build --profile tools -p tcplab-pep)",
    "iperf3": "install it with `make system-deps` (Debian package iperf3)",
    "nft": "install it with `make system-deps` (Debian package nftables)",
    "ip": "install iproute2",
    "tc": "install iproute2",
    "ethtool": "install it with `make system-deps` (Debian package ethtool)",
    "tcpdump": "install it with `make system-deps` (Debian package tcpdump)",
}


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(name: str) -> Path | None:
    """Executable `name` from `$TCPLAB_BIN_DIR`, the package's `bin/`, the newest of
    `<repo>/target/{,<triple>/}{release,tools}`, `PATH`."""
    env_dir = os.environ.get("TCPLAB_BIN_DIR")
    if env_dir and _executable(Path(env_dir) / name):
        return Path(env_dir) / name
    if _executable(_PACKAGE_DIR / "bin" / name):
        return _PACKAGE_DIR / "bin" / name
    built = [
        path
        for pattern in _BUILD_DIRS
        for path in (_REPO_ROOT / "target").glob(f"{pattern}/{name}")
        if _executable(path)
    ]
    if built:
        return max(built, key=lambda path: path.stat().st_mtime)
    found = shutil.which(name)
    return Path(found) if found else None


def require_binary(name: str) -> Path:
    """`find_binary`, or a one-line `MissingFeature` saying how to get it."""
    path = find_binary(name)
    if path is None:
        hint = _HINTS.get(name, "install it")
        raise MissingFeature(
            f"{name} not found (TCPLAB_BIN_DIR, tcplab/bin, target/, PATH): {hint}"
        )
    return path
