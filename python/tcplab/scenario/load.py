"""Read scenario files, apply overrides and validate, with one-line errors.

Pipeline: TOML text → raw dict → overrides (on the raw dict, so they are validated like file
content) → pydantic models (`scenario.py`) → cross-field and catalogue checks (`checks.py`).
Every failure is a `ScenarioError` naming the TOML path of the offending key; a bad override
is named as the Python API's argument, `overrides["KEY"]` (the CLI says `--set KEY`).
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from pydantic import ValidationError

from ..catalogue import CcaInfo, ccas
from ..errors import (
    NO_VALUE,
    Problem,
    ScenarioError,
    field_error,
    format_path,
    override_label,
)
from ..files import MAX_SCENARIO_FILE_BYTES, read_text
from ..input_limits import check_tree, parse_toml
from .checks import check_scenario
from .model import Scenario
from .schema import field_by_key, field_kind, keys_of, model_at

ScenarioSource: TypeAlias = Scenario | Mapping[str, Any] | str | os.PathLike[str]
#: `["bottleneck.per=1e-4", ...]` (values parsed as TOML literals), `{"bottleneck.per": 1e-4}`
#: or `[("bottleneck.per", 1e-4), ...]` (values used as given).
Overrides: TypeAlias = Sequence[str | tuple[str, Any]] | Mapping[str, Any]

_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)\s*$")
_TYPE_PROBLEMS = {
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "list_type": "must be an array",
}


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse a TOML file (a regular file of at most `MAX_SCENARIO_FILE_BYTES`); I/O and
    syntax errors become one-line `ScenarioError`s."""
    text = read_text(path, MAX_SCENARIO_FILE_BYTES)
    try:
        return parse_toml(text, str(path))
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: {_toml_problem(str(exc), text)}") from None


def _toml_problem(message: str, text: str) -> str:
    match = _TOML_POSITION.search(message)
    if match is None:
        return f"invalid TOML: {message}"
    if match[1] is not None:
        line, column = int(match[1]), int(match[2])
    else:  # "at end of document": point just past the last character
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    what = message[: match.start()]
    what = what[:1].lower() + what[1:]
    return f"invalid TOML at line {line} column {column}: {what}"


def translate_validation_error(error: ValidationError) -> ScenarioError:
    """The first pydantic error as `<path> = <value>: <problem>; allowed: <what>`."""
    errors = error.errors(include_url=False)
    # A misspelt key also makes the real key "missing"; the unknown key explains both.
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(first["loc"])
    path = format_path(loc)
    kind = first["type"]
    value = first.get("input", NO_VALUE)
    if kind == "missing":
        field = field_by_key(model_at(loc[:-1]), str(loc[-1]))
        hint = field.description if field is not None else None
        return field_error(path, NO_VALUE, "missing required key", hint)
    if kind == "extra_forbidden" and loc in (("sweep",), ("study",)):
        # a study file given where one scenario is expected
        return field_error(
            path,
            NO_VALUE,
            f"a study's [{path}] table: this command runs one scenario",
            f"tcplab sweep FILE to run the study; remove [{path}] to run its base scenario",
        )
    if kind == "extra_forbidden":
        return field_error(path, value, "unknown key", ", ".join(keys_of(model_at(loc[:-1]))))
    if kind == "value_error":
        cause = first.get("ctx", {}).get("error")
        if isinstance(cause, Problem):
            return field_error(path, value, cause.problem, cause.allowed)
        return field_error(path, value, str(cause))
    if kind == "literal_error":
        expected = str(first.get("ctx", {}).get("expected", ""))
        return field_error(path, value, "not an allowed value", expected.replace("'", ""))
    if kind in _TYPE_PROBLEMS:
        allowed = "an array of tables written [[flows]]" if loc == ("flows",) else None
        return field_error(path, value, _TYPE_PROBLEMS[kind], allowed)
    message = str(first["msg"])
    return field_error(path, value, message[:1].lower() + message[1:])


def _split_key(path_text: str) -> list[str | int]:
    # `flows[0].cca` and `flows.0.cca` are the same path
    parts = re.sub(r"\[(\d+)\]", r".\1", path_text.strip()).split(".")
    if any(not part for part in parts):
        raise field_error(
            override_label(), path_text, "malformed key path", 'e.g. "bottleneck.per"'
        )
    return [int(part) if part.isdigit() else part for part in parts]


def parse_override(text: str) -> tuple[str, Any]:
    """`"bottleneck.per=1e-4"` → `("bottleneck.per", 0.0001)`. The value is read as a TOML
    literal when it is one (numbers, booleans, quoted strings, arrays), else kept as text, so
    `duration=60s` and `flows.0.cca=reno` need no quotes."""
    key, sep, value_text = text.partition("=")
    if not sep or not key.strip():
        raise field_error(
            override_label(), text, "expected key.path=value", 'e.g. "bottleneck.per=1e-4"'
        )
    try:
        where = override_label(key.strip())
        value: Any = parse_toml(f"v = {value_text}", where, file=False)["v"]
    except tomllib.TOMLDecodeError:
        value = value_text.strip()
    return key.strip(), value


def override_pairs(overrides: Overrides) -> list[tuple[str, Any]]:
    if isinstance(overrides, Mapping):
        pairs = [(str(key), value) for key, value in overrides.items()]
    elif isinstance(overrides, str):  # a lone "k=v" string is a sequence of characters: wrap it
        pairs = [parse_override(overrides)]
    else:
        pairs = [parse_override(item) if isinstance(item, str) else item for item in overrides]
    for key, value in pairs:
        check_tree(value, (override_label(key),))
    return pairs


def apply_override(root: dict[str, Any], path_text: str, value: Any) -> None:
    """Set `path_text` in the raw scenario dict `root` (in place), creating optional tables.

    Paths are checked against the scenario schema so a typo is reported here, naming the
    override, rather than as an unknown key later. List indices refer to `[[flows]]` tables
    as written (before `count` expansion)."""
    parts = _split_key(path_text)
    where = override_label(format_path(parts))
    node: Any = root
    model = model_at(())
    for position, part in enumerate(parts):
        last = position == len(parts) - 1
        parent = format_path(parts[:position])
        if isinstance(node, list):
            if not isinstance(part, int) or not 0 <= part < len(node):
                allowed = f"0 to {len(node) - 1}" if node else "none (the array is empty)"
                raise field_error(where, value, f"{parent} has no entry {part}", allowed)
        elif not isinstance(node, dict):
            raise field_error(where, value, f"{parent} is not a table")
        elif model is not None:
            field = field_by_key(model, str(part))
            if field is None:
                allowed = ", ".join(keys_of(model))
                raise field_error(where, value, f"unknown key {str(part)!r}", allowed)
            kind, child = field_kind(field.annotation)
            if not last and kind == "leaf":
                raise field_error(where, value, f"{format_path(parts[: position + 1])} is a value")
            part = str(part)
            if not last and part not in node:
                node[part] = [] if kind == "list" else {}
            model = child
        elif not last:  # inside a free-form table (cca_params), which has no sub-tables
            raise field_error(where, value, f"{parent} has no sub-tables")
        else:
            part = str(part)
        if last:
            node[part] = value
            return
        node = node[part]


_TRACE_KEYS = ("rate_trace", "delivery_trace", "return_rate_trace", "return_delivery_trace")


def _cwd_relative(key: str, value: Any) -> Any:
    """A trace file named on the command line is relative to the working directory, not to
    the scenario file: make it absolute before it joins the file's values."""
    if isinstance(value, str) and value.strip() and key.rsplit(".", 1)[-1] in _TRACE_KEYS:
        return str(Path(value.strip()).expanduser().absolute())
    return value


def raw_scenario(source: ScenarioSource) -> dict[str, Any]:
    """A deep copy of the scenario as a TOML-shaped dict (safe to modify)."""
    if isinstance(source, Scenario):
        return source.model_dump(by_alias=True, exclude_none=True)
    if isinstance(source, Mapping):
        check_tree(source)  # before deepcopy, which recurses
        return copy.deepcopy(dict(source))
    raw = read_toml(source)
    raw.setdefault("name", Path(source).stem)  # a file's name is a good default run name
    return raw


def validate_raw(
    raw: Mapping[str, Any], *, base_dir: str | os.PathLike[str] | None = None
) -> Scenario:
    """Pydantic validation only (no catalogue checks). Relative trace file names are read
    from `base_dir` (the scenario file's directory), else from the working directory."""
    try:
        return Scenario.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise translate_validation_error(exc) from None


def load_scenario(
    source: ScenarioSource,
    overrides: Overrides = (),
    *,
    catalogue: Sequence[CcaInfo] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Scenario:
    """Read (a path), copy (a dict or `Scenario`), apply overrides and fully validate.

    `catalogue` defaults to the core's (`tcplab.ccas()`); pass `()` to skip algorithm checks.
    Trace files named in a scenario file are relative to the file's directory; for a dict,
    to `base_dir` (default: the working directory). A `Scenario` already holds absolute
    names. Trace files in `overrides` are relative to `base_dir` when it is given, else to the
    working directory. Raises `ScenarioError` with a one-line message.
    """
    raw = raw_scenario(source)
    # overrides name trace files relative to `base_dir` when it is given (a study's axes, next
    # to its file), else relative to the working directory (the command line)
    explicit_base = base_dir is not None
    if base_dir is None and not isinstance(source, Scenario | Mapping):
        base_dir = Path(source).parent
    for key, value in override_pairs(overrides):
        apply_override(raw, key, value if explicit_base else _cwd_relative(key, value))
    scenario = validate_raw(raw, base_dir=base_dir)
    check_scenario(scenario, ccas() if catalogue is None else catalogue)
    return scenario
