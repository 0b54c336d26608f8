"""Errors of the real-stack mode.

Both are `ScenarioError`s, so the CLI prints them as one line and exits with status 2:
`MissingFeature` when the machine lacks something (root, a kernel feature, a tool),
`EmulationError` when building the topology or running the traffic failed.
"""

from __future__ import annotations

from ..errors import ScenarioError


class MissingFeature(ScenarioError):
    """Root, a kernel feature or a tool that the emulation needs is missing."""


class EmulationError(ScenarioError):
    """A command that builds the topology or runs the traffic failed."""
