"""Findings: what the models conclude, with the events that prove it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .events import Event
from .rules import RULES

FINGERPRINT_SCHEME = "rocrtrace/v1"


@dataclass
class Evidence:
    """One event that makes a finding true, and its role in the story."""

    role: str            # e.g. "this close", "previous close", "created by"
    event: Event
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        ev = self.event
        return {
            "role": self.role, "file": ev.file, "line": ev.line, "pid": ev.pid,
            "tid": ev.tid, "time": ev.time, "call": ev.text, "note": self.note,
            "stack": [f.to_dict() for f in ev.stack],
        }


@dataclass
class Finding:
    rule: str
    message: str
    event: Event | None                 # the offending event (None: whole input)
    subject: dict[str, Any]
    evidence: list[Evidence] = field(default_factory=list)
    severity: str = ""                  # defaults to the rule's
    cause: str | None = None
    # Stable ingredients of the fingerprint: what, not run-specific values
    # (no pids, fd numbers, absolute addresses, times).
    key: tuple = ()
    details: dict[str, Any] = field(default_factory=dict)
    file: str | None = None             # for findings with no event
    line: int | None = None
    fingerprint: str = ""

    def __post_init__(self) -> None:
        if not self.severity:
            self.severity = RULES[self.rule].severity
        if self.event is not None:
            self.file = self.event.file
            self.line = self.event.line
        if not self.fingerprint:
            self.fingerprint = fingerprint(self)

    @property
    def pid(self):
        return self.event.pid if self.event else None

    @property
    def tid(self):
        return self.event.tid if self.event else None

    @property
    def time(self):
        return self.event.time if self.event else None

    @property
    def stack(self):
        return self.event.stack if self.event else ()

    def to_dict(self) -> dict[str, Any]:
        d = {
            "rule": self.rule, "severity": self.severity, "message": self.message,
            "file": self.file, "line": self.line, "pid": self.pid, "tid": self.tid,
            "time": self.time, "subject": self.subject,
            "evidence": [e.to_dict() for e in self.evidence],
            "stack": [f.to_dict() for f in self.stack],
            "fingerprint": self.fingerprint,
        }
        if self.cause:
            d["cause"] = self.cause
        if self.details:
            d["details"] = self.details
        return d


def stack_signature(stack, depth: int = 4) -> tuple[str, ...]:
    """Top frames as ``module!function`` (fallback ``module+offset``): stable
    across runs of the same binaries, independent of ASLR."""
    sig = []
    for fr in stack[:depth]:
        mod = fr.module.rsplit("/", 1)[-1]
        fn = fr.symbol      # not the symbolizer's name: same with or without debug info
        sig.append(f"{mod}!{fn}" if fn else f"{mod}+{fr.addr:#x}" if fr.addr is not None else mod)
    return tuple(sig)


def fingerprint(f: Finding) -> str:
    parts = [FINGERPRINT_SCHEME, f.rule, *map(str, f.key), *stack_signature(f.stack)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
