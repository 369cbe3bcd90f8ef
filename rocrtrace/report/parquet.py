"""``--format parquet:FILE``: the findings as one table, one row per finding,
for fleets that aggregate many runs (DuckDB, Spark, pandas).

Columns: trace, program, pid, tid, time, rule, severity, fingerprint,
message, cause, location (``SOURCE:LINE`` or ``TRACE:LINE``), location_file,
location_line, location_function, trace_line, subject_kind, start, end,
gpu_ids, fd, fd_kind, handle, evidence_count, suppressed.  Addresses are hex
strings as in the JSON report.
"""
from __future__ import annotations

import io

from .common import hexs, location_frame, printable

SCHEMA_FIELDS = (
    ("trace", "string"), ("program", "string"), ("pid", "int64"), ("tid", "int64"),
    ("time", "float64"), ("rule", "string"), ("severity", "string"),
    ("fingerprint", "string"), ("message", "string"), ("cause", "string"),
    ("location", "string"), ("location_file", "string"), ("location_line", "int64"),
    ("location_function", "string"), ("trace_line", "int64"), ("subject_kind", "string"),
    ("start", "string"), ("end", "string"), ("gpu_ids", "list<string>"), ("fd", "int64"),
    ("fd_kind", "string"), ("handle", "string"), ("evidence_count", "int64"),
    ("suppressed", "bool"),
)


def _schema(pa):
    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
             "bool": pa.bool_(), "list<string>": pa.list_(pa.string())}
    return pa.schema([(n, types[t]) for n, t in SCHEMA_FIELDS])


def _text(s):
    # Parquet strings are UTF-8: a surrogate-escaped path is shown escaped.
    if s is None:
        return None
    return str(s).encode("utf-8", "backslashreplace").decode("utf-8")


def row(f, program: str, cwd=None, suppressed: bool = False) -> dict:
    subj = f.subject or {}
    hit = location_frame(f.stack, cwd)
    if hit and hit[1]:
        lfile, lline = hit[1], hit[0].source_line
        lfunc = hit[0].function or hit[0].symbol
    else:
        lfile, lline, lfunc = f.file, f.line, None
    loc = f"{lfile}:{lline}" if lfile and lline is not None else lfile
    fd = subj.get("fd")
    return {
        "trace": _text(f.file), "program": _text(program), "pid": f.pid, "tid": f.tid,
        "time": f.time, "rule": f.rule, "severity": f.severity,
        "fingerprint": f.fingerprint, "message": _text(printable(f.message)),
        "cause": f.cause, "location": _text(loc), "location_file": _text(lfile),
        "location_line": lline, "location_function": _text(lfunc), "trace_line": f.line,
        "subject_kind": subj.get("kind"),
        "start": hexs(subj.get("start")) or None, "end": hexs(subj.get("end")) or None,
        "gpu_ids": [hexs(g) for g in subj.get("gpu_ids") or []],
        "fd": fd if isinstance(fd, int) else None, "fd_kind": subj.get("fd_kind"),
        "handle": hexs(subj.get("handle")) or None,
        "evidence_count": len(f.evidence), "suppressed": suppressed,
    }


def render(result, cwd=None, **_opts) -> bytes:
    from . import need

    pa = need("pyarrow", "parquet")
    pq = need("pyarrow.parquet", "parquet")
    rows = [row(f, f.program, cwd) for f in result.sorted_findings()]
    rows += [row(f, f.program, cwd, suppressed=True) for f in result.suppressed]
    table = pa.Table.from_pylist(rows, schema=_schema(pa))
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
