"""--format perfetto and --format parquet, read back with the libraries that
the Perfetto UI and fleet tools use: the perfetto package's own trace protos
(trace_processor_shell cannot be fetched here) and pyarrow / DuckDB."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
C1 = ROOT / "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log"

perfetto_pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


def run(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "rocrtrace", *args],
        cwd=cwd,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _trace(path):
    return perfetto_pb2.Trace.FromString(Path(path).read_bytes())


def _check_nesting(trace):
    """Every track's begin/end pairs nest and close, in timestamp order, as
    the UI's importer requires."""
    open_: dict[int, list] = {}
    TE = perfetto_pb2.TrackEvent
    packets = sorted((p for p in trace.packet if p.HasField("track_event")), key=lambda p: p.timestamp)
    for p in packets:
        te = p.track_event
        if te.type == TE.TYPE_SLICE_BEGIN:
            open_.setdefault(te.track_uuid, []).append(p.timestamp)
        elif te.type == TE.TYPE_SLICE_END:
            stack = open_.get(te.track_uuid)
            assert stack, "an end without a begin"
            assert stack.pop() <= p.timestamp
    assert all(not s for s in open_.values())


def test_perfetto_trace_of_the_c1_scenario(tmp_path):
    from rocrtrace.report.perfetto import summary

    out = tmp_path / "c1.pftrace"
    r = run("analyze", str(C1), "--format", f"perfetto:{out}", "--format", "text")
    assert r.returncode == 1 and b"error[svm-over-revoke]" in r.stdout
    trace = _trace(out)
    s = summary(out.read_bytes())
    calls = [ln for ln in C1.read_text().splitlines() if ln and not ln.startswith(("#", " >"))]
    assert s["tracks"]["process"] == 1 and s["tracks"]["thread"] == 1
    assert s["names"] and "python3" in s["names"].values()
    exits = [ln for ln in C1.read_text().splitlines() if ln.startswith("# exit")]
    assert s["slices"]["thread"] == len(calls) + len(exits)
    # SVM claims as slices on their own tracks: the released and the hurt one
    assert s["tracks"]["svm"] == 2 and s["slices"]["svm"] == 2
    assert s["tracks"]["fd"] >= 1  # /dev/kfd's lifetime
    assert sorted(s["instant_names"]) == ["error[svm-coherency-downgrade]", "error[svm-over-revoke]"]
    # the instants carry their evidence, and flows point at it from the calls
    inst = [
        p.track_event
        for p in trace.packet
        if p.HasField("track_event") and p.track_event.type == perfetto_pb2.TrackEvent.TYPE_INSTANT
    ]
    for te in inst:
        ann = {a.name: a for a in te.debug_annotations}
        assert {"message", "fingerprint", "evidence", "rule"} <= set(ann)
        assert len(ann["evidence"].array_values) == len(te.terminating_flow_ids) >= 6
        roles = {e.name: e for e in ann["evidence"].array_values[0].dict_entries}
        assert {"role", "file", "line", "call"} <= set(roles)
    assert s["flows"] == sum(len(te.terminating_flow_ids) for te in inst)
    _check_nesting(trace)


@pytest.mark.skipif(not (shutil.which("strace") and shutil.which("cc")), reason="needs strace")
def test_perfetto_trace_of_a_real_strace_capture(tmp_path):
    src = tmp_path / "dc.c"
    src.write_text(
        "#include <fcntl.h>\n#include <unistd.h>\nint main(void)\n{\n"
        '    int fd = open("/etc/hostname", O_RDONLY);\n    close(fd);\n'
        "    close(fd);\n    return 0;\n}\n"
    )
    prog = tmp_path / "dc"
    subprocess.run(["cc", "-g", "-O0", "-o", str(prog), str(src)], check=True)
    log = tmp_path / "st.log"
    subprocess.run(["strace", "-f", "-k", "-ttt", "-T", "-yy", "-o", str(log), str(prog)], check=True)
    out = tmp_path / "t.pftrace"
    r = run("analyze", str(log), "--format", f"perfetto:{out}", cwd=tmp_path)
    # one thread, seen from execve: the double close is a warning
    assert r.returncode == 0, r.stderr
    trace = _trace(out)
    _check_nesting(trace)
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet if p.HasField("track_descriptor")}
    procs = [t for t in tracks.values() if t.HasField("process")]
    assert [t.process.process_name for t in procs] == [str(prog)]
    # fd 3's lifetimes: ld.so.cache, libc, then /etc/hostname, each a slice
    fd3 = [u for u, t in tracks.items() if t.name == "fd 3"]
    names = [
        p.track_event.name
        for p in trace.packet
        if p.HasField("track_event")
        and p.track_event.track_uuid in fd3
        and p.track_event.type == perfetto_pb2.TrackEvent.TYPE_SLICE_BEGIN
    ]
    assert names[-1] == "/etc/hostname" and len(names) >= 2
    (inst,) = [
        p.track_event
        for p in trace.packet
        if p.HasField("track_event") and p.track_event.type == perfetto_pb2.TrackEvent.TYPE_INSTANT
    ]
    assert inst.name == "warning[fd-double-close]"
    assert (inst.source_location.file_name, inst.source_location.line_number) == ("dc.c", 7)


def test_binary_formats_need_a_file():
    for fmt in ("perfetto", "parquet"):
        r = run("analyze", str(C1), "--format", fmt)
        assert r.returncode == 2 and b"binary" in r.stderr


pa = pytest.importorskip("pyarrow")


def test_parquet_one_row_per_finding(tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "f.parquet"
    assert run("analyze", str(C1), "--format", f"parquet:{out}").returncode == 1
    t = pq.read_table(out)
    assert t.num_rows == 2
    assert {
        "file",
        "program",
        "pid",
        "rule",
        "severity",
        "fingerprint",
        "location",
        "subject_kind",
        "start",
        "end",
        "gpu_ids",
        "fd",
        "fd_kind",
    } <= set(t.column_names)
    rows = t.to_pylist()
    assert {r["rule"] for r in rows} == {"svm-over-revoke", "svm-coherency-downgrade"}
    assert all(r["program"] == "python3" and r["pid"] == 4242 for r in rows)
    assert all(r["start"] == 0x7E0000003000 and r["gpu_ids"] == [0x1A2B] for r in rows)


def test_duckdb_aggregates_many_runs_as_the_readme_says(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    runs = tmp_path / "runs"
    runs.mkdir()
    logs = sorted(glob.glob(str(ROOT / "fixtures/scenarios/*/*buggy*.log")))[:6]
    assert len(logs) == 6
    expected = {}
    for n, log in enumerate(logs):
        r = run(
            "analyze",
            log,
            "--fail-on",
            "never",
            "--format",
            f"parquet:{runs}/{n}.parquet",
            "--format",
            "json:" + str(tmp_path / f"{n}.json"),
        )
        assert r.returncode == 0, r.stderr
        import json

        for f in json.loads((tmp_path / f"{n}.json").read_text())["findings"]:
            expected[f["rule"]] = expected.get(f["rule"], 0) + 1
    # the README's recipe, verbatim but for the directory
    query = (ROOT / "README.md").read_text().split("```sql\n", 1)[1].split("```", 1)[0]
    got = duckdb.sql(query.replace("runs/", f"{runs}/")).fetchall()
    assert {rule: n for rule, sev, n, *_ in got} == expected


def test_perfetto_fd_lifetimes_of_a_pipe(tmp_path):
    """Both ends of a pipe get their lifetime, each ending at its close."""
    from rocrtrace.report.perfetto import summary

    log = tmp_path / "p.log"
    log.write_text(
        "100 1700000000.000100 pipe2([3<pipe:[77]>, 4<pipe:[77]>], O_CLOEXEC) = 0 <0.000010>\n"
        "100 1700000000.000200 close(4<pipe:[77]>) = 0 <0.000005>\n"
        "100 1700000000.000300 close(3<pipe:[77]>) = 0 <0.000005>\n"
        "100 1700000000.000400 exit_group(0) = ?\n100 +++ exited with 0 +++\n"
    )
    out = tmp_path / "p.pftrace"
    assert run("analyze", str(log), "--format", f"perfetto:{out}").returncode == 0
    s = summary(out.read_bytes())
    assert s["tracks"]["fd"] == 2 and s["slices"]["fd"] == 2
    trace = _trace(out)
    _check_nesting(trace)
    names = {p.track_descriptor.uuid: p.track_descriptor.name for p in trace.packet if p.HasField("track_descriptor")}
    ends = {}
    begins = {}
    for p in trace.packet:
        te = p.track_event
        if p.HasField("track_event") and names.get(te.track_uuid, "").startswith("fd "):
            (begins if te.type == perfetto_pb2.TrackEvent.TYPE_SLICE_BEGIN else ends)[names[te.track_uuid]] = (
                p.timestamp
            )
    assert ends["fd 4"] == 1700000000000200000 and ends["fd 3"] == 1700000000000300000
    assert begins["fd 3"] == begins["fd 4"] == 1700000000000110000
