"""Issue 35 item 12: the tables share one column schema.  The
findings' CSV, JSONL and Parquet have the same columns with the same values
and types; the events' tables too, with the same where-and-when columns;
times are timestamps where the format has the type; addresses are unsigned
integers; an fd column reads as an integer, not a float.  The JSON report's
schema ships with the package."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocrtrace import schema

ROOT = Path(__file__).resolve().parent.parent
SC = ROOT / "fixtures/scenarios"
C1 = SC / "c1-enclosing-range/v1-buggy-explicit.log"
VMM = SC / "vmm-export-double-close/v2-6471-buggy-explicit.log"

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")


def rocrtrace(*args):
    r = subprocess.run(
        [sys.executable, "-m", "rocrtrace", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert r.returncode in (0, 1), r.stderr
    return r


@pytest.fixture(scope="module")
def findings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tables")
    paths = {fmt: tmp / f"f.{fmt}" for fmt in schema.TABLE_FORMATS}
    rocrtrace("analyze", C1, VMM, *(x for fmt, p in paths.items() for x in ("--format", f"{fmt}:{p}")))
    return paths


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("events")
    paths = {fmt: tmp / f"e.{fmt}" for fmt in schema.TABLE_FORMATS}
    for fmt, p in paths.items():
        rocrtrace("events", VMM, "--format", fmt, "-o", p)
    return paths


def _names(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_schema(path).names
    if path.suffix == ".csv":
        return next(csv.reader(io.StringIO(path.read_text())))
    keys = {tuple(json.loads(ln)) for ln in path.read_text().splitlines()}
    assert len(keys) == 1
    return list(keys.pop())


def test_one_set_of_column_names(findings, events):
    for p in findings.values():
        assert _names(p) == list(schema.FINDING_NAMES), p
    for p in events.values():
        assert _names(p) == list(schema.EVENT_NAMES), p
    head = ["file", "line", "pid", "tid", "time"]
    assert list(schema.FINDING_NAMES[:5]) == head
    assert [n for n in schema.EVENT_NAMES if n in head] == head


def test_parquet_types(findings, events):
    import pyarrow.parquet as pq

    f = pq.read_schema(findings["parquet"])
    assert f.field("time").type == pa.timestamp("us", tz="UTC")
    for col in ("start", "end", "handle"):
        assert f.field(col).type == pa.uint64()
    assert f.field("gpu_ids").type == pa.list_(pa.uint64())
    assert f.field("fd").type == pa.int64() and f.field("pid").type == pa.int64()
    e = pq.read_schema(events["parquet"])
    assert e.field("time").type == pa.timestamp("us", tz="UTC")
    assert e.field("dur").type == pa.duration("us")
    assert e.field("fd").type == pa.int64() and e.field("request").type == pa.uint64()


def test_fd_reads_as_an_integer_in_pandas(findings, events):
    # plain pandas on the Parquet files: nullable integers, not float
    for p in (findings["parquet"], events["parquet"]):
        df = pd.read_parquet(p)
        assert str(df["fd"].dtype) == "Int64" and str(df["pid"].dtype) == "Int64", p
        assert df["fd"].isna().any() and df["fd"].notna().any()
    # CSV and JSONL have no types of their own: schema.read gives the same
    for p in (*findings.values(), *events.values()):
        df = schema.read(p)
        assert str(df["fd"].dtype) == "Int64", p
    assert str(schema.read(findings["csv"])["start"].dtype) == "UInt64"


def test_the_three_findings_tables_hold_the_same_values(findings):
    frames = {fmt: schema.read(p) for fmt, p in findings.items()}
    pq_, csv_, js = frames["parquet"], frames["csv"], frames["jsonl"]
    assert len(pq_) == len(csv_) == len(js) == 5  # C1 2, VMM 3
    # times: a timestamp in Parquet, the same instant in seconds elsewhere
    secs = pq_["time"].map(lambda t: t.timestamp())
    assert (abs(secs - csv_["time"].astype(float)) < 1e-6).all()
    assert (csv_["time"] == js["time"]).all()
    for col in (
        "file",
        "line",
        "pid",
        "tid",
        "rule",
        "fingerprint",
        "start",
        "end",
        "fd",
        "handle",
        "message",
        "location_line",
    ):
        a, b, c = (list(x[col].astype(object).where(x[col].notna(), None)) for x in (pq_, csv_, js))
        assert a == c, col
        if col != "message":  # CSV escapes control characters
            assert a == b, col
    dmabuf = js[js["rule"] == "fd-double-close"].iloc[0]
    assert dmabuf["fd"] == 6 and dmabuf["fd_kind"] == "dmabuf"
    svm = js[js["subject_kind"] == "svm-range"].iloc[0]
    assert svm["start"] == 0x7E0000003000 and list(svm["gpu_ids"]) == [0x1A2B]
    # the evidence whole, in every table
    for df in (csv_, js):
        for ev, call in zip(df["evidence"], df["call"]):
            assert any(e["call"] == call for e in ev)
    ev = pq_["evidence"].iloc[0]
    assert {e["call"] for e in ev} == {e["call"] for e in js["evidence"].iloc[0]}


def test_jsonl_rows_match_the_row_schema(findings, events):
    jsonschema = pytest.importorskip("jsonschema")
    for p, cols in ((findings["jsonl"], schema.FINDING_COLUMNS), (events["jsonl"], schema.EVENT_COLUMNS)):
        check = jsonschema.Draft202012Validator(schema.row_schema(cols))
        for ln in p.read_text().splitlines():
            check.validate(json.loads(ln))


def test_the_report_schema_ships_with_the_package():
    from importlib.resources import files

    import rocrtrace

    shipped = files("rocrtrace").joinpath("schemas/report.schema.json")
    assert shipped.is_file() and schema.report_schema()["title"]
    assert Path(rocrtrace.__file__).parent / "schemas" / "report.schema.json" == Path(str(shipped))
    assert not (ROOT / "tests/schemas/report.schema.json").exists()


def test_the_columns_doc_is_written_from_the_schema():
    assert (ROOT / "docs/tables.md").read_text() == schema.markdown()
