"""A run's scenario identity: the hash of its normalized scenario (no scenario model needed, so
code that holds a stored, normalized scenario asks here without loading the model)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def scenario_hash(normalized: Mapping[str, Any]) -> str:
    """Hex digest of the whole normalized scenario (overrides applied) except its seed and
    name: the seed is the other half of a run's key, and the name does not change a number,
    so renaming a scenario or study keeps its results. With the seed and the simulator's
    model version it identifies a run (docs/results.md "Identity")."""
    body = {k: v for k, v in normalized.items() if k not in ("seed", "name")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]
