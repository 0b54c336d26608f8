"""One-line user errors.

Every mistake a user can make (bad TOML, an unknown key, a wrong unit, a bad command-line value)
ends up as a `ScenarioError` whose `str()` is a single line of the form
`<field path> = <value>: <problem>; allowed: <what>`. The CLI prints it after `error: ` and exits
with status 2, so users never see a traceback for their own mistakes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

#: Stands for "the key is absent", so the message can leave out ` = <value>`.
NO_VALUE: Final = object()

_MAX_VALUE_CHARS: Final = 60


class ScenarioError(ValueError):
    """A user mistake described in one line (without the leading `error: `)."""

    def __init__(self, message: str) -> None:
        # Messages come from several sources (pydantic, the TOML parser, the core); collapse any
        # line breaks so the CLI contract "exactly one line on stderr" holds whatever the source.
        super().__init__(" ".join(message.split()))


class Problem(ValueError):
    """What is wrong with one value, before we know where the value sits in the scenario.

    Parsers and validators raise it; the loader adds the field path and turns it into a
    `ScenarioError`.
    """

    def __init__(self, problem: str, allowed: str | None = None) -> None:
        super().__init__(problem if allowed is None else f"{problem}; allowed: {allowed}")
        self.problem = problem
        self.allowed = allowed


def render_value(value: Any) -> str:
    """Show a user value the way it would be written in TOML (strings quoted), shortened."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, default=str, ensure_ascii=False)
        except ValueError:  # circular structures cannot come from TOML, but stay one line anyway
            text = repr(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def field_error(path: str, value: Any, problem: str, allowed: str | None = None) -> ScenarioError:
    """Build the standard message; pass `NO_VALUE` as `value` for a missing key."""
    where = path if value is NO_VALUE else f"{path} = {render_value(value)}"
    tail = "" if allowed is None else f"; allowed: {allowed}"
    return ScenarioError(f"{where}: {problem}{tail}")


def format_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """`("flows", 0, "tcp", "mss")` → `flows[0].tcp.mss` (TOML array-of-tables style)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "<scenario>"


#: `overrides["KEY"]` at the start of a message (the key JSON-quoted)
_OVERRIDE: Final = re.compile(r'^overrides\[("(?:[^"\\]|\\.)*")\]')


def override_label(path: str | None = None) -> str:
    """How an error names an override (`tcplab.run(..., overrides=...)`): `overrides` for the
    argument as a whole, `overrides["bottleneck.per"]` for one key. The command line says
    `--set` instead (`cli_names`)."""
    return "overrides" if path is None else f"overrides[{json.dumps(path)}]"


def overridden_key(message: str) -> tuple[str, int] | None:
    """The key an override error names at its start, and where that name ends."""
    found = _OVERRIDE.match(message)
    return None if found is None else (str(json.loads(found.group(1))), found.end())


def cli_names(message: str) -> str:
    """A library message as the command line says it: its overrides came from `--set`
    (`overrides["k"] = 1: ...` → `--set k = 1: ...`, `overrides = ...` → `--set = ...`), and
    `force=True` is `--force`."""
    # the library's way to run past the resource budget is the command line's `--force`
    message = message.replace("force=True", "--force")
    found = overridden_key(message)
    if found is not None:
        return f"--set {found[0]}{message[found[1] :]}"
    if message.startswith("overrides = ") or message.startswith("overrides: "):
        return "--set" + message[len("overrides") :]
    return message
