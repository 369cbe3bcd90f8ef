"""CSV: one row per finding, flat columns, for spreadsheets and pandas."""
from __future__ import annotations

import csv
import io
import re

from .common import hexs, printable

COLUMNS = ("rule", "severity", "fingerprint", "message", "file", "line", "pid", "tid",
           "time", "cause", "subject_kind", "start", "end", "gpu_ids", "fd", "fd_kind",
           "handle", "call", "evidence", "top_frame")

# A cell a spreadsheet would evaluate as a formula (CSV injection): trace
# text is untrusted, so such cells get a leading apostrophe.
# "-" too (OWASP): "-2+3+cmd|' /C calc'!A0" runs like "=...".  A plain
# number ("-1", an fd) is left as it is, so the column stays numeric.
_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    # Control characters from trace text (a decoded path may hold a newline
    # and then "::warning::", or an escape sequence) are shown, not obeyed,
    # by whatever prints the cell later: a CI log, a terminal, a sheet.
    s = printable(v)
    if s.startswith(_FORMULA) and not _NUMBER.match(s):
        s = "'" + s
    return s


def row(f) -> dict:
    subj = f.subject or {}
    return {
        "rule": f.rule, "severity": f.severity, "fingerprint": f.fingerprint,
        "message": f.message, "file": f.file, "line": f.line, "pid": f.pid, "tid": f.tid,
        "time": None if f.time is None else f"{f.time:.6f}", "cause": f.cause,
        "subject_kind": subj.get("kind"),
        "start": hexs(subj.get("start")) or None, "end": hexs(subj.get("end")) or None,
        "gpu_ids": " ".join(hexs(g) for g in subj.get("gpu_ids") or []) or None,
        "fd": subj.get("fd"), "fd_kind": subj.get("fd_kind"),
        "handle": hexs(subj.get("handle")) or None,
        "call": f.event.text if f.event is not None else None,
        "evidence": " | ".join(f"{e.role} {e.event.file}:{e.event.line}" for e in f.evidence),
        "top_frame": f.stack[0].label() if f.stack else None,
    }


def render(result, **_opts) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for f in result.sorted_findings():
        w.writerow({k: _cell(v) for k, v in row(f).items()})
    return buf.getvalue()
