"""The one column schema of rocrtrace's tables: the findings
(``analyze --format csv``, ``jsonl``, ``parquet:FILE``) and the events
(``rocrtrace events --format csv|jsonl|parquet``).

Every writer derives its columns from the lists here, so the same name has
the same meaning and type everywhere:

* ``file``, ``line``, ``pid``, ``tid``, ``time``: where and when, the same
  five columns in both tables;
* ``time`` is the call's entry time.  Parquet types it as a timestamp
  (microseconds, UTC); CSV and JSONL, which have no timestamp type, write
  seconds as a decimal number.  Epoch times (``strace -ttt``, preload logs)
  are real dates; ``-t``/``-tt`` logs give the time of day on 1970-01-01,
  ``-r`` logs the running sum of the deltas.  ``dur`` (events) is the
  call's duration: a Parquet duration (microseconds), seconds elsewhere;
* addresses, handles and gpu ids (``start``, ``end``, ``handle``,
  ``gpu_ids``) are unsigned integers everywhere (uint64 in Parquet), never
  hex text: hex is for the text reports;
* integer columns may be null (an fd on a finding about a range): Parquet
  keeps them int64 with nulls and records pandas' nullable dtypes, so
  ``pandas.read_parquet`` gives ``Int64``/``UInt64``, not float; for CSV and
  JSONL, ``rocrtrace.schema.read`` (or ``dtype=pandas_dtypes()``) does the same;
* list columns (``gpu_ids``, ``evidence``, ``stack``) are lists in JSONL
  and Parquet and JSON arrays as text in a CSV cell.

``FINDING_COLUMNS`` and ``EVENT_COLUMNS`` are the lists; ``docs/tables.md``
is written from them (tests check it).
"""

from __future__ import annotations

from dataclasses import dataclass

TABLE_FORMATS = ("csv", "jsonl", "parquet")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # string, int64, uint64, bool, time, duration, list<uint64>, evidence, stack
    doc: str


# The shared head: where and when.
_WHERE = (
    Column("file", "string", "the trace file of the call"),
    Column("line", "int64", "its line in that file (1-based)"),
    Column("pid", "int64", "process id (null: an strace log that prints no pid)"),
    Column("tid", "int64", "thread id"),
    Column("time", "time", "entry time of the call"),
)

# One evidence event inside a finding row (the ``evidence`` column's items).
EVIDENCE_FIELDS = (
    Column("role", "string", 'what the event is to the finding ("previous close")'),
    *_WHERE,
    Column("call", "string", "the call's whole text as the trace has it, never cut"),
    Column("note", "string", "a remark on this event, or empty"),
)

FINDING_COLUMNS = (
    *_WHERE,
    Column("rule", "string", "rule id (rocrtrace rules)"),
    Column("severity", "string", "error, warning or note"),
    Column("fingerprint", "string", "stable identity for baselines (no pids, fds, addresses)"),
    Column("message", "string", "what is wrong, one paragraph"),
    Column("cause", "string", "svm-over-revoke's cause, when it can be told"),
    Column("program", "string", "executable name, when the trace names it"),
    Column("location", "string", "SOURCE:LINE where the stack has the program's frame, else TRACE:LINE"),
    Column("location_file", "string", "the file of location"),
    Column("location_line", "int64", "the line of location"),
    Column("location_function", "string", "the function at location, when symbolized"),
    Column("subject_kind", "string", "svm-range, fd, handle, process or input"),
    Column("start", "uint64", "svm-range: first byte"),
    Column("end", "uint64", "svm-range: end (exclusive)"),
    Column("gpu_ids", "list<uint64>", "svm-range: the gpus that lost access"),
    Column("fd", "int64", "fd: the number"),
    Column("fd_kind", "string", "fd: dmabuf, kfd, drm-render, sync_file, other …"),
    Column("handle", "uint64", "handle: the buffer handle"),
    Column("call", "string", "the offending call's whole text"),
    Column(
        "evidence",
        "evidence",
        "the events that prove the finding, in order, each with role, file, line, pid, tid, time, call, note",
    ),
    Column("stack", "stack", "the offending call's stack, innermost first, one label a frame"),
    Column("suppressed", "bool", "suppressed by --baseline: those rows come last"),
)

EVENT_COLUMNS = (
    *_WHERE[:2],
    Column("seq", "int64", "order of the event within its input"),
    *_WHERE[2:],
    Column("dur", "duration", "duration of the call"),
    Column("event", "string", "the event kind (Ioctl, Close, FdCreate …)"),
    Column("name", "string", "the call's name"),
    Column("ret", "int64", "return value"),
    Column("err", "string", "errno name when the call failed"),
    Column("fd", "int64", "the fd the call names or created"),
    Column("ioctl", "string", "the ioctl's name"),
    Column("type", "int64", "the ioctl request's type"),
    Column("nr", "int64", "the ioctl request's number"),
    Column("size", "int64", "the ioctl request's size field"),
    Column("request", "uint64", "the ioctl request code"),
    Column("length", "uint64", "mmap length"),
    Column("op", "string", "AMDKFD_IOC_SVM: the operation"),
    Column("nattr", "int64", "AMDKFD_IOC_SVM: the number of attributes"),
    Column("attr_shape", "string", "AMDKFD_IOC_SVM: attribute types and counts (NO_ACCESS×1+CLR_FLAGS×2)"),
)

FINDING_NAMES = tuple(c.name for c in FINDING_COLUMNS)
EVENT_NAMES = tuple(c.name for c in EVENT_COLUMNS)

# pandas' nullable dtypes of the scalar types
_PANDAS = {
    "string": "string",
    "int64": "Int64",
    "uint64": "UInt64",
    "bool": "boolean",
    "time": "Float64",
    "duration": "Float64",
}


# --- values ----------------------------------------------------------------------


def seconds_to_us(t: float | None) -> int | None:
    """Seconds as integer microseconds (a timestamp's or a duration's
    value): what a double of an epoch time carries, and what strace prints."""
    return None if t is None else int(round(t * 1e6))


# --- arrow (Parquet) ------------------------------------------------------------


def arrow_type(pa, type_: str):
    """The Arrow type of a column type."""
    if type_ == "evidence":
        return pa.list_(pa.struct([(c.name, arrow_type(pa, c.type)) for c in EVIDENCE_FIELDS]))
    simple = {
        "string": pa.string(),
        "int64": pa.int64(),
        "uint64": pa.uint64(),
        "bool": pa.bool_(),
        "time": pa.timestamp("us", tz="UTC"),
        "duration": pa.duration("us"),
        "list<uint64>": pa.list_(pa.uint64()),
        "stack": pa.list_(pa.string()),
    }
    return simple[type_]


def arrow_schema(columns=FINDING_COLUMNS):
    import pyarrow as pa

    fields = [pa.field(c.name, arrow_type(pa, c.type)) for c in columns]
    # pandas reads integer columns with nulls as its nullable dtypes (not
    # float64) when the file says so: the metadata DataFrame.to_parquet writes
    meta = {
        "index_columns": [],
        "column_indexes": [],
        "columns": [
            {
                "name": c.name,
                "field_name": c.name,
                "pandas_type": _pandas_type(c.type),
                "numpy_type": _PANDAS.get(c.type, "object"),
                "metadata": None,
            }
            for c in columns
            if c.type in ("int64", "uint64", "bool")
        ],
        "pandas_version": "2.0.0",
    }
    import json

    return pa.schema(fields, metadata={b"pandas": json.dumps(meta).encode()})


def _pandas_type(type_: str) -> str:
    return {"int64": "int64", "uint64": "uint64", "bool": "bool"}.get(type_, "object")


def arrow_value(type_: str, v):
    """A row value as Arrow takes it for its column type: times as integer
    microseconds, evidence items converted field by field."""
    if v is None:
        return None
    if type_ in ("time", "duration"):
        return seconds_to_us(v)
    if type_ == "evidence":
        return [{c.name: arrow_value(c.type, e.get(c.name)) for c in EVIDENCE_FIELDS} for e in v]
    return v


def arrow_table(rows: list[dict], columns=FINDING_COLUMNS):
    import pyarrow as pa

    data = {c.name: [arrow_value(c.type, r.get(c.name)) for r in rows] for c in columns}
    return pa.table(data, schema=arrow_schema(columns))


# --- pandas ----------------------------------------------------------------------


def pandas_dtypes(columns=FINDING_COLUMNS) -> dict[str, str]:
    """``pandas.read_csv(..., dtype=pandas_dtypes())``: the scalar columns in
    pandas' nullable dtypes (times as seconds, Float64)."""
    return {c.name: _PANDAS[c.type] for c in columns if c.type in _PANDAS}


def read(path, columns=None):
    """A table rocrtrace wrote (csv, jsonl or parquet, told by the file's
    name) as a pandas DataFrame in the schema's dtypes; ``columns`` defaults
    to the findings' when the table has a ``rule`` column, else the events'."""
    import json

    import pandas as pd

    name = str(path)
    if name.endswith(".parquet"):
        return pd.read_parquet(path)
    if name.endswith((".jsonl", ".json")):
        with open(path, encoding="utf-8") as fh:
            df = pd.DataFrame([json.loads(ln) for ln in fh if ln.strip()])
    else:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    for c in columns or (FINDING_COLUMNS if "rule" in df.columns else EVENT_COLUMNS):
        if c.name in df.columns:
            vals = [None if v is None or v is pd.NA or v != v else v for v in df[c.name]]
            df[c.name] = _typed(pd, json, c.type, vals)
    return df


def _typed(pd, json, type_: str, vals: list):
    if type_ in ("int64", "uint64"):
        return pd.array([None if v is None else int(v) for v in vals], dtype=_PANDAS[type_])
    if type_ in ("time", "duration"):
        return pd.array([None if v is None else float(v) for v in vals], dtype="Float64")
    if type_ == "bool":
        return pd.array([None if v is None else v in (True, "True") for v in vals], dtype="boolean")
    if type_ == "string":
        return pd.array([None if v is None else str(v) for v in vals], dtype="string")
    # lists: JSON text in a CSV cell
    return [json.loads(v) if isinstance(v, str) else v for v in vals]


# --- the documentation ------------------------------------------------------------


def markdown() -> str:
    """docs/tables.md: the columns of both tables."""
    out = [
        "# Table columns",
        "",
        "Written from `rocrtrace/schema.py` (`python -m rocrtrace.schema > docs/tables.md`); "
        "the CSV, JSONL and Parquet outputs of `analyze` (findings) and of `rocrtrace "
        "events` (events) have exactly these columns, in this order.",
        "",
        *(_doc_paragraphs()),
        "",
    ]
    for title, cols in (
        ("Findings (`analyze --format csv`, `jsonl`, `parquet:FILE`)", FINDING_COLUMNS),
        ("Evidence items (the `evidence` column)", EVIDENCE_FIELDS),
        ("Events (`rocrtrace events`)", EVENT_COLUMNS),
    ):
        out += [f"## {title}", "", "| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.type} | {c.doc} |" for c in cols]
        out.append("")
    return "\n".join(out)


def _doc_paragraphs() -> list[str]:
    text = __doc__.split("\n\n", 2)[2].rsplit("\n\n", 1)[0]
    return [text.strip(), ""]


# --- JSON schemas -------------------------------------------------------------------


def report_schema() -> dict:
    """The JSON report's schema (``--format json``), as the package
    ships it: ``rocrtrace/schemas/report.schema.json``."""
    import json
    from importlib.resources import files

    return json.loads(files("rocrtrace").joinpath("schemas/report.schema.json").read_text())


def _json_type(type_: str) -> dict:
    if type_ == "evidence":
        return {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [c.name for c in EVIDENCE_FIELDS],
                "properties": {c.name: _json_type(c.type) for c in EVIDENCE_FIELDS},
            },
        }
    simple = {
        "string": "string",
        "int64": "integer",
        "uint64": "integer",
        "bool": "boolean",
        "time": "number",
        "duration": "number",
    }
    if type_ in simple:
        t: dict = {"type": [simple[type_], "null"]}
        if type_ == "uint64":
            t["minimum"] = 0
        return t
    item = {"type": "integer", "minimum": 0} if type_ == "list<uint64>" else {"type": "string"}
    return {"type": "array", "items": item}


def row_schema(columns=FINDING_COLUMNS) -> dict:
    """A JSON schema (2020-12) of one JSONL row of the table, from the columns."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": [c.name for c in columns],
        "properties": {c.name: _json_type(c.type) for c in columns},
    }


if __name__ == "__main__":
    print(markdown(), end="")
