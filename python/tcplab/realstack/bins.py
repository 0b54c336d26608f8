"""Where the real-stack binaries are: `$TCPLAB_BIN_DIR`, then the repository's build
directories (an editable install runs from the source tree; `make build` uses the `tools`
profile, `cargo build --release` the release one: the newer of the two wins), then `PATH`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from .errors import MissingFeature

#: python/tcplab/realstack/bins.py → the repository root is three levels above the package.
_REPO_ROOT: Final = Path(__file__).resolve().parents[3]

#: How to get each binary when it is missing.
_HINTS: Final = {
    "tcplab-emu": "build it with `make build` (cargo build --profile tools -p tcplab-emu)",
    "tcplab-pep": "build it with `make build` (cargo build --profile tools -p tcplab-pep)",
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
    """Executable `name` from `$TCPLAB_BIN_DIR`, `<repo>/target/{release,tools}`, `PATH`."""
    env_dir = os.environ.get("TCPLAB_BIN_DIR")
    if env_dir and _executable(Path(env_dir) / name):
        return Path(env_dir) / name
    built = [
        path
        for path in (_REPO_ROOT / "target" / profile / name for profile in ("release", "tools"))
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
        raise MissingFeature(f"{name} not found (TCPLAB_BIN_DIR, target/, PATH): {hint}")
    return path
