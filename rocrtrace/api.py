"""The typed Python API, for people who script triage:

    import rocrtrace

    report = rocrtrace.analyze(["trace.log"], fail_on="warning")
    for f in report.findings:
        if f.rule == "fd-double-close":
            print(f.location, f.subject.fd, [e.call for e in f.evidence])

``analyze`` runs what ``rocrtrace analyze`` runs (the same engine,
symbolization, fingerprints, rule selection, per-rule severities and
baseline) and returns a :class:`Report` of frozen dataclasses.  An input
that cannot be read or recognized raises :class:`InputError` when it is the
only one; among several it is listed in ``Report.errors`` (the CLI's exit
2).  Nothing heavy is imported until ``analyze`` is called.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from .paths import InputError

Severity = Literal["error", "warning", "note"]
FailOn = Literal["error", "warning", "note", "never"]
PathArg = Union[str, "os.PathLike[str]"]

__all__ = ["analyze", "Report", "Finding", "Evidence", "Subject", "Frame", "Input", "Coverage", "InputError"]


@dataclass(frozen=True)
class Frame:
    """One stack frame: the module and the offset into its file, and the
    function and source line where symbolized."""

    module: str
    offset: int | None = None
    symbol: str | None = None
    function: str | None = None
    source: str | None = None
    line: int | None = None
    label: str = ""  # as the text report prints it


@dataclass(frozen=True)
class Evidence:
    """One event that makes a finding true, with its role in the story."""

    role: str
    file: str
    line: int
    pid: int | None
    tid: int | None
    time: float | None  # entry time, seconds
    duration: float | None  # seconds
    call: str  # the trace's whole text of the call, never cut
    note: str = ""
    stack: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class Subject:
    """What a finding is about: ``kind`` is ``svm-range`` (start, end,
    gpu_ids), ``fd`` (fd, fd_kind), ``handle`` (handle), ``process`` or
    ``input`` (file).  Addresses and handles are ints."""

    kind: str
    start: int | None = None
    end: int | None = None  # exclusive
    gpu_ids: tuple[int, ...] = ()
    fd: int | None = None
    fd_kind: str | None = None
    handle: int | None = None
    file: str | None = None


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    file: str | None  # the trace file and line of the offending call
    line: int | None
    pid: int | None
    tid: int | None
    time: float | None
    subject: Subject
    evidence: tuple[Evidence, ...]
    stack: tuple[Frame, ...]
    fingerprint: str
    cause: str | None = None
    program: str = ""
    # SOURCE:LINE where the stack has the program's frame, else TRACE:LINE
    location: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Input:
    file: str
    format: str
    lines: int
    events: int
    unparsed: int


@dataclass(frozen=True)
class Coverage:
    """What the inputs could and could not show, and how to see more."""

    shows: tuple[str, ...] = ()
    cannot_show: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    inputs: tuple[Input, ...]
    coverage: Coverage
    fail_on: FailOn = "error"
    suppressed: tuple[Finding, ...] = ()  # by the baseline
    errors: tuple[str, ...] = ()  # inputs that could not be read
    _result: Any = field(default=None, repr=False, compare=False, hash=False)

    @property
    def failed(self) -> bool:
        """Whether a finding is at or above ``fail_on`` (the CLI's exit 1)."""
        from .rules import SEVERITY_RANK

        limit = SEVERITY_RANK[self.fail_on]
        return any(SEVERITY_RANK[f.severity] >= limit for f in self.findings)

    def by_rule(self, rule: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.rule == rule)

    def render(self, fmt: str = "text", **opts: Any) -> str | bytes:
        """The report in any ``--format`` (text, json, html, parquet …);
        bytes for the binary ones."""
        from .report import render

        return render(self._result, fmt, **opts)  # type: ignore[no-any-return]


def analyze(
    paths: PathArg | Iterable[PathArg],
    *,
    input_format: str | None = None,
    enable: Iterable[str] | None = None,
    disable: Iterable[str] = (),
    fail_on: FailOn = "error",
    severity: Mapping[str, Severity] | None = None,
    baseline: PathArg | None = None,
    all_fds: bool = False,
    jobs: int = 1,
    debug_dirs: Iterable[PathArg] = (),
    source_root: PathArg | None = None,
) -> Report:
    """Analyze the traces ``paths`` (files, directories, globs, ``-``) as
    ``rocrtrace analyze`` does; the keyword options are its options."""
    from . import engine
    from .cli import check_recognized
    from .config import FAIL_ON, SEVERITIES, apply_severities
    from .rules import RULES

    names = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    chosen = set(enable) if enable is not None else set(RULES)
    chosen -= set(disable)
    unknown = sorted((chosen | set(disable) | set(severity or ())) - set(RULES))
    if unknown:
        raise ValueError(f"unknown rule(s): {', '.join(unknown)} (see 'rocrtrace rules')")
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail_on must be one of {', '.join(FAIL_ON)}")
    bad = {s for s in (severity or {}).values() if s not in SEVERITIES}
    if bad:
        raise ValueError(f"severities must be {', '.join(SEVERITIES)}, not {sorted(bad)}")
    result = engine.analyze(
        names,
        input_format=input_format,
        enabled=chosen,
        debug_dirs=[os.fspath(d) for d in debug_dirs],
        fail_on=fail_on,
        all_fds=all_fds,
        jobs=jobs,
        keep_going=True,
    )
    try:
        check_recognized(result.inputs, input_format)
    except Exception as e:  # the CLI's UsageFail: one line, the user's to fix
        raise InputError(str(getattr(e, "message", e))) from None
    if severity:
        apply_severities(result.findings, dict(severity))
    if baseline is not None:
        from .baseline import apply_baseline, load_baseline

        apply_baseline(result, load_baseline(os.fspath(baseline)))
    root = os.fspath(source_root) if source_root is not None else None
    return Report(
        findings=tuple(_finding(f, root) for f in result.sorted_findings()),
        inputs=tuple(Input(i.file, i.format, i.lines, i.events, i.unparsed) for i in result.inputs),
        coverage=Coverage(*(tuple(result.coverage.get(k) or ()) for k in ("shows", "cannot_show", "advice"))),
        fail_on=fail_on,
        suppressed=tuple(_finding(f, root) for f in result.suppressed),
        errors=tuple(result.errors),
        _result=result,
    )


def _frame(fr: Any) -> Frame:
    return Frame(
        module=fr.module,
        offset=fr.addr,
        symbol=fr.symbol,
        function=fr.function,
        source=fr.source,
        line=fr.source_line,
        label=fr.label(),
    )


def _subject(s: Mapping[str, Any] | None) -> Subject:
    from .report.common import to_int

    s = s or {}
    fd = s.get("fd")
    return Subject(
        kind=str(s.get("kind", "")),
        start=to_int(s.get("start")),
        end=to_int(s.get("end")),
        gpu_ids=tuple(g for g in (to_int(x) for x in s.get("gpu_ids") or ()) if g is not None),
        fd=fd if isinstance(fd, int) else None,
        fd_kind=s.get("fd_kind"),
        handle=to_int(s.get("handle")),
        file=s.get("file"),
    )


def _finding(f: Any, root: str | None) -> Finding:
    from .report.common import primary_location

    file, line = primary_location(f, root)
    return Finding(
        rule=f.rule,
        severity=f.severity,
        message=f.message,
        file=f.file,
        line=f.line,
        pid=f.pid,
        tid=f.tid,
        time=f.time,
        subject=_subject(f.subject),
        evidence=tuple(
            Evidence(
                role=ev.role,
                file=ev.event.file,
                line=ev.event.line,
                pid=ev.event.pid,
                tid=ev.event.tid,
                time=ev.event.time,
                duration=ev.event.dur,
                call=ev.event.text,
                note=ev.note or "",
                stack=tuple(_frame(fr) for fr in ev.event.stack),
            )
            for ev in f.evidence
        ),
        stack=tuple(_frame(fr) for fr in f.stack),
        fingerprint=f.fingerprint,
        cause=f.cause,
        program=f.program,
        location=f"{file}:{line}" if file and line is not None else file,
        details=dict(f.details or {}),
    )
