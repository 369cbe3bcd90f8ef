"""Event tables for ``events``, ``stats`` and ``diff``, in plain Python over
the core's column batches (src/py/table.rs): those commands import neither
pandas nor numpy, and ``events --format parquet`` imports pyarrow only
(memory follows one batch; importing pandas alone costs ~100 MB of RSS
and ~0.3 s).

The outputs are the ones pandas wrote when these tables were frames, byte
for byte: CSV cells as ``DataFrame.to_csv`` writes them, JSONL rows as
``json.dumps`` of the records, stats JSON through ``DataFrame.to_json``'s
ten decimals, stats text through tabulate (tests/test_stats_stream.py and
tests/test_tables_plain.py keep pandas as the reference).

The pandas frames of the same tables (frame_from_columns, events_frame,
stats, StatsAcc.result) stay for the library API and the tests; they import
pandas when called, and accept frames where they accept batches.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress
from typing import Iterable

from . import kfd
from .core import core
from .schema import EVENT_COLUMNS, EVENT_NAMES, TABLE_FORMATS

# The columns in the core's order (src/table.rs ORDER; rocrtrace/schema.py
# EVENT_COLUMNS, which the table writers follow).
ORDER = EVENT_NAMES
PERCENTILES = (0.5, 0.9, 0.99)
_ATTR_SHORT = {v: n.removeprefix("KFD_IOCTL_SVM_ATTR_") for v, n in kfd.ATTR_NAMES.items()}
_KIND = {
    c.name: ("float" if c.type in ("time", "duration") else "int" if c.type in ("int64", "uint64") else "text")
    for c in EVENT_COLUMNS
}


def attr_shape(attrs) -> str:
    """``NO_ACCESS×2+CLR_FLAGS×2``: attribute types with their counts, in the
    kernel's type order, so equal shapes compare equal whatever the order
    (the attr_shape column's rule, src/table.rs attr_shape)."""
    counts = Counter(t for t, _ in attrs)
    return "+".join(f"{_ATTR_SHORT.get(t, f'ATTR_{t:#x}')}×{n}" for t, n in sorted(counts.items()))


def _storable(text):
    """Text a table can hold (UTF-8): a file name read with surrogateescape
    keeps its undecodable bytes as \\xNN."""
    if isinstance(text, str) and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


# --- the core's columns ----------------------------------------------------------
# ints: ("int", int64 values, one byte a row: 1 = missing, [(row, value
# outside int64)]); floats: ("float", float64 values, NaN = missing); text:
# ("text", int32 codes, -1 = missing, [category]).


def int_list(col) -> list:
    """An int column's values, None where missing."""
    _, raw, mask, wide = col
    vals = array("q", raw).tolist()
    for row in compress(range(len(vals)), mask):
        vals[row] = None
    for row, v in wide:
        vals[row] = v
    return vals


def float_list(col) -> list:
    """A float column's values, None where missing."""
    return [None if v != v else v for v in array("d", col[1])]


def text_list(col, convert=None) -> list:
    """A text column's values, None where missing (``convert`` applied to
    each category)."""
    _, codes, cats = col
    cats = [*(map(convert, cats) if convert else cats), None]  # code -1: missing
    return list(map(cats.__getitem__, array("i", codes)))


def _rows(col) -> int:
    kind = col[0]
    return len(col[1]) // (4 if kind == "text" else 8)


class Batch:
    """Rows of the event table as the core hands them: its columns by name
    (above), decoded on demand.  ``Batch.of(x)`` takes such columns, a batch,
    or a pandas frame of the table."""

    __slots__ = ("cols", "rows")

    def __init__(self, cols: dict):
        self.cols = cols
        self.rows = _rows(cols[ORDER[0]])

    def __len__(self) -> int:
        return self.rows

    @classmethod
    def of(cls, table) -> Batch:
        if isinstance(table, Batch):
            return table
        if isinstance(table, dict):
            return cls(table)
        return cls(_columns_of_frame(table))

    def values(self, name: str) -> list:
        col = self.cols[name]
        kind = col[0]
        if kind == "int":
            return int_list(col)
        if kind == "float":
            return float_list(col)
        return text_list(col, _storable)


def _columns_of_frame(df) -> dict:
    """The core's columns of a pandas frame of the event table
    (frame_from_columns' inverse: an integer column held as text, for a
    value outside int64, comes back with that value on the side)."""
    out = {}
    for name in ORDER:
        vals = [None if _missing(v) else v for v in df[name].tolist()]
        kind = _KIND[name]
        if kind == "int":
            ints, wide = array("q"), []
            for row, v in enumerate(vals):
                v = 0 if v is None else int(v)
                if -(1 << 63) <= v < (1 << 63):
                    ints.append(v)
                else:
                    ints.append(0)
                    wide.append((row, v))
            out[name] = ("int", ints.tobytes(), bytes(v is None for v in vals), wide)
        elif kind == "float":
            out[name] = ("float", array("d", (float("nan") if v is None else float(v) for v in vals)).tobytes())
        else:
            index: dict = {}
            codes = array("i", (-1 if v is None else index.setdefault(v, len(index)) for v in vals))
            out[name] = ("text", codes.tobytes(), list(index))
    return out


def _missing(v) -> bool:
    # None, NaN and pandas' NA (which is neither equal nor unequal to itself)
    if v is None:
        return True
    try:
        return bool(v != v)
    except TypeError:
        return True


def _batches(table) -> list[Batch]:
    """The batches of a table given as columns, a batch, a pandas frame,
    batches, or events (rocrtrace.events records: the core builds their
    columns, as it does for a trace)."""
    if isinstance(table, (Batch, dict)) or hasattr(table, "columns"):
        return [Batch.of(table)]
    items = list(table)
    if items and all(isinstance(b, (Batch, dict)) for b in items):
        return [Batch.of(b) for b in items]
    return [Batch(core().table_of_events(items))]


# --- pandas frames (the library API; imports pandas) -----------------------------


def events_frame(events: Iterable):
    """The event table of events already in hand (rocrtrace.events
    records) as a pandas frame: the core builds its columns, as it does
    for a trace."""
    return frame_from_columns(core().table_of_events(list(events)))


def frame_from_columns(cols: dict):
    """The event table from the core's columns as a pandas frame, without
    one Python object per event: nullable Int64 integers (a value outside
    Int64 exact as text), float64 times, string text."""
    import numpy as np
    import pandas as pd

    data = {}
    for name in ORDER:
        kind, *parts = cols[name]
        if kind == "int":
            raw, mask, wide = parts
            vals = np.frombuffer(raw, dtype=np.int64).copy()
            null = np.frombuffer(mask, dtype=np.bool_).copy()
            if wide:
                # a value outside Int64: exact as text rather than wrapped
                text = [None if n else str(int(v)) for v, n in zip(vals, null)]
                for row, v in wide:
                    text[row] = str(v)
                data[name] = pd.array(text, dtype="string")
            else:
                data[name] = pd.arrays.IntegerArray(vals, null)
        elif kind == "float":
            data[name] = np.frombuffer(parts[0], dtype=np.float64).copy()
        else:
            codes = np.frombuffer(parts[0], dtype=np.int32)
            cats = pd.Index([_storable(c) for c in parts[1]], dtype=object)
            cat = pd.Categorical.from_codes(codes, categories=cats)
            data[name] = pd.array(np.asarray(cat, dtype=object), dtype="string")
    return pd.DataFrame(data, columns=list(ORDER))


# --- csv and jsonl -----------------------------------------------------------------


class TableError(ValueError):
    """A table request the user can fix (format, missing pyarrow)."""


class ParquetUnavailable(TableError):
    pass


def _csv_text(text: str) -> str:
    """One CSV cell as pandas' writer (the csv module, minimal quoting)
    writes it."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([text, ""])
    return buf.getvalue()[:-2]


_JSON_FLOAT = {"inf": "Infinity", "-inf": "-Infinity"}


def _cells(col, fmt: str, prefix: str = "") -> list[str]:
    """A column's cells as text, each after ``prefix``: a CSV cell (missing:
    empty) or a JSON value (missing: null), as pandas' to_csv and json.dumps
    of the frame's records wrote them.  A value repeated in the batch (most
    columns hold few) is formatted once."""
    kind = col[0]
    null = "" if fmt == "csv" else "null"
    if kind == "text":
        _, codes, cats = col
        text = [_storable(c) for c in cats]
        cells = [prefix + c for c in (*map(_csv_text if fmt == "csv" else json.dumps, text), null)]
        return list(map(cells.__getitem__, array("i", codes)))
    vals = int_list(col) if kind == "int" else float_list(col)
    conv = repr
    if kind == "int" and col[3] and fmt == "jsonl":
        # a column with a value outside int64 was text in the frame
        conv = '"{}"'.format
    elif kind == "float" and fmt == "jsonl":
        conv = _json_float
    distinct = set(vals)
    # -0.0 == 0.0 as a key, but they print apart
    if (2 * len(distinct) <= len(vals) or None in distinct) and (kind == "int" or 0.0 not in distinct):
        memo = {v: prefix + (null if v is None else conv(v)) for v in distinct}
        return list(map(memo.__getitem__, vals))
    if None in distinct:
        return [prefix + (null if v is None else conv(v)) for v in vals]
    cells = list(map(conv, vals))
    return list(map(prefix.__add__, cells)) if prefix else cells


def _json_float(v: float) -> str:
    text = repr(v)
    return _JSON_FLOAT.get(text, text)


def table_text(batch: Batch, fmt: str, header: bool = True) -> str:
    """The rows of a batch as CSV (with the header line) or JSON lines."""
    if not batch.rows:
        return ",".join(ORDER) + "\n" if header and fmt == "csv" else ""
    if fmt == "csv":
        cols = [_cells(batch.cols[n], fmt) for n in ORDER]
        head = ",".join(ORDER) + "\n" if header else ""
        return head + "\n".join(map(",".join, zip(*cols))) + "\n"
    cols = [_cells(batch.cols[n], fmt, f"{json.dumps(n)}: ") for n in ORDER]
    return "{" + "}\n{".join(map(", ".join, zip(*cols))) + "}\n"


# --- parquet (pyarrow only) --------------------------------------------------------


def _need_pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ParquetUnavailable(
            "parquet output needs pyarrow: pip install pyarrow (or choose --format csv or jsonl)"
        ) from None
    return pa, pq


def _validity(pa, missing) -> object:
    """Arrow's validity bitmap (bit i set: row i present) of a mask of one
    byte a row (1: missing), or None when nothing is missing."""
    if 1 not in missing:
        return None
    present = bytes(missing).translate(_FLIP)
    present += bytes(-len(present) % 8)
    # eight 0/1 bytes, little-endian, gathered into one byte's bits
    bits = bytes(
        ((int.from_bytes(present[i : i + 8], "little") * 0x0102040810204080) >> 56) & 0xFF
        for i in range(0, len(present), 8)
    )
    return pa.py_buffer(bits)


_FLIP = bytes([1, 0]) + bytes(range(2, 256))


def _string_array(pa, texts: list):
    data = [b"" if t is None else t.encode("utf-8") for t in texts]
    offsets = array("i", [0])
    for d in data:
        offsets.append(offsets[-1] + len(d))
    return pa.Array.from_buffers(
        pa.string(),
        len(texts),
        [_validity(pa, bytes(t is None for t in texts)), pa.py_buffer(offsets), pa.py_buffer(b"".join(data))],
    )


def _arrow_column(pa, c, col, n: int):
    """(the Arrow array of one column, its type's pandas metadata): times
    and durations as integer microseconds, a column holding a value
    outside int64 as text, an unsigned column with negative values as
    int64 (the types the frame's columns had)."""
    from .schema import arrow_type

    t = arrow_type(pa, c.type)
    kind = col[0]
    if kind == "float":
        vals = array("d", col[1])
        try:
            us = array("q", (0 if v != v else round(v * 1e6) for v in vals))
        except (OverflowError, ValueError):
            raise TableError(
                f"an event's {c.name} does not fit Parquet's microseconds; choose --format csv or jsonl"
            ) from None
        arr = pa.Array.from_buffers(t, n, [_validity(pa, bytes(v != v for v in vals)), pa.py_buffer(us)])
        if c.type == "time":
            return arr, ("datetimetz", "datetime64[us]", {"timezone": "UTC"})
        return arr, ("object", "timedelta64[us]", None)
    if kind == "int":
        _, raw, mask, wide = col
        if wide:
            vals = int_list(col)
            return (_string_array(pa, [None if v is None else str(v) for v in vals]), ("unicode", "string", None))
        if c.type == "uint64" and n and min(array("q", raw)) < 0:
            t = pa.int64()
        return (pa.Array.from_buffers(t, n, [_validity(pa, mask), pa.py_buffer(raw)]), (str(t), "Int64", None))
    _, codes, cats = col
    idx = array("i", codes)
    idx_arr = pa.Array.from_buffers(
        pa.int32(), n, [_validity(pa, bytes(map((-1).__eq__, idx))), pa.py_buffer(array("i", (max(i, 0) for i in idx)))]
    )
    return (_string_array(pa, [_storable(x) for x in cats]).take(idx_arr), ("unicode", "string", None))


def _pandas_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pandas")
    except PackageNotFoundError:
        return "3.1.1"


def arrow_batch(batch: Batch):
    """A batch as an Arrow table in the schema's types (rocrtrace/schema.py),
    with the pandas metadata DataFrame.to_parquet writes (pandas reads the
    integer columns back as Int64, the text as string)."""
    pa, _ = _need_pyarrow()
    arrays, fields, meta = [], [], []
    for c in EVENT_COLUMNS:
        arr, (ptype, ntype, md) = _arrow_column(pa, c, batch.cols[c.name], batch.rows)
        arrays.append(arr)
        fields.append(pa.field(c.name, arr.type))
        meta.append({"name": c.name, "field_name": c.name, "pandas_type": ptype, "numpy_type": ntype, "metadata": md})
    doc = {
        "index_columns": [],
        "column_indexes": [],
        "columns": meta,
        "attributes": {},
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": _pandas_version(),
    }
    schema = pa.schema(fields, metadata={b"pandas": json.dumps(doc).encode("utf8")})
    return pa.Table.from_arrays(arrays, schema=schema)


# --- writing the event table ---------------------------------------------------------


def _empty_columns() -> dict:
    """The core's columns of an empty table (src/py/table.rs)."""
    empty = {"int": ("int", b"", b"", []), "float": ("float", b""), "text": ("text", b"", [])}
    return {name: empty[_KIND[name]] for name in ORDER}


class EventsWriter:
    """The event table written batch by batch (``events``): csv and jsonl
    append each batch as write_events would write the whole table; parquet
    writes one row group per batch in the first batch's Arrow schema.
    ``write`` takes a Batch, the core's columns or a pandas frame.  Call
    ``close()`` after the last batch."""

    def __init__(self, fmt: str, out):
        if fmt not in TABLE_FORMATS:
            raise TableError(f"unknown events format {fmt!r} (choose {', '.join(TABLE_FORMATS)})")
        self.fmt, self.out, self.rows = fmt, out, 0
        self._pq = None

    def write(self, table) -> None:
        batch = Batch.of(table)
        if self.fmt == "parquet":
            self._parquet(batch)
        else:
            _put(table_text(batch, self.fmt, header=self.rows == 0), self.out)
        self.rows += batch.rows

    def _parquet(self, batch: Batch) -> None:
        pa, pq = _need_pyarrow()
        table = arrow_batch(batch)
        if self._pq is None:
            self._pq = pq.ParquetWriter(sys.stdout.buffer if self.out == "-" else self.out, table.schema)
        elif table.schema != self._pq.schema:
            try:
                table = table.cast(self._pq.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
                raise TableError(
                    f"an event value does not fit its Parquet column ({e}); choose --format csv or jsonl"
                ) from None
        self._pq.write_table(table)

    def close(self) -> None:
        if self.fmt == "parquet":
            if self._pq is None:
                self._parquet(Batch(_empty_columns()))
            self._pq.close()
        elif self.rows == 0:
            _put(table_text(Batch(_empty_columns()), self.fmt), self.out)


def _put(text: str, out) -> None:
    if out == "-":
        sys.stdout.write(text)
    elif hasattr(out, "write"):
        out.write(text)
    else:
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)


def write_events(table, fmt: str, out, header: bool = True) -> None:
    """Write the event table (a Batch, the core's columns or a pandas
    frame) as csv, jsonl or parquet to a path or an open file (``-`` is
    standard output), in the columns and types of rocrtrace/schema.py
    (Parquet: times as timestamps, durations as durations)."""
    if fmt not in TABLE_FORMATS:
        raise TableError(f"unknown events format {fmt!r} (choose {', '.join(TABLE_FORMATS)})")
    batch = Batch.of(table)
    if fmt == "parquet":
        _, pq = _need_pyarrow()
        pq.write_table(arrow_batch(batch), sys.stdout.buffer if out == "-" else out)
        return
    _put(table_text(batch, fmt, header=header), out)


# --- stats -------------------------------------------------------------------


@dataclass
class Table:
    """One stats table: its columns, its rows (None where missing) and the
    pandas dtypes of its frame (StatsAcc.result)."""

    columns: list[str]
    rows: list[list] = field(default_factory=list)
    dtypes: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def frame(self):
        """The table as the pandas frame stats() gives."""
        import pandas as pd

        if not self.rows:
            return pd.DataFrame(columns=self.columns)
        out = pd.DataFrame([dict(zip(self.columns, r)) for r in self.rows], columns=self.columns)
        return out.astype(self.dtypes) if self.dtypes else out


def _order(keys: list, count) -> tuple:
    # sort_values([count, *keys], ascending=[False, True...]): a missing key last
    return (-count, *((1, 0) if k is None else (0, k) for k in keys))


def _exact_quantiles(hist: Counter, qs) -> list[float]:
    """pandas' Series.quantile (numpy's linear method) of the multiset `hist`
    (value -> count), without the values themselves: the two order
    statistics around (n-1)q and numpy's own interpolation (IEEE doubles,
    as Python's floats are), so the figures are the same floats the whole
    column gives (tests/test_stats_stream.py)."""
    import bisect
    import math

    vals = sorted(hist)
    cum, total = [], 0
    for v in vals:
        total += hist[v]
        cum.append(total)

    def nth(i):
        return float(vals[bisect.bisect_right(cum, i)])

    out = []
    for q in qs:
        virt = float(total - 1) * float(q)
        if virt >= total - 1:
            out.append(float(vals[-1]))
            continue
        prev = math.floor(virt)
        a, b = nth(prev), nth(prev + 1)
        t = virt - float(prev)
        d = b - a
        out.append(b - d * (1.0 - t) if t >= 0.5 else a + d * t)
    return out


_PER_COLUMNS = ["calls", "errors", "timed", "p50_us", "p90_us", "p99_us", "max_us"]


class _PerAcc:
    """One stats table per group key over batches: calls, errors and the
    multiset of durations in microseconds (its latency percentiles)."""

    def __init__(self, keys: list[str]):
        self.keys, self.groups = keys, {}

    def add(self, keys: list[tuple], errs: list, durs: list) -> None:
        groups = self.groups
        for k, n in Counter(keys).items():
            ent = groups.get(k)
            if ent is None:
                ent = groups[k] = [0, 0, Counter()]
            ent[0] += n
        for k, n in Counter(compress(keys, [e is not None for e in errs])).items():
            groups[k][1] += n
        timed = [d is not None for d in durs]
        for (k, d), n in Counter(zip(compress(keys, timed), compress(durs, timed))).items():
            groups[k][2][d * 1e6] += n

    def table(self) -> Table:
        rows = []
        for k, (calls, errors, hist) in self.groups.items():
            if hist:
                p50, p90, p99 = _exact_quantiles(hist, PERCENTILES)
                lat = [sum(hist.values()), p50, p90, p99, float(max(hist))]
            else:
                lat = [0, None, None, None, None]
            rows.append([*k, calls, errors, *lat])
        n = len(self.keys)
        rows.sort(key=lambda r: _order(r[:n], r[n]))
        return Table(self.keys + _PER_COLUMNS, rows)


class _CountAcc:
    """One stats table of counts per group key over batches."""

    def __init__(self, keys: list[str], name: str = "count"):
        self.keys, self.name, self.counts = keys, name, Counter()

    def add(self, keys: list[tuple]) -> None:
        self.counts.update(keys)

    def table(self) -> Table:
        rows = sorted(([*k, n] for k, n in self.counts.items()), key=lambda r: _order(r[:-1], r[-1]))
        dtypes = {k: "Int64" if _KIND[k] == "int" else "string" for k in self.keys}
        return Table(self.keys + [self.name], rows, {**dtypes, self.name: "int64"})


_NOT_CALLS = {"Ioctl", "ProcessInfo", "FdSnapshot", "ModuleMap"}


class StatsAcc:
    """``stats`` over the event table a batch at a time (``stats`` and
    ``diff`` hold one batch, not the table): ``add`` a Batch, the
    core's columns or a pandas frame; ``tables()`` gives the plain tables
    (render_stats, diff_of_stats), ``result()`` the pandas frames stats()
    gives for the whole table, float for float."""

    def __init__(self):
        self.acc = {
            "ioctls": _PerAcc(["ioctl"]),
            "svm_shapes": _PerAcc(["op", "attr_shape"]),
            "errors": _CountAcc(["ioctl", "err"]),
            "sizes": _CountAcc(["ioctl", "size"]),
            "threads": _CountAcc(["tid", "ioctl"], "calls"),
            "syscalls": _PerAcc(["name"]),
        }

    def add(self, table) -> None:
        b = Batch.of(table)
        if not b.rows:
            return
        event = b.values("event")
        sel = [e == "Ioctl" for e in event]

        def of_ioctls(name):
            return list(compress(b.values(name), sel))

        ioctl, err, size, tid = (of_ioctls(n) for n in ("ioctl", "err", "size", "tid"))
        dur, op, nattr, shape = (of_ioctls(n) for n in ("dur", "op", "nattr", "attr_shape"))
        acc = self.acc
        acc["ioctls"].add(list(zip(ioctl)), err, dur)
        # SVM ioctls: the op and shape filled in (an strace log decodes no
        # struct: the shape is told from the size field's attribute count)
        svm = [o is not None or n is not None for o, n in zip(op, nattr)]
        acc["svm_shapes"].add(
            [
                ("?" if o is None else o, s if s is not None else "?" if n is None else f"nattr={n} (not decoded)")
                for o, n, s in compress(zip(op, nattr, shape), svm)
            ],
            list(compress(err, svm)),
            list(compress(dur, svm)),
        )
        acc["errors"].add([k for k in zip(ioctl, err) if k[1] is not None])
        acc["sizes"].add([k for k in zip(ioctl, size) if k[1] is not None])
        acc["threads"].add(list(zip(tid, ioctl)))
        calls = [e not in _NOT_CALLS for e in event]
        acc["syscalls"].add(
            list(zip(compress(b.values("name"), calls))),
            list(compress(b.values("err"), calls)),
            list(compress(b.values("dur"), calls)),
        )

    def tables(self) -> dict[str, Table]:
        return {k: a.table() for k, a in self.acc.items()}

    def result(self) -> dict:
        """The tables as pandas frames (imports pandas)."""
        return {k: t.frame() for k, t in self.tables().items()}


def stats_tables(table) -> dict[str, Table]:
    """stats() as plain tables, without pandas."""
    acc = StatsAcc()
    for b in _batches(table):
        acc.add(b)
    return acc.tables()


def stats(events) -> dict:
    """Tables (pandas frames) of counts, errors, request sizes and latency
    percentiles of an event table (a frame, batches, the core's columns) or
    of events:

    * ``ioctls``: per ioctl (named by (type, nr)) calls, errors, latency;
    * ``svm_shapes``: per AMDKFD_IOC_SVM op and attribute shape;
    * ``errors``: per ioctl and errno;
    * ``sizes``: per ioctl and request size field (the histogram);
    * ``threads``: per thread and ioctl;
    * ``syscalls``: every other call by name.
    """
    return {k: t.frame() for k, t in stats_tables(events).items()}


def _slices(df):
    """(ioctls, SVM ioctls with op and shape filled in, other calls) of an
    event table as a pandas frame: what StatsAcc counts, row by row (the
    reference of tests/test_stats_stream.py)."""
    io_ = df[df["event"] == "Ioctl"]
    svm = io_[io_["op"].notna() | io_["nattr"].notna()].copy()
    svm["op"] = svm["op"].fillna("?")
    svm["attr_shape"] = (
        svm["attr_shape"].fillna(svm["nattr"].map(lambda n: f"nattr={n} (not decoded)", na_action="ignore")).fillna("?")
    )
    calls = df[~df["event"].isin(list(_NOT_CALLS))]
    return io_, svm, calls


def _plain_table(t) -> Table:
    """A stats table given as a pandas frame, as a plain one."""
    if isinstance(t, Table):
        return t
    rows = [[None if _missing(v) else v for v in r] for r in t.astype(object).values.tolist()]
    return Table([str(c) for c in t.columns], rows)


def json_number(v: float) -> float:
    """A float as DataFrame.to_json writes it (ujson, ten decimals; %.10g
    beyond 1e16 and below 1e-15) and json.loads reads that back."""
    x = -v if v < 0 else v
    if x > 1e16 - 1 or (x != 0.0 and x < 1e-15):
        return float("%.10g" % v)
    whole = int(x)
    tmp = (x - whole) * 1e10
    frac = int(tmp)
    diff = tmp - frac
    if diff > 0.5 or (diff == 0.5 and (frac == 0 or frac & 1)):
        frac += 1
    if frac >= 1e10:
        frac, whole = 0, whole + 1
    out = float(f"{whole}.{frac:010d}")
    return -out if v < 0 else out


def _json_value(v):
    if isinstance(v, float):
        return None if v != v or v in (float("inf"), float("-inf")) else json_number(v)
    return v


def render_stats(st: dict, fmt: str = "text") -> str:
    """The stats tables (plain tables or pandas frames) as text or JSON."""
    st = {k: _plain_table(v) for k, v in st.items()}
    if fmt == "json":
        return (
            json.dumps(
                {k: [{c: _json_value(v) for c, v in zip(t.columns, r)} for r in t.rows] for k, t in st.items()},
                indent=2,
            )
            + "\n"
        )
    if fmt != "text":
        raise ValueError(f"unknown stats format {fmt!r} (choose text or json)")
    from tabulate import tabulate

    titles = {
        "ioctls": "ioctls (by type, nr)",
        "svm_shapes": "AMDKFD_IOC_SVM attribute shapes",
        "errors": "ioctl errors by errno",
        "sizes": "ioctl request sizes",
        "threads": "ioctls per thread",
        "syscalls": "other calls",
    }
    out = []
    for key, title in titles.items():
        t = st.get(key)
        if t is None or not t.rows:
            continue
        rows = [["" if v is None else v for v in r] for r in t.rows]
        out.append(f"{title}\n" + tabulate(rows, headers=t.columns, floatfmt=".1f"))
    return ("\n\n".join(out) if out else "no events") + "\n"


# --- diff --------------------------------------------------------------------


def describe_shape(shape: str) -> str:
    """A plain-language name for an SVM attribute shape."""
    parts = dict(p.rsplit("×", 1) for p in shape.split("+") if "×" in p)
    kinds = set(parts)
    n = int(parts.get("NO_ACCESS", 0) or 0)
    if "NO_ACCESS" in kinds and kinds <= {"NO_ACCESS", "CLR_FLAGS"}:
        return "a per-GPU NO_ACCESS revoke" if n == 1 else f"a NO_ACCESS revoke of {n} GPUs"
    if "ACCESS_IN_PLACE" in kinds and kinds <= {"ACCESS_IN_PLACE", "SET_FLAGS", "CLR_FLAGS"}:
        return "an ACCESS_IN_PLACE grant"
    if kinds and kinds <= {"SET_FLAGS", "CLR_FLAGS"}:
        return "a flags-only SET_ATTR"
    if "ACCESS" in kinds:
        return "an ACCESS grant"
    return "a SET_ATTR"


def _calls(t, keys: list[str]) -> dict:
    t = _plain_table(t)
    at = [t.columns.index(k) for k in [*keys, "calls"]]
    return {tuple(r[i] for i in at[:-1]): int(r[at[-1]]) for r in t.rows}


def _mix(a, b, keys: list[str]) -> list[dict]:
    ca, cb = _calls(a, keys), _calls(b, keys)
    rows = []
    for k in sorted(set(ca) | set(cb), key=lambda k: tuple(str(x) for x in k)):
        if ca.get(k, 0) != cb.get(k, 0):
            rows.append(
                {**dict(zip(keys, k)), "a": ca.get(k, 0), "b": cb.get(k, 0), "delta": cb.get(k, 0) - ca.get(k, 0)}
            )
    return rows


def _only(xs, ys) -> list:
    """Findings of ``xs`` whose fingerprints ``ys`` lacks, counted as a
    multiset: three leaks before and one after leave two."""
    left = Counter(f.fingerprint for f in ys)
    out = []
    for f in xs:
        if left[f.fingerprint] > 0:
            left[f.fingerprint] -= 1
        else:
            out.append(f)
    return out


def diff(a_events, a_findings, b_events, b_findings) -> dict:
    return diff_of_stats(stats_tables(a_events), a_findings, stats_tables(b_events), b_findings)


def diff_of_stats(sa: dict, a_findings, sb: dict, b_findings) -> dict:
    """diff from each side's stats tables (plain or pandas frames; what
    ``diff`` streams)."""
    ioctls = _mix(sa["ioctls"], sb["ioctls"], ["ioctl"])
    shapes = _mix(sa["svm_shapes"], sb["svm_shapes"], ["op", "attr_shape"])
    only_a, only_b = _only(a_findings, b_findings), _only(b_findings, a_findings)
    return {
        "ioctls": ioctls,
        "svm_shapes": shapes,
        "only_in_a": [f.to_dict() for f in only_a],
        "only_in_b": [f.to_dict() for f in only_b],
        "lines": _lines(ioctls, shapes, only_a, only_b),
    }


def _phrase(rows, side: str) -> str:
    return " and ".join(
        f"{describe_shape(r['attr_shape']) if r['op'] == 'SET_ATTR' else r['op']} "
        f"({r['attr_shape']}, {r[side]} call{'' if r[side] == 1 else 's'})"
        for r in rows
    )


def _lines(ioctls, shapes, only_a, only_b) -> list[str]:
    out = []
    for side, other in (("b", "a"), ("a", "b")):
        # the biggest change reads first
        new = sorted((r for r in shapes if r[other] == 0), key=lambda r: -r[side])
        if new:
            out.append(f"{side.upper()} sends {_phrase(new, side)} that {other.upper()} does not")
    for r in shapes:
        if r["a"] and r["b"]:
            out.append(f"{r['op']} {r['attr_shape']}: A {r['a']} calls, B {r['b']} ({r['delta']:+d})")
    for r in ioctls:
        if not r["a"]:
            out.append(f"B issues {r['ioctl']} ({r['b']} calls) that A does not")
        elif not r["b"]:
            out.append(f"A issues {r['ioctl']} ({r['a']} calls) that B does not")
        else:
            out.append(f"{r['ioctl']}: A {r['a']} calls, B {r['b']} ({r['delta']:+d})")
    for name, fs in (("A", only_a), ("B", only_b)):
        by_rule = Counter(f.rule for f in fs)
        if by_rule:
            out.append(f"findings only in {name}: " + ", ".join(f"{n} {r}" for r, n in sorted(by_rule.items())))
    if not out:
        out.append("A and B issue the same ioctl mix and have the same findings")
    return out


def render_diff(d: dict, fmt: str = "text", names: tuple[str, str] | None = None) -> str:
    """``names`` are the two inputs, shown so that "A" and "B" mean something."""
    if fmt == "json":
        doc = {"a": names[0], "b": names[1], **d} if names else d
        return json.dumps(doc, indent=2, default=str) + "\n"
    from tabulate import tabulate

    if fmt == "markdown":
        from .report.markdown import md

        out = ["### rocrtrace diff", ""]
        if names:
            out += [f"A = {md(names[0])}, B = {md(names[1])}", ""]
        out += [f"- {md(x)}" for x in d["lines"]] + [""]
        for key, title in (("ioctls", "ioctl mix"), ("svm_shapes", "SVM attribute shapes")):
            if d[key]:
                out += [f"#### {title}", "", tabulate(d[key], headers="keys", tablefmt="github"), ""]
        for key, title in (("only_in_a", "Findings only in A"), ("only_in_b", "Findings only in B")):
            if d[key]:
                out += [f"#### {title}", ""]
                out += [
                    f"- {f['severity']} `{f['rule']}`: {md(f['message'])} ({md(f['file'])}:{f['line']})" for f in d[key]
                ]
                out.append("")
        return "\n".join(out).rstrip("\n") + "\n"
    if fmt != "text":
        raise ValueError(f"unknown diff format {fmt!r} (choose text, json or markdown)")
    from .report.common import printable

    out = [f"A = {printable(names[0])}", f"B = {printable(names[1])}", ""] if names else []
    out += [printable(x) for x in d["lines"]]
    for key, title in (("ioctls", "ioctl mix (A vs B)"), ("svm_shapes", "SVM attribute shapes (A vs B)")):
        if d[key]:
            out += ["", title, tabulate(d[key], headers="keys")]
    for key, title in (("only_in_a", "findings only in A"), ("only_in_b", "findings only in B")):
        if d[key]:
            out += ["", title]
            out += [
                f"  {f['severity']} {f['rule']}: {printable(f['message'])} ({printable(f['file'])}:{f['line']})"
                for f in d[key]
            ]
    return "\n".join(out) + "\n"
