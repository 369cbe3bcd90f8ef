"""`events`, `stats` and `diff` read the event table a batch at a time
(engine.event_batches; memory follows one batch, not the trace) and
give what the whole table gives: the same csv and jsonl bytes, the same
Parquet frame, the same stats tables float for float (the latency
percentiles from each group's multiset of durations, computed as pandas
does)."""

from __future__ import annotations

import glob
import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from rocrtrace import engine
from rocrtrace.tables import PERCENTILES, EventsWriter, StatsAcc, _exact_quantiles, _slices, render_stats, write_events

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACES = (
    sorted(glob.glob(os.path.join(ROOT, "fixtures", "scenarios", "*", "*.log")))[:12]
    + sorted(glob.glob(os.path.join(ROOT, "fixtures", "strace", "*.log")))[:8]
)


# --- the reference: the whole table through pandas' own groupby and quantile,
# as `stats` computed it before it read batches ---------------------------------


def _latency(group) -> dict:
    """p50/p90/p99/max in microseconds, linear interpolation between
    samples (pandas' default), over calls whose duration is known."""
    d = group["dur"].dropna() * 1e6
    if d.empty:
        return {"timed": 0, "p50_us": None, "p90_us": None, "p99_us": None, "max_us": None}
    q = d.quantile(list(PERCENTILES))
    return {
        "timed": int(d.size),
        "p50_us": float(q.iloc[0]),
        "p90_us": float(q.iloc[1]),
        "p99_us": float(q.iloc[2]),
        "max_us": float(d.max()),
    }


def _per(df, keys: list[str]):
    import pandas as pd

    rows = []
    for k, g in df.groupby(keys, dropna=False, sort=True):
        k = k if isinstance(k, tuple) else (k,)
        row = dict(zip(keys, k))
        row["calls"] = int(len(g))
        row["errors"] = int(g["err"].notna().sum())
        row.update(_latency(g))
        rows.append(row)
    cols = keys + ["calls", "errors", "timed", "p50_us", "p90_us", "p99_us", "max_us"]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["calls"] + keys, ascending=[False] + [True] * len(keys), kind="stable").reset_index(
        drop=True
    )


def _count(df, keys: list[str], name: str = "count"):
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=keys + [name])
    out = df.groupby(keys, dropna=False).size().reset_index(name=name)
    return out.sort_values([name] + keys, ascending=[False] + [True] * len(keys), kind="stable").reset_index(drop=True)


def stats(df) -> dict:
    io, svm, calls = _slices(df)
    return {
        "ioctls": _per(io, ["ioctl"]),
        "svm_shapes": _per(svm, ["op", "attr_shape"]),
        "errors": _count(io[io["err"].notna()], ["ioctl", "err"]),
        "sizes": _count(io[io["size"].notna()], ["ioctl", "size"]),
        "threads": _count(io, ["tid", "ioctl"], "calls"),
        "syscalls": _per(calls, ["name"]),
    }


def _batches(path, rows):
    got = []
    engine.event_batches([path], got.append, batch_rows=rows)
    return got


@pytest.mark.parametrize("path", TRACES, ids=os.path.basename)
def test_stats_over_batches_are_the_whole_tables(path):
    whole, _ = engine.events_frame([path])
    want = stats(whole)
    for rows in (1, 3, 64):
        acc = StatsAcc()
        for b in _batches(path, rows):
            acc.add(b)
        got = acc.result()
        for k in want:
            pd.testing.assert_frame_equal(got[k], want[k], check_dtype=True, obj=k)
        for fmt in ("text", "json"):
            assert render_stats(got, fmt) == render_stats(want, fmt)


@pytest.mark.parametrize("path", TRACES[:6], ids=os.path.basename)
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_events_written_by_batches_are_the_same_bytes(path, fmt):
    whole, _ = engine.events_frame([path])
    want = io.StringIO()
    write_events(whole, fmt, want)
    got = io.StringIO()
    w = EventsWriter(fmt, got)
    for b in _batches(path, 5):
        w.write(b)
    w.close()
    assert got.getvalue() == want.getvalue()


def test_events_parquet_by_batches_reads_as_the_whole_table(tmp_path):
    path = TRACES[0]
    whole, _ = engine.events_frame([path])
    a, b = tmp_path / "whole.parquet", tmp_path / "batches.parquet"
    write_events(whole, "parquet", str(a))
    w = EventsWriter("parquet", str(b))
    for x in _batches(path, 4):
        w.write(x)
    w.close()
    pd.testing.assert_frame_equal(pd.read_parquet(b), pd.read_parquet(a))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5_000_000), min_size=1, max_size=400), st.sampled_from([1e-6, 1e-3, 1.0]))
def test_exact_quantiles_are_pandas_quantiles(us, scale):
    d = pd.Series([u * scale for u in us], dtype=float) * 1e6
    want = [float(x) for x in d.quantile(list(PERCENTILES))]
    from collections import Counter

    assert _exact_quantiles(Counter(d.tolist()), PERCENTILES) == want


def test_cli_stats_and_diff_read_twice_or_from_stdin_alike(tmp_path):
    a = os.path.join(ROOT, "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log")
    b = os.path.join(ROOT, "fixtures/scenarios/c1-enclosing-range/v4-fixed-explicit.log")
    rt = [sys.executable, "-m", "rocrtrace"]
    files = subprocess.run(rt + ["diff", "--format", "json", a, b], capture_output=True, text=True)
    with open(a, "rb") as fa:
        piped = subprocess.run(rt + ["diff", "--format", "json", "-", b], stdin=fa, capture_output=True, text=True)
    assert files.returncode == piped.returncode == 0, files.stderr + piped.stderr
    x, y = json.loads(files.stdout), json.loads(piped.stdout)
    # the counts: two passes over a file, one pass (the table held) over a pipe
    for k in ("ioctls", "svm_shapes", "lines"):
        assert x[k] == y[k], k
    assert [(f["rule"], f["line"]) for f in x["only_in_a"]] == [(f["rule"], f["line"]) for f in y["only_in_a"]]
