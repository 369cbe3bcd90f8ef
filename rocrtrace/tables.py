"""Event tables (pandas) for ``events``, ``stats`` and ``diff``.

pandas is imported inside the functions: it costs ~0.3 s to import and
``rocrtrace --help`` or ``analyze`` must not pay for it.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Iterable

from . import kfd
from .core import core
from .schema import EVENT_COLUMNS, EVENT_NAMES, TABLE_FORMATS

# The columns in the core's order (src/table.rs ORDER; rocrtrace/schema.py
# EVENT_COLUMNS, which the table writers follow).
ORDER = EVENT_NAMES
PERCENTILES = (0.5, 0.9, 0.99)
_ATTR_SHORT = {v: n.removeprefix("KFD_IOCTL_SVM_ATTR_") for v, n in kfd.ATTR_NAMES.items()}


def attr_shape(attrs) -> str:
    """``NO_ACCESS×2+CLR_FLAGS×2``: attribute types with their counts, in the
    kernel's type order, so equal shapes compare equal whatever the order
    (the attr_shape column's rule, src/table.rs attr_shape)."""
    counts = Counter(t for t, _ in attrs)
    return "+".join(f"{_ATTR_SHORT.get(t, f'ATTR_{t:#x}')}×{n}" for t, n in sorted(counts.items()))


# --- the event table -----------------------------------------------------------

def events_frame(events: Iterable):
    """The event table of events already in hand (rocrtrace.events
    records): the core builds its columns, as it does for a trace."""
    return frame_from_columns(core().table_of_events(list(events)))


def _storable(text):
    """Text pandas' string dtype (Arrow, UTF-8) can hold: a file name
    read with surrogateescape keeps its undecodable bytes as \\xNN."""
    if isinstance(text, str) and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return text


def frame_from_columns(cols: dict):
    """The event table from the core's columns (src/py/table.rs), without
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


def _plain(v):
    """A pandas/numpy scalar as the JSON value it stands for."""
    if v is None:
        return None
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(v, "item"):
        return v.item()
    return v


class TableError(ValueError):
    """A table request the user can fix (format, missing pyarrow)."""


class ParquetUnavailable(TableError):
    pass


class EventsWriter:
    """The event table written batch by batch (``events``): csv and jsonl
    append each batch as write_events would write the whole table; parquet
    writes one row group per batch in the first batch's Arrow schema.  Call
    ``close()`` after the last batch."""

    def __init__(self, fmt: str, out):
        if fmt not in TABLE_FORMATS:
            raise TableError(f"unknown events format {fmt!r} (choose {', '.join(TABLE_FORMATS)})")
        self.fmt, self.out, self.rows = fmt, out, 0
        self._pq = None

    def write(self, df) -> None:
        if self.fmt == "parquet":
            self._parquet(df)
        else:
            write_events(df, self.fmt, self.out, header=self.rows == 0)
        self.rows += len(df)

    def _parquet(self, df) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = _events_arrow(df)
        if self._pq is None:
            self._pq = pq.ParquetWriter(sys.stdout.buffer if self.out == "-" else self.out,
                                        table.schema)
        elif table.schema != self._pq.schema:
            try:
                table = table.cast(self._pq.schema)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
                raise TableError(f"an event value does not fit its Parquet column ({e}); "
                                 "choose --format csv or jsonl") from None
        self._pq.write_table(table)

    def close(self) -> None:
        if self.fmt == "parquet":
            if self._pq is None:
                self._parquet(frame_from_columns(_empty_columns()))
            self._pq.close()
        elif self.rows == 0:
            write_events(frame_from_columns(_empty_columns()), self.fmt, self.out)


def _empty_columns() -> dict:
    """The core's columns of an empty table (src/py/table.rs)."""
    from .schema import EVENT_COLUMNS as cols

    out = {}
    for c in cols:
        if c.type in ("time", "duration", "float"):
            out[c.name] = ("float", b"")
        elif c.type in ("int64", "uint64"):
            out[c.name] = ("int", b"", b"", [])
        else:
            out[c.name] = ("text", b"", [])
    return out


def write_events(df, fmt: str, out, header: bool = True) -> None:
    """Write the event table as csv, jsonl or parquet to a path or an open
    file (``-`` is standard output), in the columns and types of
    rocrtrace/schema.py (Parquet: times as timestamps, durations as
    durations)."""
    if fmt not in TABLE_FORMATS:
        raise TableError(f"unknown events format {fmt!r} (choose {', '.join(TABLE_FORMATS)})")
    if fmt == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ParquetUnavailable(
                "parquet output needs pyarrow: pip install pyarrow "
                "(or choose --format csv or jsonl)") from None
        if out == "-":
            out = sys.stdout.buffer
        pq.write_table(_events_arrow(df), out)
        return
    if fmt == "csv":
        text = df.to_csv(index=False, header=header)
    else:
        # Not DataFrame.to_json: it escapes '/' in paths and rounds times
        # to 10 significant digits, which loses microseconds of epoch times.
        text = "".join(json.dumps({k: _plain(v) for k, v in rec.items()}) + "\n"
                       for rec in df.to_dict(orient="records"))
    if out == "-":
        sys.stdout.write(text)
    elif hasattr(out, "write"):
        out.write(text)
    else:
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)


def _events_arrow(df):
    """The event table as Arrow in the schema's types: a column the frame
    holds as text (an integer outside int64) or with negative values in an
    unsigned column keeps the type it has rather than failing."""
    import pandas as pd
    import pyarrow as pa

    from .schema import arrow_type

    out = df.copy(deep=False)
    fields = []
    for c in EVENT_COLUMNS:
        col = out[c.name]
        t = arrow_type(pa, c.type)
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


# --- stats -------------------------------------------------------------------

def _frame(events):
    import pandas as pd

    return events if isinstance(events, pd.DataFrame) else events_frame(events)


class _Missing:
    """The dict key of a missing group key (NaN and NA never equal themselves)."""

    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()


def _norm(k) -> tuple:
    import pandas as pd

    k = k if isinstance(k, tuple) else (k,)
    return tuple(_MISSING if (not isinstance(x, str) and pd.isna(x)) else x for x in k)


def _sort_key(nk: tuple) -> tuple:
    # groupby(sort=True, dropna=False): ascending, a missing key last
    return tuple((1, 0) if x is _MISSING else (0, x) for x in nk)


def _exact_quantiles(hist: Counter, qs) -> list[float]:
    """pandas' Series.quantile (numpy's linear method) of the multiset `hist`
    (value -> count), without the values themselves: the two order
    statistics around (n-1)q and numpy's own interpolation, so the figures
    are the same floats the whole column gives (tests/test_stats_stream.py)."""
    import bisect
    import math

    import numpy as np

    vals = sorted(hist)
    cum, total = [], 0
    for v in vals:
        total += hist[v]
        cum.append(total)

    def nth(i):
        return vals[bisect.bisect_right(cum, i)]

    out = []
    for q in qs:
        virt = np.float64(total - 1) * np.float64(q)
        if virt >= total - 1:
            out.append(float(vals[-1]))
            continue
        prev = math.floor(virt)
        a, b = np.float64(nth(prev)), np.float64(nth(prev + 1))
        t = virt - np.float64(prev)
        d = b - a
        out.append(float(b - d * (np.float64(1) - t) if t >= 0.5 else a + d * t))
    return out


class _PerAcc:
    """One stats table per group key over batches: calls, errors and the
    multiset of durations (its latency percentiles)."""

    def __init__(self, keys: list[str]):
        self.keys, self.groups = keys, {}

    def add(self, df) -> None:
        if df.empty:
            return
        for k, g in df.groupby(self.keys, dropna=False, sort=False):
            nk = _norm(k)
            ent = self.groups.get(nk)
            if ent is None:
                raw = k if isinstance(k, tuple) else (k,)
                ent = self.groups[nk] = [raw, 0, 0, Counter()]
            ent[1] += int(len(g))
            ent[2] += int(g["err"].notna().sum())
            ent[3].update((g["dur"].dropna() * 1e6).tolist())

    def frame(self):
        import pandas as pd

        rows = []
        for nk in sorted(self.groups, key=_sort_key):
            raw, calls, errors, hist = self.groups[nk]
            row = dict(zip(self.keys, raw))
            row["calls"], row["errors"] = calls, errors
            if hist:
                p50, p90, p99 = _exact_quantiles(hist, PERCENTILES)
                row.update({"timed": sum(hist.values()), "p50_us": p50, "p90_us": p90,
                            "p99_us": p99, "max_us": float(max(hist))})
            else:
                row.update({"timed": 0, "p50_us": None, "p90_us": None, "p99_us": None,
                            "max_us": None})
            rows.append(row)
        cols = self.keys + ["calls", "errors", "timed", "p50_us", "p90_us", "p99_us", "max_us"]
        out = pd.DataFrame(rows, columns=cols)
        return out.sort_values(["calls"] + self.keys, ascending=[False] + [True] * len(self.keys),
                               kind="stable").reset_index(drop=True)


class _CountAcc:
    """One stats table of counts per group key over batches."""

    def __init__(self, keys: list[str], name: str = "count"):
        self.keys, self.name, self.groups, self.dtypes = keys, name, {}, None

    def add(self, df) -> None:
        if df.empty:
            return
        if self.dtypes is None:
            self.dtypes = {k: df[k].dtype for k in self.keys}
        for k, n in df.groupby(self.keys, dropna=False).size().items():
            nk = _norm(k)
            ent = self.groups.setdefault(nk, [k if isinstance(k, tuple) else (k,), 0])
            ent[1] += int(n)

    def frame(self):
        import pandas as pd

        if not self.groups:
            return pd.DataFrame(columns=self.keys + [self.name])
        rows = [list(self.groups[nk][0]) + [self.groups[nk][1]]
                for nk in sorted(self.groups, key=_sort_key)]
        out = pd.DataFrame(rows, columns=self.keys + [self.name])
        out = out.astype({**self.dtypes, self.name: "int64"})
        return out.sort_values([self.name] + self.keys,
                               ascending=[False] + [True] * len(self.keys),
                               kind="stable").reset_index(drop=True)


def _slices(df):
    """(ioctls, SVM ioctls with op and shape filled in, other calls) of an
    event table: what stats() and StatsAcc count, row by row."""
    io = df[df["event"] == "Ioctl"]
    svm = io[io["op"].notna() | io["nattr"].notna()].copy()
    svm["op"] = svm["op"].fillna("?")
    svm["attr_shape"] = svm["attr_shape"].fillna(
        svm["nattr"].map(lambda n: f"nattr={n} (not decoded)", na_action="ignore")
    ).fillna("?")
    calls = df[~df["event"].isin(["Ioctl", "ProcessInfo", "FdSnapshot", "ModuleMap"])]
    return io, svm, calls


class StatsAcc:
    """``stats`` over the event table a batch at a time (``stats``
    and ``diff`` hold one batch, not the table): the same tables stats()
    gives for the whole table, float for float."""

    def __init__(self):
        self.acc = {"ioctls": _PerAcc(["ioctl"]), "svm_shapes": _PerAcc(["op", "attr_shape"]),
                    "errors": _CountAcc(["ioctl", "err"]), "sizes": _CountAcc(["ioctl", "size"]),
                    "threads": _CountAcc(["tid", "ioctl"], "calls"),
                    "syscalls": _PerAcc(["name"])}

    def add(self, df) -> None:
        io, svm, calls = _slices(df)
        self.acc["ioctls"].add(io)
        self.acc["svm_shapes"].add(svm)
        self.acc["errors"].add(io[io["err"].notna()])
        self.acc["sizes"].add(io[io["size"].notna()])
        self.acc["threads"].add(io)
        self.acc["syscalls"].add(calls)

    def result(self) -> dict:
        return {k: a.frame() for k, a in self.acc.items()}


def stats(events) -> dict:
    """Tables of counts, errors, request sizes and latency percentiles:

    * ``ioctls``: per ioctl (named by (type, nr)) calls, errors, latency;
    * ``svm_shapes``: per AMDKFD_IOC_SVM op and attribute shape;
    * ``errors``: per ioctl and errno;
    * ``sizes``: per ioctl and request size field (the histogram);
    * ``threads``: per thread and ioctl;
    * ``syscalls``: every other call by name.
    """
    acc = StatsAcc()
    acc.add(_frame(events))
    return acc.result()


def _records(df) -> list[dict]:
    return json.loads(df.to_json(orient="records", force_ascii=True)) if len(df) else []


def render_stats(st: dict, fmt: str = "text") -> str:
    if fmt == "json":
        return json.dumps({k: _records(v) for k, v in st.items()}, indent=2) + "\n"
    if fmt != "text":
        raise ValueError(f"unknown stats format {fmt!r} (choose text or json)")
    from tabulate import tabulate

    titles = {"ioctls": "ioctls (by type, nr)", "svm_shapes": "AMDKFD_IOC_SVM attribute shapes",
              "errors": "ioctl errors by errno", "sizes": "ioctl request sizes",
              "threads": "ioctls per thread", "syscalls": "other calls"}
    out = []
    for key, title in titles.items():
        df = st.get(key)
        if df is None or df.empty:
            continue
        out.append(f"{title}\n" + tabulate(df.astype(object).where(df.notna(), ""),
                                           headers="keys", showindex=False, floatfmt=".1f"))
    return ("\n\n".join(out) if out else "no events") + "\n"


# --- diff --------------------------------------------------------------------

def describe_shape(shape: str) -> str:
    """A plain-language name for an SVM attribute shape."""
    parts = dict(p.rsplit("×", 1) for p in shape.split("+") if "×" in p)
    kinds = set(parts)
    n = int(parts.get("NO_ACCESS", 0) or 0)
    if "NO_ACCESS" in kinds and kinds <= {"NO_ACCESS", "CLR_FLAGS"}:
        return ("a per-GPU NO_ACCESS revoke" if n == 1
                else f"a NO_ACCESS revoke of {n} GPUs")
    if "ACCESS_IN_PLACE" in kinds and kinds <= {"ACCESS_IN_PLACE", "SET_FLAGS", "CLR_FLAGS"}:
        return "an ACCESS_IN_PLACE grant"
    if kinds and kinds <= {"SET_FLAGS", "CLR_FLAGS"}:
        return "a flags-only SET_ATTR"
    if "ACCESS" in kinds:
        return "an ACCESS grant"
    return "a SET_ATTR"


def _mix(a, b, keys: list[str]) -> list[dict]:
    ca = {tuple(r[:-1]): int(r[-1]) for r in a[keys + ["calls"]].itertuples(index=False)}
    cb = {tuple(r[:-1]): int(r[-1]) for r in b[keys + ["calls"]].itertuples(index=False)}
    rows = []
    for k in sorted(set(ca) | set(cb), key=lambda k: tuple(str(x) for x in k)):
        if ca.get(k, 0) != cb.get(k, 0):
            rows.append({**dict(zip(keys, k)), "a": ca.get(k, 0), "b": cb.get(k, 0),
                         "delta": cb.get(k, 0) - ca.get(k, 0)})
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
    return diff_of_stats(stats(a_events), a_findings, stats(b_events), b_findings)


def diff_of_stats(sa: dict, a_findings, sb: dict, b_findings) -> dict:
    """diff from each side's stats() tables (what ``diff`` streams)."""
    ioctls = _mix(sa["ioctls"], sb["ioctls"], ["ioctl"])
    shapes = _mix(sa["svm_shapes"], sb["svm_shapes"], ["op", "attr_shape"])
    only_a, only_b = _only(a_findings, b_findings), _only(b_findings, a_findings)
    return {
        "ioctls": ioctls, "svm_shapes": shapes,
        "only_in_a": [f.to_dict() for f in only_a],
        "only_in_b": [f.to_dict() for f in only_b],
        "lines": _lines(ioctls, shapes, only_a, only_b),
    }


def _phrase(rows, side: str) -> str:
    return " and ".join(
        f"{describe_shape(r['attr_shape']) if r['op'] == 'SET_ATTR' else r['op']} "
        f"({r['attr_shape']}, {r[side]} call{'' if r[side] == 1 else 's'})" for r in rows)


def _lines(ioctls, shapes, only_a, only_b) -> list[str]:
    out = []
    for side, other in (("b", "a"), ("a", "b")):
        # the biggest change reads first
        new = sorted((r for r in shapes if r[other] == 0), key=lambda r: -r[side])
        if new:
            out.append(f"{side.upper()} sends {_phrase(new, side)} that {other.upper()} "
                       "does not")
    for r in shapes:
        if r["a"] and r["b"]:
            out.append(f"{r['op']} {r['attr_shape']}: A {r['a']} calls, B {r['b']} "
                       f"({r['delta']:+d})")
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
            out.append(f"findings only in {name}: "
                       + ", ".join(f"{n} {r}" for r, n in sorted(by_rule.items())))
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
                out += [f"#### {title}", "", tabulate(d[key], headers="keys", tablefmt="github"),
                        ""]
        for key, title in (("only_in_a", "Findings only in A"), ("only_in_b",
                                                                  "Findings only in B")):
            if d[key]:
                out += [f"#### {title}", ""]
                out += [f"- {f['severity']} `{f['rule']}`: {md(f['message'])} "
                        f"({md(f['file'])}:{f['line']})" for f in d[key]]
                out.append("")
        return "\n".join(out).rstrip("\n") + "\n"
    if fmt != "text":
        raise ValueError(f"unknown diff format {fmt!r} (choose text, json or markdown)")
    from .report.common import printable

    out = [f"A = {printable(names[0])}", f"B = {printable(names[1])}", ""] if names else []
    out += [printable(x) for x in d["lines"]]
    for key, title in (("ioctls", "ioctl mix (A vs B)"),
                       ("svm_shapes", "SVM attribute shapes (A vs B)")):
        if d[key]:
            out += ["", title, tabulate(d[key], headers="keys")]
    for key, title in (("only_in_a", "findings only in A"), ("only_in_b", "findings only in B")):
        if d[key]:
            out += ["", title]
            out += [f"  {f['severity']} {f['rule']}: {printable(f['message'])} "
                    f"({printable(f['file'])}:{f['line']})" for f in d[key]]
    return "\n".join(out) + "\n"
