"""`events`, `stats` and `diff` work on the core's column batches in plain
Python (rocrtrace/tables.py): they import neither pandas nor numpy, and
`events --format parquet` pyarrow only (pandas alone is ~100 MB of RSS).
What they write is what pandas wrote when the tables were frames, byte for
byte: the references here are pandas' own to_csv, to_dict,
to_json, groupby and Arrow conversion, kept in the tests only."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from rocrtrace import _engine, engine
from rocrtrace.tables import (
    Batch,
    EventsWriter,
    StatsAcc,
    TableError,
    frame_from_columns,
    json_number,
    render_stats,
    table_text,
    write_events,
)
from vocab import Close, FdCreate, Ioctl, Mmap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stats_stream import stats as pandas_stats  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
LOGS = sorted(str(p) for p in FIXTURES.rglob("*.log"))
C1 = str(FIXTURES / "scenarios/c1-enclosing-range/v1-buggy-explicit.log")
C1_FIXED = str(FIXTURES / "scenarios/c1-enclosing-range/v4-fixed-explicit.log")


# --- the pandas references (what tables.py did when its tables were frames) -------


def pandas_csv(df) -> str:
    return df.to_csv(index=False)


def pandas_jsonl(df) -> str:
    def plain(v):
        if v is None or (not isinstance(v, str) and pd.isna(v)):
            return None
        return v.item() if hasattr(v, "item") else v

    return "".join(json.dumps({k: plain(v) for k, v in rec.items()}) + "\n" for rec in df.to_dict(orient="records"))


def pandas_render_stats(frames: dict, fmt: str) -> str:
    if fmt == "json":
        return (
            json.dumps(
                {
                    k: json.loads(v.to_json(orient="records", force_ascii=True)) if len(v) else []
                    for k, v in frames.items()
                },
                indent=2,
            )
            + "\n"
        )
    from tabulate import tabulate

    titles = {
        "ioctls": "ioctls (by type, nr)",
        "svm_shapes": "AMDKFD_IOC_SVM attribute shapes",
        "errors": "ioctl errors by errno",
        "sizes": "ioctl request sizes",
        "threads": "ioctls per thread",
        "syscalls": "other calls",
    }
    out = [
        f"{title}\n"
        + tabulate(
            frames[k].astype(object).where(frames[k].notna(), ""), headers="keys", showindex=False, floatfmt=".1f"
        )
        for k, title in titles.items()
        if not frames[k].empty
    ]
    return ("\n\n".join(out) if out else "no events") + "\n"


def pandas_arrow(df):
    import pyarrow as pa

    from rocrtrace.schema import EVENT_COLUMNS, arrow_type

    out = df.copy(deep=False)
    fields = []
    for c in EVENT_COLUMNS:
        col, t = out[c.name], arrow_type(pa, c.type)
        if c.type == "time":
            out[c.name] = pd.to_datetime((col * 1e6).round(), unit="us", utc=True)
        elif c.type == "duration":
            out[c.name] = pd.to_timedelta((col * 1e6).round(), unit="us")
        elif c.type in ("int64", "uint64") and not pd.api.types.is_integer_dtype(col.dtype):
            t = pa.string()
        elif c.type == "uint64" and bool((col < 0).any()):
            t = pa.int64()
        fields.append(pa.field(c.name, t))
    return pa.Table.from_pandas(out, schema=pa.schema(fields), preserve_index=False)


# --- events -----------------------------------------------------------------------


def _edge_events():
    """Values at the edges of each column's type: an mmap address above
    int64, an undecodable file name, missing pids, negative and special
    floats, text that CSV must quote."""
    return [
        Mmap(
            file="a\udcff.log",
            line=1,
            seq=0,
            pid=1,
            tid=1,
            ret=0xFFFF800000000000,
            length=4096,
            fd=-1,
            time=1764435600.123457,
            dur=1e-7,
        ),
        Close(file='q"u,o\nte.log', line=2, seq=1, pid=None, tid=None, ret=-1, err="EBADF", fd=7, time=-0.0, dur=0.0),
        FdCreate(
            file="t",
            line=3,
            seq=2,
            pid=1,
            tid=1,
            ret=None,
            name="dup2",
            origin="dup",
            time=float("inf"),
            dur=12345678901234567.0,
        ),
        Ioctl(
            file="t",
            line=4,
            seq=3,
            pid=1,
            tid=1,
            ret=0,
            fd=3,
            type=0x4B,
            nr=0x20,
            size=40,
            request=0xC0284B20,
            ioctl=None,
            time=0.1 + 0.2,
            dur=1e-5,
        ),
        Ioctl(
            file="t",
            line=5,
            seq=4,
            pid=1,
            tid=1,
            ret=0,
            fd=3,
            type=0x4B,
            nr=0x20,
            size=24,
            ioctl="AMDKFD_IOC_SVM",
            arg={"op": 7, "attrs": [(9, 0), (4, 0), (4, 1)]},
        ),
        Ioctl(file="t", line=6, seq=5, pid=1, tid=1, ret=0, fd=3, ioctl=None),
    ]


def _edge_columns():
    return _engine.table_of_events(_edge_events())


@pytest.mark.parametrize("fmt,ref", [("csv", pandas_csv), ("jsonl", pandas_jsonl)])
def test_edge_rows_are_what_pandas_wrote(fmt, ref):
    cols = _edge_columns()
    assert table_text(Batch(cols), fmt) == ref(frame_from_columns(cols))


@pytest.mark.parametrize("path", LOGS[::3], ids=lambda p: os.path.relpath(p, FIXTURES))
def test_fixture_rows_are_what_pandas_wrote(path):
    whole, _ = engine.events_frame([path])
    got = {"csv": io.StringIO(), "jsonl": io.StringIO()}
    writers = {fmt: EventsWriter(fmt, out) for fmt, out in got.items()}
    for b in _batches(path, 7):
        for w in writers.values():
            w.write(b)
    for w in writers.values():
        w.close()
    assert got["csv"].getvalue() == pandas_csv(whole)
    assert got["jsonl"].getvalue() == pandas_jsonl(whole)


def test_parquet_is_what_pandas_and_pyarrow_wrote(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    # Parquet's times are int64 microseconds: the finite, in-range edges
    edge = _edge_events()
    edge[2].time, edge[2].dur = 1.5, 2.5e-6
    for name, cols in (("edge", _engine.table_of_events(edge)), ("c1", _engine.events_table([C1])[0])):
        mine, ref = tmp_path / f"{name}.parquet", tmp_path / f"{name}-ref.parquet"
        write_events(Batch(cols), "parquet", str(mine))
        pq.write_table(pandas_arrow(frame_from_columns(cols)), str(ref))
        assert mine.read_bytes() == ref.read_bytes(), name


def test_parquet_time_out_of_range_is_a_usage_error(tmp_path):
    pytest.importorskip("pyarrow")
    cols = _engine.table_of_events([Close(file="t", line=1, seq=0, pid=1, tid=1, ret=0, fd=3, time=1e300)])
    with pytest.raises(TableError, match="does not fit"):
        write_events(cols, "parquet", str(tmp_path / "x.parquet"))


# --- stats ------------------------------------------------------------------------


def _batches(path, rows):
    got = []
    engine.event_batches([path], got.append, batch_rows=rows)
    return got


@pytest.mark.parametrize("path", LOGS[::4], ids=lambda p: os.path.relpath(p, FIXTURES))
def test_stats_render_as_pandas_rendered_them(path):
    whole, _ = engine.events_frame([path])
    want = pandas_stats(whole)
    acc = StatsAcc()
    for b in _batches(path, 5):
        acc.add(b)
    for fmt in ("text", "json"):
        assert render_stats(acc.tables(), fmt) == pandas_render_stats(want, fmt), fmt


def test_stats_of_edge_rows():
    cols = _edge_columns()
    want = pandas_stats(frame_from_columns(cols))
    acc = StatsAcc()
    acc.add(cols)
    for fmt in ("text", "json"):
        assert render_stats(acc.tables(), fmt) == pandas_render_stats(want, fmt), fmt


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(0, 1e-3),
        st.floats(1.6e9, 1.9e9),
        st.integers(0, 10**7).map(lambda us: us * 1e-6 * 1e6),
        st.integers(0, 10**6).map(lambda n: n + 0.5e-10),
    )
)
def test_json_numbers_are_to_json_numbers(v):
    want = json.loads(pd.Series([v]).to_json(orient="values"))[0]
    got = json_number(v)
    assert got == want and math.copysign(1, got) == math.copysign(1, want)


# --- no pandas in the commands ------------------------------------------------------

_WRAP = """
import sys
from rocrtrace.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
else:
    code = 0
heavy = [m for m in ("pandas", "numpy", "pyarrow") if m in sys.modules]
print("exit=%s heavy=%s" % (code, ",".join(heavy) or "-"), file=sys.stderr)
"""


def _heavy(args) -> tuple[int, set]:
    r = subprocess.run([sys.executable, "-c", _WRAP, *args], capture_output=True, text=True, cwd=ROOT)
    last = r.stderr.strip().splitlines()[-1]
    code, heavy = (x.split("=", 1)[1] for x in last.split())
    return int(code or 0), set() if heavy == "-" else set(heavy.split(","))


@pytest.mark.parametrize(
    "args",
    [
        ["events", "--format", "csv", C1],
        ["events", "--format", "jsonl", C1],
        ["stats", C1],
        ["stats", "--format", "json", C1],
        ["diff", C1, C1_FIXED],
        ["diff", "--format", "json", C1, C1_FIXED],
        ["diff", "--format", "markdown", C1, C1_FIXED],
    ],
    ids=" ".join,
)
def test_events_stats_diff_import_no_pandas_numpy_or_pyarrow(args):
    code, heavy = _heavy(args)
    assert code in (0, 1)
    assert heavy == set(), heavy


def test_events_parquet_imports_pyarrow_but_not_pandas(tmp_path):
    pytest.importorskip("pyarrow")
    code, heavy = _heavy(["events", "--format", "parquet", "-o", str(tmp_path / "e.parquet"), C1])
    assert code == 0
    # pyarrow brings numpy itself when it is installed; pandas it must not
    assert "pyarrow" in heavy and "pandas" not in heavy, heavy
