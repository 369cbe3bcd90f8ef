"""The Rust reader and tinygrad dialect (src/read/, src/parse/tinygrad.rs)
against the Python reference (rocrtrace/inputs.py, rocrtrace/parse/tinygrad.py)
on the same inputs: events and InputInfo equal as the Python dataclasses;
per file the detected format, layout, tid, lines and counts equal; errors
the same one line.

Where the two differ by the Rust event conventions (events.rs: numbers
beyond 64 bits, ret below -4095, fds beyond 32 bits) the generated lines
stay inside what real logs print; tests at the end pin what Rust does there.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from rocrtrace import inputs
from rocrtrace.events import InputInfo
from rocrtrace.inputs import InputError, open_trace
from rocrtrace.parse import tinygrad

_engine = pytest.importorskip("rocrtrace._engine")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TINYGRAD = sorted((FIXTURES / "tinygrad").glob("*.log"))
ALL_LOGS = sorted(p for p in FIXTURES.rglob("*") if p.is_file()
                  and p.suffix in (".log", ".gz", ".xz", ".bz2", ".txt"))

GOOD = (b"100   1795973828.954411 openat(AT_FDCWD, \"/dev/null\", O_RDWR) = 3 <0.000010>\n"
        b"100   1795973828.954511 close(3) = 0 <0.000003>\n")
TG = (b"   1.25 ms +   0.02 ms :  0 = AMDKFD_IOC_ALLOC_MEMORY_OF_GPU va_addr:0x1000 "
      b"size:0x2000 handle:0x7 mmap_offset:0x9 gpu_id:0x1A2B flags:0x4\n"
      b"ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd\n")

COUNTS = {"files": 0, "lines": 0, "events": 0, "errors": 0, "tinygrad_lines": 0}


@pytest.fixture(autouse=True, scope="module")
def _report_counts():
    """The counts the comparisons reached (shown with -s)."""
    yield
    print("\nengine-read compared:", COUNTS)


# --- the two sides ------------------------------------------------------------

def py_tinygrad(file: str, lines: list[str]):
    info = InputInfo(file=file, format="tinygrad")
    p = tinygrad.Parser(file, info)
    evs = []
    for i, ln in enumerate(lines, 1):
        evs.extend(p.feed(i, ln))
    evs.extend(p.finish())
    return evs, info


def py_read(arg: str, fmt=None, max_line=1 << 20):
    """What inputs.py makes of a TRACE argument, file by file, as
    _engine.read_input returns it."""
    t = open_trace(arg, input_format=fmt, max_line=max_line)
    out = []
    for f in t._files:
        info = f.info
        lines, error = [], None
        try:
            stream = f.open()
            try:
                it = inputs.read_lines(stream, info, max_line)
                if not f.layout.plain:
                    it = inputs.clean_lines(it, info, f.layout)
                lines.extend(it)
            finally:
                stream.close()
        except InputError as e:
            error = str(e)
        out.append(dict(path=f.path, format=f.fmt, tid=f.tid, first=f.layout.first,
                        prefix=f.layout.prefix, quote=f.layout.quote, layout=info.layout,
                        lines=lines, info=info, error=error))
    return out


def both(make, fmt=None, max_line=1 << 20):
    """Read the argument ``make()`` returns with each side (a pipe or FIFO is
    made afresh for each) and return (python, rust); an open error is the
    string of each side's exception."""
    res = []
    for side in ("py", "rs"):
        arg, done = make()
        try:
            if side == "py":
                res.append(py_read(arg, fmt, max_line))
            else:
                res.append(_engine.read_input(arg, fmt, max_line))
        except (InputError, _engine.ReadError) as e:
            res.append(str(e))
        finally:
            if done:
                done()
    return res


def assert_same_read(make, fmt=None, max_line=1 << 20):
    py, rs = both(make, fmt, max_line)
    if isinstance(py, str) or isinstance(rs, str):
        assert py == rs
        COUNTS["errors"] += 1
        return py
    assert [f["path"] for f in rs] == [f["path"] for f in py]
    for a, b in zip(py, rs):
        for k in ("format", "tid", "first", "prefix", "quote", "layout", "error"):
            assert a[k] == b[k], (a["path"], k, a[k], b[k])
        assert a["lines"] == b["lines"], a["path"]
        assert a["info"] == b["info"], (a["info"], b["info"])
        COUNTS["files"] += 1
        COUNTS["lines"] += len(a["lines"])
    return py


def path_arg(p):
    return lambda: (str(p), None)


def pipe_arg(data: bytes):
    """/dev/fd/N of a pipe a thread writes ``data`` into."""
    def make():
        r0, w = os.pipe()
        r = os.dup2(r0, 200)        # the same /dev/fd/N for both sides
        os.close(r0)

        def writer():
            with os.fdopen(w, "wb") as f:
                try:
                    f.write(data)
                except BrokenPipeError:
                    pass
        th = threading.Thread(target=writer, daemon=True)
        th.start()

        def done():
            th.join(10)
            os.close(r)
        return f"/dev/fd/{r}", done
    return make


def fifo_arg(tmp_path: Path, data: bytes):
    def make():
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)

        def writer():
            with open(fifo, "wb") as f:
                try:
                    f.write(data)
                except BrokenPipeError:
                    pass
        th = threading.Thread(target=writer, daemon=True)
        th.start()
        return str(fifo), lambda: (th.join(10), fifo.unlink())
    return make


# --- (a) tinygrad: events and info ------------------------------------------------

def assert_same_tinygrad(lines: list[str]):
    evs, info = py_tinygrad("t.log", lines)
    r_evs, r_info = _engine.parse_tinygrad_lines("t.log", lines)
    assert r_evs == evs
    assert r_info == info
    COUNTS["tinygrad_lines"] += len(lines)
    COUNTS["events"] += len(evs)


@pytest.mark.parametrize("path", TINYGRAD, ids=lambda p: p.name)
def test_tinygrad_fixture_lines(path):
    lines = [ln for _, ln in inputs.read_lines(open(path, "rb"), InputInfo(file="x"))]
    assert_same_tinygrad(lines)


@pytest.mark.parametrize("path", TINYGRAD, ids=lambda p: p.name)
def test_tinygrad_fixture_trace(path):
    t = open_trace(str(path))
    evs = list(t.events())
    r_evs, r_infos = _engine.trace_events(str(path))
    assert r_evs == evs and r_infos == t.infos
    assert evs and all(e.seq == i for i, e in enumerate(evs))


def test_tinygrad_generator_output_the_same(tmp_path):
    import subprocess
    import sys
    subprocess.run([sys.executable, str(FIXTURES / "tinygrad" / "gen_tinygrad.py"), str(tmp_path)],
                   check=True, capture_output=True)
    made = sorted(tmp_path.glob("*.log"))
    assert [p.name for p in made] == [p.name for p in TINYGRAD]
    for p in made:
        t = open_trace(str(p))
        evs = list(t.events())
        assert _engine.trace_events(str(p)) == (evs, t.infos)


NAMES = ["AMDKFD_IOC_SVM", "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
         "AMDKFD_IOC_GET_VERSION", "AMDKFD_IOC_CREATE_QUEUE", "AMDKFD_IOC_CREATE_QUEUE_OLD",
         "AMDKFD_IOC_GET_DMABUF_INFO", "AMDKFD_IOC_EXPORT_DMABUF", "AMDKFD_IOC_NOT_A_THING",
         "AMDKFD_IOC_FREE_MEMORY_OF_GPU", "AMDKFD_IOC_CREATE_EVENT"]
FIELDS = ["nattr", "op", "start_addr", "size", "handle", "gpu_id", "n_success", "attrs",
          "queue_id", "flags", "va_addr", "major_version", "x"]
ATTRS = ["KFD_IOCTL_SVM_ATTR_ACCESS", "KFD_IOCTL_SVM_ATTR_SET_FLAGS", "KFD_IOCTL_SVM_ATTR_BOGUS",
         "KFD_IOCTL_SVM_ATTR_GRANULARITY", "7", "12", "٣"]
num = st.one_of(st.integers(0, 99999).map(str),
                st.tuples(st.integers(-50, 5000), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]:02d}"),
                st.sampled_from(["١٢.٥", "-0.00", "007"]))
hexv = st.one_of(st.integers(0, 40).map(hex), st.integers(0, (1 << 64) - 1).map(lambda v: f"0x{v:X}"),
                 st.integers(0, 255).map(lambda v: "0x" + "0" * 40 + f"{v:x}"))
field = st.one_of(
    st.tuples(st.sampled_from(FIELDS), hexv).map(lambda t: f"{t[0]}:{t[1]}"),
    st.just("attrs:<svm_attribute_Array_2 object at 0x7f00>"),
    st.just("bad:12"), st.just("x:0xZZ"), st.just("é:0x1"))
ret = st.one_of(st.integers(-4095, 1 << 31).map(str), st.sampled_from(["-1", "0", "٠"]))
space = st.sampled_from(["", " ", "  ", "\t", "\u2003", "\x1c"])


def _named(t):
    ms, dur, r, name, fields, sp, tail = t
    return f"{sp}{ms} ms +{sp}{dur} ms : {r} = {name:40s} {' '.join(fields)}{tail}"


named = st.tuples(num, num, ret, st.sampled_from(NAMES), st.lists(field, max_size=6), space,
                  space).map(_named)
attr = st.tuples(st.integers(0, 4), st.sampled_from(ATTRS),
                 st.one_of(hexv, st.sampled_from(["0", "17", "012", "00"])), space).map(
    lambda t: f"{t[0]}: {t[1]:40s}: {t[2]}{t[3]}")
generic = st.tuples(st.integers(0, 5), st.sampled_from([0, 8, 24, 0x3FFF, 0x4000]),
                    st.sampled_from([75, 100, 98, 72, 117, 256, 1]), st.integers(0, 260),
                    st.integers(-2, 1 << 20), st.integers(-4095, 1 << 20),
                    st.sampled_from(["", " /dev/kfd", " /dev/dri/renderD128", " /dev/accel/accel0",
                                     " /tmp/x y", "  "]),
                    st.one_of(st.just(""), st.tuples(num, num).map(lambda t: f"{t[0]} ms +{t[1]} ms : "))
                    ).map(lambda t: f"{t[7]}ioctl idir={t[0]} size={t[1]} itype={t[2]} nr={t[3]} "
                                    f"fd={t[4]} ret={t[5]}{t[6]}")
junk = st.one_of(st.just(""), st.just("   "), st.just("hello from tinygrad"),
                 st.text(st.characters(blacklist_categories=("Cs",)), max_size=30))
tg_line = st.one_of(named, attr, attr, generic, junk)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tg_line, max_size=25))
def test_tinygrad_generated_lines(lines):
    assert_same_tinygrad(lines)


def test_tinygrad_svm_runs():
    """SVM calls with their attribute lines, cut short, out of order, with a
    GET_ATTR answer: the shapes the generator reaches only by luck."""
    head = "  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x2000 op:0x{op} nattr:0x{n}"
    rnd = random.Random(5)
    for _ in range(300):
        lines = []
        for _ in range(rnd.randrange(1, 5)):
            n = rnd.choice([0, 1, 2, 3, 64, 65])
            lines.append(head.format(op=rnd.choice([0, 1]), n=f"{n:x}"))
            for i in range(rnd.choice([0, n, max(0, n - 1), n + 1])):
                lines.append(f"{rnd.choice([i, i, i, i + 1])}: {rnd.choice(ATTRS[:4]):40s}: "
                             f"0x{rnd.randrange(1 << 32):x}")
        assert_same_tinygrad(lines)


# --- (b) reading: files, layout, lines, errors ---------------------------------

@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_reads_the_same(path):
    assert_same_read(path_arg(path))


def _shapes():
    long_first = b"100   write(1, \"" + b"a" * 200000 + b"\"..., 200000) = 200000\n" + GOOD
    return {
        "good": GOOD,
        "tinygrad": TG,
        "junk-inside": GOOD + b"\xff\xfe\x00garbage\x00\n" + b"caf\xc3 invalid utf8\n" + GOOD + b"100   close(4",
        "hash-preamble": b"".join(b"# header line %d of the strace test suite\n" % i for i in range(500))
                         + b"$ strace -f ./x\n" + GOOD,
        "indent4": b"".join(b"    " + ln + b"\n" for ln in GOOD.splitlines()),
        "tab": b"".join(b"\t" + ln + b"\n" for ln in GOOD.splitlines()),
        "quoted": b"".join(b"> " + ln + b"\n" for ln in GOOD.splitlines()) + b">\n",
        "quoted2": b"".join(b"> > " + ln + b"\n" for ln in GOOD.splitlines()),
        "pasted": b"Here is my log:\n\n" + b"".join(b"    " + ln + b"\n" for ln in GOOD.splitlines()),
        "relative": b"     0.000000 openat(AT_FDCWD, \"/x\", O_RDONLY) = 3\n"
                    b"     0.000034 close(3)                = 0\n",
        "crlf": GOOD.replace(b"\n", b"\r\n"),
        "crlf-tg": TG.replace(b"\n", b"\r\n") + b"\r",
        "long-first": long_first,
        "long-mid": GOOD + b"100   write(1, \"" + b"a" * 5000 + b"\", 5000) = 5000\n" + GOOD,
        "long-2MB-first": b"x" * (2 << 20) + b"\n" + GOOD,
        "long-2MB-first-tail": b"x" * (2 << 20) + b"\n" + GOOD + b"y" * (3 << 20),
        "text": b"hello world\nthis is not a trace\n" * 20,
        "blank": b"\n\n   \n",
        "random": bytes(random.Random(7).randrange(256) for _ in range(20000)),
        "no-newline": b"100   close(3) = 0",
        "quoted-tg": b"".join(b"> " + ln + b"\n" for ln in TG.splitlines()),
        "preload": b"# rocrtrace-log 1\n# pid=5 ppid=1 exe=/bin/x page_size=4096\n",
    }


SHAPES = _shapes()


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("max_line", [1 << 20, 1000])
def test_shapes_read_the_same(tmp_path, name, max_line):
    p = tmp_path / f"{name}.log"
    p.write_bytes(SHAPES[name])
    assert_same_read(path_arg(p), max_line=max_line)


@pytest.mark.parametrize("name", ["good", "tinygrad", "pasted", "junk-inside", "crlf"])
@pytest.mark.parametrize("comp", ["gz", "xz", "bz2"])
def test_compressed_reads_the_same(tmp_path, name, comp):
    pack = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}[comp]
    p = tmp_path / f"{name}.log.{comp}"
    p.write_bytes(pack(SHAPES[name]))
    assert_same_read(path_arg(p))


@pytest.mark.parametrize("name", ["good", "tinygrad", "hash-preamble", "long-2MB-first", "text", "quoted"])
def test_pipes_and_fifos_read_the_same(tmp_path, name):
    data = SHAPES[name]
    assert_same_read(pipe_arg(data))
    assert_same_read(pipe_arg(gzip.compress(data)))
    assert_same_read(fifo_arg(tmp_path, data))


def test_empty_pipe_and_forced_formats(tmp_path):
    assert "empty" in assert_same_read(pipe_arg(b""))
    p = tmp_path / "pasted.log"
    p.write_bytes(SHAPES["pasted"])
    for fmt in ("strace", "tinygrad", "preload", "auto"):
        assert_same_read(path_arg(p), fmt=fmt)


def test_errors_are_the_same_line(tmp_path):
    (tmp_path / "zero.log").write_bytes(b"")
    (tmp_path / "d").mkdir()
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".x.log").write_bytes(GOOD)
    for arg in ("nope.log", "zero.log", "d", "hidden", "nomatch*.log", "a[b"):
        msg = assert_same_read(path_arg(tmp_path / arg))
        assert isinstance(msg, str) and msg.startswith("rocrtrace: ") and "\n" not in msg
    unreadable = tmp_path / "secret.log"
    unreadable.write_bytes(GOOD)
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):       # root reads it anyway
        assert "Permission denied" in assert_same_read(path_arg(unreadable))


def test_corrupt_compressed_is_an_error_on_both_sides(tmp_path):
    """The decompressors' own words differ (zlib's, liblzma's): the line up
    to them is the same."""
    bad = bytearray(gzip.compress(GOOD * 50))
    bad[12:-8] = b"\xff" * (len(bad) - 20)
    cut = lzma.compress(GOOD * 500)[:-40]
    for name, data in (("bad.gz", bytes(bad)), ("cut.xz", cut), ("cut.bz2", bz2.compress(GOOD)[:-5]),
                       ("z.zst", b"\x28\xb5\x2f\xfd\x04\x00" + b"\x00" * 20)):
        p = tmp_path / name
        p.write_bytes(data)
        py, rs = both(path_arg(p))
        for side in (py, rs):
            msg = side if isinstance(side, str) else side[0]["error"]
            assert msg and msg.startswith(f"rocrtrace: {p}: ") and "\n" not in msg, (py, rs)
        mp = py if isinstance(py, str) else py[0]["error"]
        mr = rs if isinstance(rs, str) else rs[0]["error"]
        if name.endswith(".zst"):
            # Python lacks the zstandard module here, Rust is built without zstd:
            # each says why in its own words
            assert "zstd-compressed, but " in mp and "zstd-compressed, but " in mr
            continue
        assert mp.split(":")[:3] == mr.split(":")[:3], (mp, mr)


def test_directories_globs_and_ff_sets(tmp_path):
    d = tmp_path / "ff"
    d.mkdir()
    (d / "tr.100").write_bytes(
        b"1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0} => "
        b"{parent_tid=[101]}, 88) = 101 <0.000500>\n1.002000 close(3) = 0 <0.000001>\n")
    (d / "tr.101").write_bytes(b"1.000100 close(4) = 0 <0.000001>\n")
    (d / "tr.102.gz").write_bytes(gzip.compress(b"1.000200 close(5) = 0 <0.000001>\n"))
    (d / "tg.7").write_bytes(TG)
    (d / ".hidden.103").write_bytes(GOOD)
    (d / "sub").mkdir()
    for arg in (d, f"{d}/", f"{d}/tr.*", f"{d}/tr.10[01]", f"{d}/*", f"{d}/tr.?0?", f"{d}/.h*"):
        files = assert_same_read(path_arg(arg))
        assert isinstance(files, list)
    files = assert_same_read(path_arg(f"{d}/tr.*"))
    assert [f["tid"] for f in files] == [100, 101, 102]
    assert [f["tid"] for f in assert_same_read(path_arg(d))] == [None, 100, 101, 102]


@pytest.mark.parametrize("max_open", [2, 3, 64])
def test_tinygrad_files_merge_the_same(tmp_path, max_open):
    """Several tinygrad logs merge by time, spilled when more than max_open."""
    rnd = random.Random(max_open)
    d = tmp_path / "logs"
    d.mkdir()
    for k in range(7):
        t = rnd.uniform(0, 5)
        lines = []
        for _ in range(rnd.randrange(1, 30)):
            t += rnd.uniform(0, 2)
            lines.append(f"{t:8.2f} ms +{rnd.uniform(0, 3):7.2f} ms :  0 = AMDKFD_IOC_FREE_MEMORY_OF_GPU "
                         f"handle:0x{rnd.randrange(99):X}")
            if rnd.random() < 0.2:
                lines.append(f"ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd")
            if rnd.random() < 0.1:
                lines.append("print output")
        (d / f"g{k}.log").write_text("\n".join(lines) + "\n")
    t = open_trace(str(d))
    t.max_open = max_open
    evs = list(t.events())
    r_evs, r_infos = _engine.trace_events(str(d), None, 1 << 20, max_open)
    assert r_evs == evs and r_infos == t.infos
    COUNTS["events"] += len(evs)


def test_no_line_parses_is_the_same_error(tmp_path):
    p = tmp_path / "pasted.log"
    p.write_bytes(SHAPES["pasted"])
    with pytest.raises(InputError) as ei:
        list(open_trace(str(p), input_format="tinygrad").events())
    with pytest.raises(_engine.ReadError) as er:
        _engine.trace_events(str(p), "tinygrad")
    assert str(er.value) == str(ei.value)


_piece = st.sampled_from([
    b"100   close(3) = 0 <0.000003>", b"     0.000034 close(3)                = 0",
    b"ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd",
    b"   1.25 ms +   0.02 ms :  0 = AMDKFD_IOC_GET_VERSION major_version:0x1",
    b"# a comment", b"$ strace -f ./x", b"hello", b"", b"   ", b"\xff\xfe", b"caf\xc3\xa9",
    b"+++ exited with 0 +++", b"--- SIGCHLD {si_signo=SIGCHLD} ---", b"[pid  7] close(1) = 0",
    b"# rocrtrace-log 1", b"x" * 1500])
_prefix = st.sampled_from([b"", b"    ", b"\t", b"> ", b"> > ", b">", b" "])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.tuples(_prefix, _piece, st.sampled_from([b"\n", b"\r\n", b"\r\r\n"])),
                       max_size=30),
       head=st.lists(_piece, max_size=4), tail=st.sampled_from([b"", b"close(", b"\r"]),
       max_line=st.sampled_from([1 << 20, 40, 1000]), same=st.booleans())
def test_generated_files_read_the_same(tmp_path, pieces, head, tail, max_line, same):
    if same and pieces:
        pieces = [(pieces[0][0], p, e) for _, p, e in pieces]
    data = b"".join(h + b"\n" for h in head) + b"".join(p + b + e for p, b, e in pieces) + tail
    p = tmp_path / "gen.log"
    p.write_bytes(data)
    assert_same_read(path_arg(p), max_line=max_line)


# --- where the Rust conventions differ, pinned --------------------------------

def test_values_beyond_64_bits_are_kept_as_text():
    line = ("  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_FREE_MEMORY_OF_GPU handle:0x"
            + "F" * 20)
    (ev,), _ = _engine.parse_tinygrad_lines("t.log", [line])
    (pev,), _ = py_tinygrad("t.log", [line])
    assert pev.arg == {"handle": int("F" * 20, 16)}
    assert ev.arg == {"handle": "0x" + "F" * 20}


def test_fd_and_ret_beyond_the_registers_are_unparsed():
    lines = ["ioctl idir=3 size=24 itype=75 nr=32 fd=99999999999 ret=0",
             "ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=99999999999999999999",
             "  1.00 ms +  0.10 ms : 99999999999999999999 = AMDKFD_IOC_GET_VERSION"]
    evs, info = _engine.parse_tinygrad_lines("t.log", lines)
    assert evs == [] and info.unparsed == 3 and info.lines == 3
    assert len(py_tinygrad("t.log", lines)[0]) == 3


def test_svm_attr_value_with_a_leading_zero_is_not_an_attr():
    """int("012", 0) raises: tinygrad.py used to crash on such a line; now
    both sides take it as no attr line (the SVM call lost its attrs)."""
    lines = ["  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x1000 op:0x0 nattr:0x1",
             "0: KFD_IOCTL_SVM_ATTR_ACCESS: 012"]
    (ev,), info = py_tinygrad("t.log", lines)
    assert ev.partial and ev.arg["attrs"] == [] and info.unparsed == 1
    assert_same_tinygrad(lines)


_STDIN_SIDE = r"""
import pickle, sys
from rocrtrace import inputs
import rocrtrace._engine as e
sys.path.insert(0, sys.argv[2])
from test_engine_read import py_read
try:
    got = py_read("-") if sys.argv[1] == "py" else e.read_input("-")
except (inputs.InputError, e.ReadError) as x:
    got = str(x)
sys.stdout.buffer.write(pickle.dumps(got))
"""


@pytest.mark.parametrize("name", ["good", "crlf-tg", "pasted", "text"])
def test_stdin_reads_the_same(name):
    import pickle
    import subprocess
    import sys
    data = SHAPES[name]
    out = []
    for side in ("py", "rs"):
        r = subprocess.run([sys.executable, "-c", _STDIN_SIDE, side, str(Path(__file__).parent)],
                           input=gzip.compress(data) if name == "good" else data,
                           capture_output=True, timeout=120, check=True)
        out.append(pickle.loads(r.stdout))
    assert out[0] == out[1]


@pytest.mark.parametrize("comp", [False, True])
def test_tinygrad_trace_from_a_pipe(comp):
    data = (FIXTURES / "tinygrad" / "buffers.log").read_bytes()
    if comp:
        data = gzip.compress(data)
    got = []
    for side in ("py", "rs"):
        arg, done = pipe_arg(data)()
        try:
            if side == "py":
                t = open_trace(arg)
                got.append((list(t.events()), t.infos))
            else:
                got.append(_engine.trace_events(arg))
        finally:
            done()
    assert got[0][0] and got[0] == got[1]
