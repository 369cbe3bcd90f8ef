"""Helpers every reporter shares: where a finding points, how a subject and an
evidence line read, and how untrusted trace text is made safe to print.

Trace text is untrusted: a program's paths and strings reach the report
through fd decorations and call text, so every reporter escapes it for its
own medium; the terminal ones start from :func:`printable`.
"""

from __future__ import annotations

import os
import re

from ..paths import repo_relative
from ..rules import RULES, SEVERITY_RANK

SCHEMA = "rocrtrace/v1"
SEVERITY_ORDER = ("error", "warning", "note")

# C0 controls (but tab and newline), DEL and C1 controls: what a terminal
# would interpret as escape sequences or that XML 1.0 cannot carry.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Unicode bidirectional controls (embeddings, overrides, isolates, marks):
# U+202E makes a terminal, an editor or a web page show text in another
# order than it is ("Trojan Source"); trace text never carries them raw.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


# Lone surrogates: bytes that were not UTF-8 in the trace (decoded with
# surrogateescape), or a \ud800 from a JSON escape.  No UTF-8 output can
# carry them, so they are shown as the byte (\xNN) or code point (\uXXXX).
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _surrogate(m) -> str:
    c = ord(m.group())
    return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}"


_CONTROL_BUT_CR = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: object, keep_newlines: bool = False) -> str:
    """Text with control characters shown as ``\\xNN`` so that trace content
    can never move a terminal's cursor or end a line early, and with the
    bytes that were not UTF-8 shown the same way.  ``keep_newlines``: line
    breaks (``\\n``, ``\\r``) stay, for a medium that escapes them itself."""
    s = "" if text is None else str(text)
    s = (_CONTROL_BUT_CR if keep_newlines else _CONTROL).sub(lambda m: f"\\x{ord(m.group()):02x}", s)
    s = _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    s = _SURROGATE.sub(_surrogate, s)
    if not keep_newlines:
        s = s.replace("\n", "\\n")
    return s


def hexs(value) -> str:
    """Addresses as hex strings; strings already formatted pass through."""
    if value is None:
        return ""
    if isinstance(value, int):
        return f"{value:#x}"
    return str(value)


def to_int(value) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


def rule_ids(rules=None, enabled=None) -> list[str]:
    """The enabled rules in catalogue order (``enabled`` may be a set)."""
    chosen = rules if rules is not None else enabled
    if chosen is None:
        return list(RULES)
    chosen = list(chosen)
    known = [r for r in RULES if r in chosen]
    return known + sorted(r for r in chosen if r not in RULES)


def rule_summary(rule_id: str) -> str:
    r = RULES.get(rule_id)
    return r.summary if r else ""


def severity_rank(sev: str) -> int:
    return SEVERITY_RANK.get(sev, 0)


def trace_order(f) -> tuple:
    """Where a finding's offending call lies in the trace: by time where the
    trace has it (several files of one run interleave by time), then by file
    and line; findings about a whole input last."""
    ev = f.event
    t = ev.time if ev is not None else None
    return (t is None, t or 0.0, f.file or "", f.line or 0, getattr(ev, "seq", 0) or 0 if ev is not None else 0)


def by_rule(findings) -> list[tuple[str, list]]:
    """Findings grouped by rule, the group of the most severe rule first,
    then the group whose first finding comes first in the trace; inside a
    group, in trace order (as a compiler prints its diagnostics)."""
    groups: dict[str, list] = {}
    for f in findings:
        groups.setdefault(f.rule, []).append(f)
    for fs in groups.values():
        fs.sort(key=trace_order)
    return sorted(
        groups.items(), key=lambda kv: (-max(severity_rank(f.severity) for f in kv[1]), trace_order(kv[1][0]), kv[0])
    )


def subject_text(subject: dict | None) -> str:
    """One line naming the subject: ``pages 0x…-0x… (17 pages) on gpus …``."""
    if not subject:
        return ""
    kind = subject.get("kind")
    if kind == "svm-range":
        start, end = to_int(subject.get("start")), to_int(subject.get("end"))
        s = f"range {hexs(subject.get('start'))}-{hexs(subject.get('end'))}"
        if start is not None and end is not None and end >= start:
            size = end - start
            s += f" ({size:#x} bytes, {pages(size)} pages)"
        gpus = subject.get("gpu_ids") or []
        if gpus:
            s += " gpus " + ",".join(hexs(g) for g in gpus)
        return s
    if kind == "fd":
        s = f"fd {subject.get('fd')}"
        if subject.get("fd_kind"):
            s += f" ({subject['fd_kind']})"
        return s
    if kind == "handle":
        return f"handle {hexs(subject.get('handle'))}"
    if kind == "process":
        return "process"
    return ", ".join(f"{k}={v}" for k, v in subject.items())


def pages(size: int, page: int = 4096) -> int:
    return (size + page - 1) // page


def location_text(f) -> str:
    if not f.file:
        parts = ["(whole input)"]
    elif f.line is None:
        parts = [f"{f.file} (whole file)"]
    else:
        parts = [f"{f.file}:{f.line}"]
    if f.pid is not None:
        parts.append(f"pid {f.pid}")
    if f.tid is not None and f.tid != f.pid:
        parts.append(f"tid {f.tid}")
    if f.time is not None:
        parts.append(f"t={f.time:.6f}")
    return " ".join(parts)


# Libraries whose frames are never "where the bug is" for the program's
# author: libc and the dynamic loader, the C++ runtime, the ROCm runtime
# stack and rocrtrace's own capture library.
_RUNTIME_LIB = re.compile(
    r"^(?:ld-linux[^/]*|ld64\.so[^/]*|ld-[\d.]+\.so[^/]*|ld-musl[^/]*|linux-vdso[^/]*|\[vdso\]"
    r"|lib(?:c|m|pthread|dl|rt|resolv|util|anl|mvec)(?:-[\d.]+)?\.so[^/]*"
    r"|lib(?:stdc\+\+|c\+\+|c\+\+abi|supc\+\+|gcc_s|unwind|atomic)\.so[^/]*"
    r"|lib(?:hsa-runtime64|hsakmt|amdhip64|hiprtc|amd_comgr|drm|drm_amdgpu|amdocl64|OpenCL"
    r"|rocprofiler[^/]*|roctracer[^/]*|roctx64|rocm_smi64|rocrtrace)\.so[^/]*)$"
)


def runtime_module(module: str | None) -> bool:
    """Whether a frame's module is a system or ROCm runtime library."""
    if not module:
        return False
    return bool(_RUNTIME_LIB.match(module.rsplit("/", 1)[-1]))


# The ROCm runtime linked statically into the program (as ROCr links
# libhsakmt): its frames are told by function and source, not by module.
_RUNTIME_FUNC = re.compile(
    r"^(?:hsakmt_|hsaKmt|fmm_|svm_api_|hsa_(?:amd_)?|_ZN4rocr|_ZN3amd|rocr::|amd::"
    r"|_start$|__libc_start)"
)
_RUNTIME_SRC = re.compile(
    r"(?:^|/)(?:libhsakmt|hsakmt|rocr-runtime|hsa-runtime|ROCR-Runtime|ROCT-Thunk-Interface)/"
    r"|(?:^|/)(?:fmm|libhsakmt|openclose|hsakmtmodel|topology|queues|events|memory|svm|rbtree"
    r"|globals|perfctr|pmc_table|spm|debug|pc_sampling|time|version)\.c$"
)


def runtime_frame(fr) -> bool:
    """Whether a frame is runtime code: by its module, or, for a runtime
    linked into the program, by its function or source file."""
    if runtime_module(fr.module):
        return True
    name = fr.function or fr.symbol
    if name and _RUNTIME_FUNC.match(name):
        return True
    return bool(fr.source and _RUNTIME_SRC.search(fr.source))


def source_root(root: str | None = None) -> str:
    return os.path.abspath(root or os.getcwd())


def location_frame(stack, root: str | None = None):
    """The frame a finding is located at, and its source path as a
    report shows it, or None.

    The first frame whose source file lies under the source root (default:
    the working directory) wins, shown relative to it; else the first frame
    outside libc, the loader, the C++ runtime and the ROCm runtime, shown
    with its absolute source path (None when it has no line information).
    Frame lines are already those of the call (return address minus one).
    """
    root = source_root(root)
    for fr in stack:
        if fr.source and fr.source_line and not runtime_frame(fr):
            rel = _under(fr.source, root)
            if rel is not None:
                return fr, rel
    for fr in stack:
        if not runtime_frame(fr):
            return fr, (fr.source if fr.source and fr.source_line else None)
    return None


def source_frame(stack, cwd: str | None = None):
    """The location frame when it has a source line: (frame, path)."""
    hit = location_frame(stack, cwd)
    if hit and hit[1]:
        return hit
    return None


def _under(path: str, root: str) -> str | None:
    if not os.path.isabs(path):
        # A relative DWARF name counts only if it is really there.
        if not os.path.exists(os.path.join(root, path)):
            return None
        path = os.path.join(root, path)
    return repo_relative(path, root)


def primary_location(f, cwd: str | None = None) -> tuple[str | None, int | None]:
    """(file, line) a finding leads with: the program's source line when
    symbolized, else the trace file and line."""
    sf = source_frame(f.stack, cwd)
    if sf:
        return sf[1], sf[0].source_line
    if f.file and f.file != "-":
        return repo_relative(f.file, cwd) or f.file, f.line or None
    return None, None


# The pid / timestamp columns a trace line starts with: the report shows tid
# and time in their own columns.
_LEAD = re.compile(
    r"^(?:\[pid\s+\d+\]\s*|\d+\s+(?=\S))?(?:\d+\.\d+\s+|\d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"|\+\d+\.\d+\s+)?"
)
# Long KFD enumerator prefixes, dropped in the concise report only.
_KFD_PREFIX = re.compile(r"\bKFD_IOCTL_SVM_(?:ATTR|FLAG|OP|LOCATION)_")
# Where a cut may fall: after a separator, so no token is split.
_BOUNDARY = re.compile(r"[,\s(){}\[\]<>|=]")
_SPACE = re.compile(r"[,\s]")


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut after a separator (never
    inside a token) and marked with ``…`` when anything was dropped."""
    if len(text) <= width:
        return text
    head = text[: width - 1]
    # after ", " or a space where one is near; else after any separator
    for pattern in (_SPACE, _BOUNDARY):
        cuts = [m.end() for m in pattern.finditer(head)]
        if cuts and cuts[-1] > len(head) * 2 // 3:
            head = head[: cuts[-1]]
            break
    else:
        cuts = [m.end() for m in _BOUNDARY.finditer(head)]
        if cuts and cuts[-1] > len(head) // 3:
            head = head[: cuts[-1]]
    return head.rstrip() + "…"


ELIDED = " […] "


def elide(text: str, width: int | None) -> str:
    """``text`` in about ``width`` characters by dropping its MIDDLE, marked
    with ``[…]``: the head (the call and its first arguments) and the end
    (the last attributes and the result, which often prove a finding) are
    always shown.  ``width`` None: the whole text."""
    if width is None or len(text) <= width:
        return text
    keep = max(20, width - len(ELIDED))
    head_n = keep * 3 // 5
    head, tail = text[:head_n], text[len(text) - (keep - head_n) :]
    for pattern in (_SPACE, _BOUNDARY):  # after ", " or a space where one is near
        cuts = [m.end() for m in pattern.finditer(head)]
        if cuts and cuts[-1] > len(head) * 2 // 3:
            head = head[: cuts[-1]]
            break
    for pattern in (_SPACE, _BOUNDARY):
        m = pattern.search(tail)
        if m and m.end() < len(tail) // 3:
            tail = tail[m.end() :]
            break
    return head.rstrip() + ELIDED + tail.lstrip()


def call_text(e, width: int | None = None, concise: bool = True) -> str:
    """An event's call as a report shows it: the whole text, or with its
    middle elided to ``width`` (the concise text report); never its end."""
    text = e.text or ""
    if e.tid is not None or e.time is not None:
        text = _LEAD.sub("", text, count=1)
    if concise:
        text = _KFD_PREFIX.sub("", text)
        text = re.sub(r" {2,}", " ", text)  # strace's column padding
    text = elide(text.rstrip(), width)
    return printable(text)


def evidence_line(ev) -> str:
    e = ev.event
    where = f"{e.file}:{e.line}"
    who = f"tid {e.tid}" if e.tid is not None else ""
    when = f"t={e.time:.6f}" if e.time is not None else ""
    bits = [f"{ev.role}:", where, who, when, call_text(e, concise=False)]
    if ev.note:
        bits.append(f"({printable(ev.note)})")
    return " ".join(b for b in bits if b)


def counts_line(summary: dict) -> str:
    def n(k, word):
        c = summary.get(k, 0)
        return f"{c} {word}{'' if c == 1 else 's'}"

    return f"{n('errors', 'error')}, {n('warnings', 'warning')}, {n('notes', 'note')}"


def finding_lines(f, clean=lambda text: text, evidence_stacks: bool = False) -> list[str]:
    """The plain-text body of one finding (JUnit failure text, markdown
    details): location, call, subject, cause, evidence, stack, fingerprint."""
    lines = [f"at {location_text(f)}"]
    if f.event is not None and f.event.text:
        lines.append(f"call: {clean(call_text(f.event, concise=False))}")
    if f.subject:
        lines.append(f"subject: {subject_text(f.subject)}")
    if f.cause:
        lines.append(f"cause: {f.cause}")
    if f.evidence:
        lines.append("evidence:")
        for ev in f.evidence:
            lines.append("  " + evidence_line(ev))
            if evidence_stacks:
                lines += [f"      > {clean(fr.label())}" for fr in ev.event.stack]
    if f.stack:
        lines.append("stack:")
        lines += [f"  #{n} {clean(fr.label())}" for n, fr in enumerate(f.stack)]
    lines.append(f"fingerprint: {f.fingerprint}")
    return lines


# --- the findings table (csv, jsonl, parquet: rocrtrace/schema.py) ---------------


def _event_cells(e) -> dict:
    return {"file": e.file, "line": e.line, "pid": e.pid, "tid": e.tid, "time": e.time}


def table_row(f, cwd: str | None = None, suppressed: bool = False) -> dict:
    """One finding as a row of the findings table, with the values of
    schema.FINDING_COLUMNS in their types (times in seconds, addresses as
    ints); each table writer encodes them for its format."""
    subj = f.subject or {}
    hit = location_frame(f.stack, cwd)
    if hit and hit[1]:
        lfile, lline = hit[1], hit[0].source_line
        lfunc = hit[0].function or hit[0].symbol
    else:
        lfile, lline, lfunc = f.file, f.line, None
    fd = subj.get("fd")
    row = {
        "file": f.file,
        "line": f.line,
        "pid": f.pid,
        "tid": f.tid,
        "time": f.time,
        "rule": f.rule,
        "severity": f.severity,
        "fingerprint": f.fingerprint,
        "message": f.message,
        "cause": f.cause,
        "program": f.program or None,
        "location": f"{lfile}:{lline}" if lfile and lline is not None else lfile,
        "location_file": lfile,
        "location_line": lline,
        "location_function": lfunc,
        "subject_kind": subj.get("kind"),
        "start": to_int(subj.get("start")),
        "end": to_int(subj.get("end")),
        "gpu_ids": [g for g in (to_int(x) for x in subj.get("gpu_ids") or []) if g is not None],
        "fd": fd if isinstance(fd, int) and not isinstance(fd, bool) else None,
        "fd_kind": subj.get("fd_kind"),
        "handle": to_int(subj.get("handle")),
        "call": f.event.text if f.event is not None else None,
        "evidence": [
            {"role": ev.role, **_event_cells(ev.event), "call": ev.event.text, "note": ev.note or None}
            for ev in f.evidence
        ],
        "stack": [fr.label() for fr in f.stack],
        "suppressed": suppressed,
    }
    return row


def table_rows(result, cwd: str | None = None) -> list[dict]:
    """The findings table: the findings most severe first, then those a
    baseline suppressed (``suppressed`` true)."""
    return [table_row(f, cwd) for f in result.sorted_findings()] + [
        table_row(f, cwd, suppressed=True) for f in result.suppressed
    ]
