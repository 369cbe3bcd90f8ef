"""The rule catalogue as the package reads it: stable ids, default severities,
what each means, an example and the fix.

The catalogue itself is declared once, in the core (src/rules.rs), and read
from it here when this module is imported; nothing in Python lists rules.
"""
from __future__ import annotations

from dataclasses import dataclass

from .core import core

SEVERITIES = ("error", "warning", "note")
SEVERITY_RANK = {"error": 3, "warning": 2, "note": 1, "never": 99}


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str    # one line: what fires it
    help: str       # what it means, when it fires, the severity's exceptions
    example: str    # what it looks like in a trace
    fix: str        # the one-line help: of the text report


RULES: dict[str, Rule] = {d["id"]: Rule(**d) for d in core().rule_catalogue()}


def fix_of(rule_id: str) -> str:
    r = RULES.get(rule_id)
    return r.fix if r else ""
