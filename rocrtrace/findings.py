"""Findings: what the models conclude, with the events that prove it."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .events import Event
from .paths import repo_relative
from .rules import RULES

FINGERPRINT_SCHEME = "rocrtrace/v1"

# The role of a repeated finding's last occurrence (src/findings.rs
# Repeats): "the last of N".  Not part of the fingerprint, which stays the
# one the finding has when it happens once.
LAST_OF = "the last of "


@dataclass
class Evidence:
    """One event that makes a finding true, and its role in the story."""

    role: str  # e.g. "this close", "previous close", "created by"
    event: Event
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        ev = self.event
        return {
            "role": self.role,
            "file": ev.file,
            "line": ev.line,
            "pid": ev.pid,
            "tid": ev.tid,
            "time": ev.time,
            "call": ev.text,
            "note": self.note,
            "stack": [f.to_dict() for f in ev.stack],
        }


@dataclass
class Finding:
    rule: str
    message: str
    event: Event | None  # the offending event (None: whole input)
    subject: dict[str, Any]
    evidence: list[Evidence] = field(default_factory=list)
    severity: str = ""  # defaults to the rule's
    cause: str | None = None
    # Stable ingredients of the fingerprint: what, not run-specific values
    # (no pids, fd numbers, absolute addresses, times).
    key: tuple = ()
    details: dict[str, Any] = field(default_factory=dict)
    file: str | None = None  # for findings with no event
    line: int | None = None
    fingerprint: str = ""
    base_fingerprint: str = ""  # before collision numbering
    program: str = ""  # executable name, when the trace names it

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
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "pid": self.pid,
            "tid": self.tid,
            "time": self.time,
            "subject": self.subject,
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
    across runs of the same binaries, independent of ASLR.  A frame the
    symbolizer resolved adds its call site (source file name and line), so
    two calls from one function on different lines differ."""
    sig = []
    for fr in stack[:depth]:
        mod = (fr.module or "").rsplit("/", 1)[-1]
        fn = fr.symbol or fr.function
        s = f"{mod}!{fn}" if fn else f"{mod}+{fr.addr:#x}" if fr.addr is not None else mod
        if fr.source and fr.source_line:
            s += f"@{fr.source.rsplit('/', 1)[-1]}:{fr.source_line}"
        sig.append(s)
    return tuple(sig)


def _text(x) -> str:
    return str(x).encode("utf-8", "surrogatepass").decode("utf-8", "replace") if isinstance(x, str) else str(x)


def _digest(parts) -> str:
    # surrogatepass: a path decoded from invalid UTF-8 (surrogateescape) or
    # a lone surrogate from a JSON escape must still hash, not crash.
    data = "\x1f".join(_text(p) for p in parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def fingerprint(f: Finding, program: str = "") -> str:
    """The finding's identity without run-specific values."""
    return _digest(
        [FINGERPRINT_SCHEME, program, f.rule, *map(str, f.key), *evidence_signature(f), *stack_signature(f.stack)]
    )


# Numbers that change from run to run inside otherwise stable paths:
# socket:[12345], /proc/4242/fd, /tmp/tmp.3f2a, anon_inode:[eventfd]-7.
_RUN_NUMBER = re.compile(r"\d+")


def normalize_path(path: str) -> str:
    return _RUN_NUMBER.sub("N", path)


def _event_paths(ev) -> list[str]:
    # Fingerprinting lives in the Python front with the reporters, so it
    # reads only plain fields, and only where an event has them.
    out = []
    p = getattr(ev, "path", None)
    if isinstance(p, str):
        out.append(p)
    for q in getattr(ev, "paths", ()) or ():
        if isinstance(q, str):
            out.append(q)
    return [normalize_path(x) for x in out]


def evidence_signature(f: Finding) -> list[str]:
    """The calls of the story by name with the paths and fd kinds they
    touched, then the call sites of the evidence events that have stacks."""
    parts = []
    subj = f.subject or {}
    if subj.get("fd_kind"):
        parts.append(f"kind={subj['fd_kind']}")
    for ev in f.evidence:
        if ev.role.startswith(LAST_OF):
            continue
        e = ev.event
        parts.append(f"{normalize_path(ev.role)}:{getattr(e, 'name', '') or ''}:" + ",".join(_event_paths(e)))
        if e.stack and e is not f.event:
            parts.append("@" + "|".join(stack_signature(e.stack, depth=2)))
    return parts


def program_of(exe: str | None) -> str:
    """The executable's base name; "" when the trace never names it (strace
    attached mid-run, a pasted excerpt): then only the rest of the
    fingerprint tells programs apart."""
    return exe.rsplit("/", 1)[-1] if exe else ""


class Programs:
    """Follows which executable each process runs (preload headers, execve,
    fork), fed like a model so it sees the events in replay order."""

    def __init__(self):
        self.exe: dict = {}
        self.findings: list = []

    def feed(self, ev) -> None:
        name = ev.event
        if name == "ProcessInfo" and getattr(ev, "exe", None):
            self.exe[ev.pid] = ev.exe
        elif name == "Exec" and ev.ret == 0 and getattr(ev, "path", None):
            self.exe[ev.pid] = ev.path
        elif (
            name == "Clone"
            and ev.ret is not None
            and ev.ret > 0
            and not getattr(ev, "thread", False)
            and ev.pid in self.exe
        ):
            self.exe.setdefault(ev.ret, self.exe[ev.pid])

    def finish(self) -> None:
        pass

    def of(self, f: Finding) -> str:
        exe = self.exe.get(f.pid)
        if exe is None and len(set(self.exe.values())) == 1:
            # a process the trace saw no exec or fork of, in a one-program trace
            exe = next(iter(self.exe.values()))
        return program_of(exe)


def assign_fingerprints(findings, programs: Programs | None = None) -> None:
    """Fingerprint findings once their stacks are symbolized; then number
    the ones that would still collide."""
    for f in findings:
        f.program = programs.of(f) if programs else ""
        f.base_fingerprint = fingerprint(f, f.program)
    number_collisions(findings)


def number_collisions(findings) -> None:
    """Two different findings never share a fingerprint: the n-th finding
    with the same ingredients (in trace order) gets n mixed in.  The first
    keeps the plain digest, so adding a finding elsewhere changes nothing."""
    seen: dict[str, int] = {}
    order = sorted(
        findings,
        key=lambda f: (f.file or "", f.line or 0, getattr(f.event, "seq", 0) if f.event else 0, f.rule, f.message),
    )
    for f in order:
        base = f.base_fingerprint or f.fingerprint
        f.base_fingerprint = base
        n = seen[base] = seen.get(base, 0) + 1
        f.fingerprint = base if n == 1 else _digest([base, str(n)])


def symbolize_findings(findings: list[Finding], maps: list, debug_dirs=()) -> None:
    """Resolve the frames the report will show, and only those."""
    stacks = []
    for f in findings:
        if f.event is not None and f.event.stack:
            stacks.append(f.event.stack)
        for ev in f.evidence:
            if ev.event.stack:
                stacks.append(ev.event.stack)
    if not stacks:
        return
    from .symbolize import Symbolizer

    sym = Symbolizer(debug_dirs=list(debug_dirs), maps=maps)
    for st in stacks:
        sym.symbolize_stack(st)


def _raw_label(fr) -> str:
    """A frame's label as the core wrote it into messages, before the
    symbolizer named its function and source line (events.Frame.label)."""
    where = fr.module
    if fr.symbol:
        where += f"({fr.symbol}" + (f"+{fr.sym_offset:#x}" if fr.sym_offset is not None else "") + ")"
    if fr.addr is not None:
        where += f" [{fr.addr:#x}]"
    return where


def _site_label(fr, cwd: str | None = None) -> str | None:
    """A symbolized frame as the evidence shows it: ``src/prog.c:13 release``
    (the source relative to ``cwd`` when it lies under it); None when the
    symbolizer found no source line."""
    if not (fr.source and fr.source_line):
        return None
    path = repo_relative(fr.source, cwd) if os.path.isabs(fr.source) else None
    fn = fr.function or fr.symbol
    return f"{path or fr.source}:{fr.source_line}" + (f" {fn}" if fn else "")


def symbolize_messages(findings, cwd: str | None = None) -> None:
    """The core writes a call site into a message as the raw frame
    (``prog(release+0x15) [0x11a8]``) before Python symbolizes stacks; once
    they are, the message names it as the evidence does (``prog.c:13
    release``), so a headline never reads rawer than the lines below it."""
    for f in findings:
        if not f.message or "[0x" not in f.message:
            continue
        swap = {}
        for st in [f.stack, *(ev.event.stack for ev in f.evidence)]:
            for fr in st or ():
                site = _site_label(fr, cwd)
                if site:
                    swap.setdefault(_raw_label(fr), site)
        msg = f.message
        for raw in sorted(swap, key=len, reverse=True):
            msg = msg.replace(raw, swap[raw])
        f.message = msg
