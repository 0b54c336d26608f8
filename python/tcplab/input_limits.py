"""The sizes of user input that are refused before anything is built from it.

Scenario and study files, `--set` values and the dicts the Python API takes are checked
against these before validation (`check_tree`), so a hostile file costs a bounded amount of
parsing and ends in one line naming where it went wrong instead of a RecursionError, a
conversion error or a run that never ends. The core's own ranges (durations, rates, flows,
trace lengths) are in `limits.py`; docs/limits.md lists both.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from .errors import NO_VALUE, Problem, ScenarioError, field_error, format_path
from .limits import LIMITS

#: Arrays and tables inside one another; the deepest shipped file needs 5
#: (`sweep.variants[0].set."key" = [...]`).
MAX_NESTING_DEPTH: Final = 16
#: Characters of one string value or key (file names included: PATH_MAX is 4096).
MAX_STRING_CHARS: Final = 4096
#: Entries of one array or table.
MAX_ITEMS: Final = 100_000
#: Integers: TOML's 64-bit signed range, widened to u64 for seeds.
MIN_INTEGER: Final = -(2**63)
MAX_INTEGER: Final = 2**64 - 1
#: Characters of the number in a quantity string such as `"250ms"`, and the largest decimal
#: exponent it may carry: any exponent beyond it is far outside every range the core takes,
#: and `"1e99999999s"` would otherwise be expanded into a number of a hundred million digits.
MAX_NUMBER_CHARS: Final = 64
MAX_EXPONENT: Final = 30
#: Lines of a rate or delivery trace file, and entries of any list the core takes (the core's).
MAX_TRACE_LINES: Final = LIMITS.max_trace_len
#: Distinct values of one swept range (`{log = [a, b], points = n}`) and runs of one study
#: (grid points x repetitions; the core's limit, which also budgets a sweep).
MAX_POINTS: Final = 100_000
MAX_RUNS: Final = LIMITS.max_runs
#: Repetitions of each grid point (`[sweep] repetitions`).
MAX_REPETITIONS: Final = 100_000

_LONG_INTEGER: Final = re.compile(r"[0-9_]{21,}")


def check_tree(value: Any, where: tuple[str | int, ...] = ()) -> None:
    """Raise `ScenarioError` naming the first value (depth first) past a limit above.

    Iterative, so it cannot itself run out of stack on what it is meant to refuse."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, where)]
    while stack:
        node, loc = stack.pop()
        depth = len(loc) - len(where)
        if isinstance(node, Mapping | list | tuple):
            if depth >= MAX_NESTING_DEPTH:
                raise field_error(
                    format_path(loc),
                    NO_VALUE,
                    f"arrays and tables nested more than {MAX_NESTING_DEPTH} deep",
                    f"at most {MAX_NESTING_DEPTH} levels",
                )
            if len(node) > MAX_ITEMS:
                raise field_error(
                    format_path(loc),
                    NO_VALUE,
                    f"{len(node)} entries are too many",
                    f"at most {MAX_ITEMS}",
                )
            if isinstance(node, Mapping):
                for key, child in reversed(list(node.items())):
                    if not isinstance(key, str):
                        raise field_error(format_path(loc), key, "a key must be a string")
                    _check_string(key, (*loc, key[:40]))
                    stack.append((child, (*loc, key)))
            else:
                for index in reversed(range(len(node))):
                    stack.append((node[index], (*loc, index)))
        elif isinstance(node, str):
            _check_string(node, loc)
        elif isinstance(node, int) and not isinstance(node, bool):
            if not MIN_INTEGER <= node <= MAX_INTEGER:
                raise field_error(
                    format_path(loc),
                    NO_VALUE,
                    f"an integer of {_digits(node)} digits is outside the 64-bit range",
                    f"{MIN_INTEGER} to {MAX_INTEGER}",
                )


def _digits(number: int) -> int:
    if abs(number).bit_length() < 10_000:
        return len(str(abs(number)))
    # thousands of digits cannot even be printed (sys.get_int_max_str_digits): about this many
    return int(abs(number).bit_length() * math.log10(2)) + 1


def _check_string(text: str, loc: tuple[str | int, ...]) -> None:
    if len(text) > MAX_STRING_CHARS:
        raise field_error(
            format_path(loc),
            text,
            f"a string of {len(text)} characters is too long",
            f"at most {MAX_STRING_CHARS} characters",
        )


def parse_toml(text: str, where: str, *, file: bool = True) -> dict[str, Any]:
    """`tomllib.loads` with every failure as a one-line `ScenarioError` starting with
    `where` (a file name, `--set KEY`). `file`: the text is a file the user wrote, so an
    error names its line and column, and the result is checked by `check_tree` (a `--set`
    value is checked where it is named)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise  # the caller places the syntax error in the file
    except RecursionError:
        raise ScenarioError(
            f"{where}: arrays and tables nested more than {MAX_NESTING_DEPTH} deep; "
            f"allowed: at most {MAX_NESTING_DEPTH} levels"
        ) from None
    except ValueError as exc:
        # Python refuses to convert integers of thousands of digits (int_max_str_digits)
        raise ScenarioError(f"{where}: {_long_integer(text, file) or exc}") from None
    if file:
        check_tree(raw)
    return raw


def _long_integer(text: str, positions: bool) -> str | None:
    found = _LONG_INTEGER.search(text)
    if found is None:
        return None
    at = ""
    if positions:
        line = text.count("\n", 0, found.start()) + 1
        column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
        at = f" at line {line} column {column}"
    return (
        f"an integer of {len(found.group())} digits{at} is outside the 64-bit range; "
        f"allowed: {MIN_INTEGER} to {MAX_INTEGER}"
    )


def exact_number(text: str) -> Fraction:
    """A decimal number's text (`"1.5"`, `"2e-3"`) as an exact fraction, refusing a number
    longer than `MAX_NUMBER_CHARS` or with an exponent beyond `MAX_EXPONENT` before it is
    expanded. Raises `Problem`."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS:
        raise Problem(
            f"a number of {len(text)} characters is too long",
            f"at most {MAX_NUMBER_CHARS} characters",
        )
    _mantissa, _, exponent = text.lower().partition("e")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise Problem("out of range", f"exponents from -{MAX_EXPONENT} to {MAX_EXPONENT}")
    return Fraction(text)
