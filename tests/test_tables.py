"""The core's event table (src/table.rs), stats and diff on constructed events."""

from __future__ import annotations

import io
import json
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import report_samples as S  # noqa: E402

from rocrtrace import _engine, kfd  # noqa: E402
from rocrtrace.tables import (
    TableError,
    attr_shape,
    diff,
    frame_from_columns,  # noqa: E402
    render_diff,
    render_stats,
    stats,
    write_events,
)
from vocab import Close  # noqa: E402


def events_frame(events):
    """The event table the core makes of these events."""
    return frame_from_columns(_engine.table_of_events(list(events)))


def _latency_events():
    # 100 GET_VERSION calls of 1..100 µs, 3 of them failing; 4 SVM revokes.
    evs = []
    for i in range(1, 101):
        evs.append(
            S.ioctl(
                "AMDKFD_IOC_GET_VERSION",
                0x01,
                i,
                7 if i % 2 else 8,
                1000.0 + i,
                i * 1e-6,
                err="EINTR" if i in (10, 20) else "EBADF" if i == 30 else None,
            )
        )
    for i in range(4):
        evs.append(S.svm(200 + i, 7, 2000.0 + i, 0x7F0000000000, 0x2000, S.REVOKE))
    evs.append(Close(file=S.TRACE, line=300, pid=4242, tid=7, time=3000.0, ret=0, fd=5, dur=0.000002))
    return evs


def test_attr_shape_counts_in_kernel_order():
    attrs = [(kfd.ATTR_CLR_FLAGS, 2), (kfd.ATTR_NO_ACCESS, 1), (kfd.ATTR_CLR_FLAGS, 0x80), (kfd.ATTR_NO_ACCESS, 2)]
    assert attr_shape(attrs) == "NO_ACCESS×2+CLR_FLAGS×2"


def test_events_frame_columns_and_svm_shape():
    df = events_frame(_latency_events())
    assert len(df) == 105
    svm = df[df["ioctl"] == "AMDKFD_IOC_SVM"]
    assert set(svm["op"]) == {"SET_ATTR"}
    assert set(svm["nattr"]) == {3}
    assert set(svm["attr_shape"]) == {"NO_ACCESS×1+CLR_FLAGS×2"}
    assert set(svm["size"]) == {24 + 8 * 3}
    assert str(df["pid"].dtype) == "Int64" and str(df["fd"].dtype) == "Int64"
    assert df.loc[df["event"] == "Close", "fd"].iloc[0] == 5


def test_svm_shape_from_size_when_struct_not_decoded():
    ev = S.svm(1, 1, 1.0, 0x1000, 0x1000, S.REVOKE)
    ev.arg = None  # what an strace log gives
    ev.size = 24 + 8 * 4
    df = events_frame([ev])
    assert df["nattr"].iloc[0] == 4 and df["attr_shape"].isna().iloc[0]
    st = stats(df)
    assert st["svm_shapes"]["attr_shape"].iloc[0] == "nattr=4 (not decoded)"


def test_stats_counts_errors_sizes_and_percentiles():
    st = stats(events_frame(_latency_events()))
    io_ = st["ioctls"].set_index("ioctl")
    gv = io_.loc["AMDKFD_IOC_GET_VERSION"]
    assert gv["calls"] == 100 and gv["errors"] == 3
    # linear interpolation over 1..100 µs
    assert gv["p50_us"] == pytest.approx(50.5)
    assert gv["p90_us"] == pytest.approx(90.1)
    assert gv["p99_us"] == pytest.approx(99.01)
    assert gv["max_us"] == pytest.approx(100.0)
    errs = {(r.ioctl, r.err): r.count for r in st["errors"].itertuples()}
    assert errs == {("AMDKFD_IOC_GET_VERSION", "EINTR"): 2, ("AMDKFD_IOC_GET_VERSION", "EBADF"): 1}
    sizes = {(r.ioctl, r.size): r.count for r in st["sizes"].itertuples()}
    assert sizes[("AMDKFD_IOC_SVM", 48)] == 4 and sizes[("AMDKFD_IOC_GET_VERSION", 8)] == 100
    shapes = st["svm_shapes"]
    assert list(shapes["attr_shape"]) == ["NO_ACCESS×1+CLR_FLAGS×2"]
    assert shapes["calls"].iloc[0] == 4
    threads = {(r.tid, r.ioctl): r.calls for r in st["threads"].itertuples()}
    assert threads[(7, "AMDKFD_IOC_GET_VERSION")] == 50
    assert threads[(7, "AMDKFD_IOC_SVM")] == 4
    assert st["syscalls"].set_index("name").loc["close", "calls"] == 1


def test_render_stats_text_and_json():
    st = stats(events_frame(_latency_events()))
    text = render_stats(st, "text")
    assert "AMDKFD_IOC_GET_VERSION" in text and "NO_ACCESS×1+CLR_FLAGS×2" in text
    doc = json.loads(render_stats(st, "json"))
    gv = [r for r in doc["ioctls"] if r["ioctl"] == "AMDKFD_IOC_GET_VERSION"][0]
    assert gv["p50_us"] == pytest.approx(50.5)
    assert render_stats(stats(events_frame([])), "text").strip() == "no events"


def test_write_events_csv_jsonl_parquet(tmp_path):
    df = events_frame(_latency_events())
    buf = io.StringIO()
    write_events(df, "csv", buf)
    assert buf.getvalue().splitlines()[0].startswith("file,line,seq,pid,tid,time")
    write_events(df, "jsonl", str(tmp_path / "e.jsonl"))
    recs = [json.loads(ln) for ln in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert len(recs) == 105 and recs[0]["pid"] == 4242 and recs[0]["nattr"] is None
    raw = (tmp_path / "e.jsonl").read_text()
    assert "\\/" not in raw and recs[0]["file"] == S.TRACE
    epoch = S.svm(1, 1, 1764435600.123457, 0x1000, 0x1000, S.REVOKE)
    out = io.StringIO()
    write_events(events_frame([epoch]), "jsonl", out)
    assert json.loads(out.getvalue())["time"] == 1764435600.123457  # microseconds kept
    pytest.importorskip("pyarrow")
    import pandas as pd

    write_events(df, "parquet", str(tmp_path / "e.parquet"))
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert len(back) == 105 and back["attr_shape"].dropna().iloc[0] == "NO_ACCESS×1+CLR_FLAGS×2"
    with pytest.raises(TableError):
        write_events(df, "xlsx", buf)


def test_parquet_without_pyarrow_names_the_fix(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pyarrow(name, *a, **k):
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError("no pyarrow")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    with pytest.raises(TableError, match="pip install pyarrow"):
        write_events(events_frame([]), "parquet", "/nonexistent/x.parquet")


def test_diff_describes_shapes_and_findings():
    a, b = S.ab_events()
    leak = S.leak(30, 9)
    d = diff(events_frame(a), [S.double_close(), leak], events_frame(b), [S.leak(31, 10), S.leak(32, 11)])
    lines = d["lines"]
    assert (
        "B sends a per-GPU NO_ACCESS revoke (NO_ACCESS×1+CLR_FLAGS×2, 12 calls) and an "
        "ACCESS_IN_PLACE grant (ACCESS_IN_PLACE×1, 1 call) that A does not"
    ) in lines
    assert ("A sends a NO_ACCESS revoke of 2 GPUs (NO_ACCESS×2+CLR_FLAGS×2, 3 calls) that B does not") in lines
    assert "AMDKFD_IOC_SVM: A 3 calls, B 13 (+10)" in lines
    shapes = {r["attr_shape"]: (r["a"], r["b"]) for r in d["svm_shapes"]}
    assert shapes["NO_ACCESS×1+CLR_FLAGS×2"] == (0, 12)
    # by fingerprint, as a multiset: one leak in A, two in B -> one only in B
    assert [f["rule"] for f in d["only_in_a"]] == ["fd-double-close"]
    assert [f["rule"] for f in d["only_in_b"]] == ["fd-leak"]
    text = render_diff(d, "text", names=("before.log", "after.log"))
    assert text.startswith("A = before.log\nB = after.log")
    assert "findings only in A" in text
    assert json.loads(render_diff(d, "json", names=("x", "y")))["b"] == "y"
    assert "| attr_shape" in render_diff(d, "markdown").replace("|  ", "| ")


def test_diff_of_identical_traces_says_so():
    a, _ = S.ab_events()
    d = diff(events_frame(a), [], events_frame(a), [])
    assert d["lines"] == ["A and B issue the same ioctl mix and have the same findings"]


def test_reporters_and_baseline_do_not_import_pandas():
    # rocrtrace --help must stay fast; pandas costs ~0.3 s to import.
    code = (
        "import sys, rocrtrace.baseline, rocrtrace.tables, rocrtrace.report as r\n"
        "import rocrtrace.report.text, rocrtrace.report.sarif, rocrtrace.report.github\n"
        "import rocrtrace.report.junit, rocrtrace.report.markdown, rocrtrace.report.csv_\n"
        "import rocrtrace.report.jsonl\n"
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
