"""The published studies shipped with the package (`published/`), by name."""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def preset_dir() -> Path:
    return Path(str(importlib.resources.files("tcplab.study") / "published"))


def presets() -> dict[str, list[Path]]:
    """Preset studies: `published/NAME.toml`, or `published/NAME/*.toml` for a study in parts
    (run into one database, reported together)."""
    root = preset_dir()
    found: dict[str, list[Path]] = {}
    for p in sorted(root.iterdir()):
        if p.suffix == ".toml":
            found[p.stem] = [p]
        elif p.is_dir() and any(p.glob("*.toml")):
            found[p.name] = sorted(p.glob("*.toml"))
    return found
