"""The rule catalogue as the package reads it: stable ids, default severities,
what each means, an example and the fix.

The catalogue itself is declared once, in the core (src/rules.rs), and read
from it here; nothing in Python lists rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .core import core

SEVERITIES = ("error", "warning", "note")
SEVERITY_RANK = {"error": 3, "warning": 2, "note": 1, "never": 99}


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str  # one line: what fires it
    help: str  # what it means, when it fires, the severity's exceptions
    example: str  # what it looks like in a trace
    fix: str  # the one-line help: of the text report


class _Catalogue(Mapping[str, Rule]):
    """Rule id -> Rule in catalogue order, read from the core on first use:
    importing the package needs no compiled core, so a command that cannot
    load it still says so in one line (core())."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] | None = None

    def _load(self) -> dict[str, Rule]:
        if self._rules is None:
            self._rules = {d["id"]: Rule(**d) for d in core().rule_catalogue()}
        return self._rules

    def __getitem__(self, rule_id: str) -> Rule:
        return self._load()[rule_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


RULES: Mapping[str, Rule] = _Catalogue()


def fix_of(rule_id: str) -> str:
    r = RULES.get(rule_id)
    return r.fix if r else ""
