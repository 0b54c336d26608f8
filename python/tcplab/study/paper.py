"""The paper a study reproduces: a study file's `[study.paper]` table.

    [study.paper]
    authors = ["Ahmed Abdelsalam", "Cesare Roseti", "Francesco Zampognaro"]
    title = "Steady-State Performance Evaluation of Linux TCPs versus TCP Wave over ..."
    venue = "China Communications 14(3)"
    year = 2017
    doi = "10.xxxx/..."        # optional, where one exists
    url = "https://..."        # optional
    note = "ns-3.23 with DCE"  # optional: what the reader should know (e.g. an undated copy)

It is part of the study file, not of the study's effective definition: citing a paper never
makes a new revision. `tcplab study list` and `study show` name it, and a report reads it from
the study file stored with each revision, so a database carries its papers.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from ..errors import NO_VALUE, field_error

_REQUIRED: Final = ("authors", "title", "venue")
_OPTIONAL: Final = ("year", "doi", "url", "note")
_DOI: Final = re.compile(r"10\.\d{4,9}/\S+")


@dataclass(frozen=True)
class Paper:
    """A publication; `authors` may be empty when the copy at hand names none (`note` then
    says so)."""

    authors: tuple[str, ...]
    title: str
    venue: str
    year: int | None = None
    doi: str | None = None
    url: str | None = None
    note: str | None = None

    @classmethod
    def from_toml(cls, raw: Any, where: str = "study.paper") -> Paper:
        """Validate a `[study.paper]` table; one-line errors name the key."""
        if not isinstance(raw, Mapping):
            raise field_error(where, raw, "must be a table", ", ".join((*_REQUIRED, *_OPTIONAL)))
        unknown = sorted(set(raw) - {*_REQUIRED, *_OPTIONAL})
        if unknown:
            key = unknown[0]
            raise field_error(
                f"{where}.{key}", raw[key], "unknown key", ", ".join((*_REQUIRED, *_OPTIONAL))
            )
        for key in _REQUIRED:
            if key not in raw:
                raise field_error(f"{where}.{key}", NO_VALUE, "missing required key")
        authors = raw["authors"]
        if not isinstance(authors, list) or not all(
            isinstance(a, str) and a.strip() for a in authors
        ):
            raise field_error(f"{where}.authors", authors, "must be an array of names")
        text: dict[str, str | None] = {}
        for key in ("title", "venue", "doi", "url", "note"):
            value = raw.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise field_error(f"{where}.{key}", value, "must be a non-empty string")
            text[key] = value
        doi = text["doi"]
        if doi is not None and not _DOI.fullmatch(doi):
            raise field_error(f"{where}.doi", doi, "not a DOI", 'e.g. "10.1145/1234567.1234568"')
        year = raw.get("year")
        if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
            raise field_error(f"{where}.year", year, "must be an integer")
        if year is not None and not 1000 <= year <= 9999:
            raise field_error(f"{where}.year", year, "out of range", "a four-digit year")
        return cls(
            tuple(authors),
            str(text["title"]),
            str(text["venue"]),
            year,
            doi,
            text["url"],
            text["note"],
        )

    @property
    def author_list(self) -> str:
        """Surnames as one cites them: "A", "A & B", "A, B & C", "A et al." (four or more);
        "author not named" for none."""
        names = [name.split()[-1] for name in self.authors]
        if not names:
            return "author not named"
        if len(names) >= 4:
            return f"{names[0]} et al."
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} & {names[-1]}"

    def citation(self) -> str:
        """One line: `Authors, "Title", Venue, Year. doi:... (note)`."""
        year = f", {self.year}" if self.year is not None else ""
        line = f'{", ".join(self.authors) or "(author not named)"}, "{self.title}", '
        line += f"{self.venue}{year}."
        if self.doi:
            line += f" doi:{self.doi}"
        elif self.url:
            line += f" {self.url}"
        return line + (f" ({self.note})" if self.note else "")

    def short(self) -> str:
        """`Surnames, Venue, Year` for a table cell."""
        year = f", {self.year}" if self.year is not None else ""
        return f"{self.author_list}, {self.venue}{year}"

    def to_toml_dict(self) -> dict[str, Any]:
        """The `[study.paper]` table again (absent keys left out)."""
        out = asdict(self)
        out["authors"] = list(self.authors)
        return {k: v for k, v in out.items() if v is not None}


def paper_of_file(text: str) -> Paper | None:
    """The paper a stored study file cites (None: none, or a file that no longer parses)."""
    try:
        study = tomllib.loads(text).get("study")
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(study, Mapping) or "paper" not in study:
        return None
    try:
        return Paper.from_toml(study["paper"])
    except ValueError:
        return None
