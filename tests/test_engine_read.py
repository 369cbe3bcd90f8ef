"""The core's reader and tinygrad dialect (src/read/, src/parse/tinygrad.rs):
per file the detected format, layout, tid, lines and counts, the one-line
errors, and the tinygrad events read back to the values a generator wrote
(tinygrad's printing, extra/hip_gpu_driver/hip_ioctl.py).  A compressed
file, a pipe, a FIFO and stdin read as the file itself does; the dialect's
parser fed the lines gives what the reader gives for the file."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, HealthCheck, strategies as st

from rocrtrace import _engine, kfd
from vocab import kind

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TINYGRAD = sorted((FIXTURES / "tinygrad").glob("*.log"))
ALL_LOGS = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".log", ".gz", ".xz", ".bz2", ".txt"))

GOOD = (
    b'100   1795973828.954411 openat(AT_FDCWD, "/dev/null", O_RDWR) = 3 <0.000010>\n'
    b"100   1795973828.954511 close(3) = 0 <0.000003>\n"
)
TG = (
    b"   1.25 ms +   0.02 ms :  0 = AMDKFD_IOC_ALLOC_MEMORY_OF_GPU va_addr:0x1000 "
    b"size:0x2000 handle:0x7 mmap_offset:0x9 gpu_id:0x1A2B flags:0x4\n"
    b"ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd\n"
)
GOOD_LINES = GOOD.decode().splitlines()
TG_LINES = TG.decode().splitlines()


def read(arg: str, fmt=None, max_line=1 << 20):
    """_engine.read_input's files, or the one-line error it raised."""
    try:
        return _engine.read_input(arg, fmt, max_line)
    except _engine.ReadError as e:
        return str(e)


def without_names(files):
    """A read as the same bytes under another name give it: the files' path
    and info.file aside."""
    if isinstance(files, str):
        return files
    out = []
    for f in files:
        d = {k: v for k, v in f.items() if k != "path"}
        d["info"] = {k: v for k, v in vars_of(f["info"]).items() if k != "file"}
        out.append(d)
    return out


def vars_of(info) -> dict:
    return {
        k: getattr(info, k)
        for k in (
            "file",
            "format",
            "lines",
            "events",
            "unparsed",
            "unparsed_samples",
            "too_long",
            "preamble",
            "layout",
            "crlf",
            "ends_mid_line",
            "header",
        )
    }


def check_tinygrad_accounting(lines, evs, info):
    n = len(lines)
    assert info.lines == n and info.events == len(evs) and info.format == "tinygrad"
    assert 0 <= info.unparsed <= n
    assert all(1 <= e.line <= n and kind(e) == "Ioctl" for e in evs)
    assert all(1 <= ln <= n for ln, _ in info.unparsed_samples)
    # a blank line is never unparsed
    assert not [ln for ln, _ in info.unparsed_samples if not lines[ln - 1].strip()]


def pipe_arg(data: bytes):
    """/dev/fd/N of a pipe a thread writes ``data`` into."""

    def make():
        r0, w = os.pipe()
        r = os.dup2(r0, 200)  # the same /dev/fd/N each time
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


def read_made(make, fmt=None):
    arg, done = make()
    try:
        return read(arg, fmt)
    finally:
        done()


# --- (a) tinygrad ----------------------------------------------------------------


def test_tinygrad_lines():
    """Both line shapes, every value as tinygrad printed it."""
    (named, generic), info = _engine.parse_tinygrad_lines("t.log", TG_LINES)
    assert (named.ioctl, named.fd, named.path, named.ret, named.err) == (
        "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
        -1,
        "/dev/kfd",
        0,
        None,
    )
    assert (named.time, named.dur) == (0.00125, 0.00002)
    assert (named.dir, named.type, named.nr, named.size) == (3, 0x4B, 0x16, 40)
    # the kernel's outputs apart from the caller's inputs
    assert named.arg == {"va_addr": 0x1000, "size": 0x2000, "gpu_id": 0x1A2B, "flags": 4}
    assert named.out == {"handle": 7, "mmap_offset": 9}
    assert (generic.dir, generic.size, generic.type, generic.nr, generic.fd, generic.ret) == (3, 24, 75, 32, 3, 0)
    assert (generic.ioctl, generic.path, generic.time, generic.arg) == ("AMDKFD_IOC_SVM", "/dev/kfd", None, None)
    assert generic.request == kfd.ioc(3, 75, 32, 24)
    assert (info.lines, info.events, info.unparsed) == (2, 2, 0)
    assert info.has_time and info.has_durations and info.has_decorations and info.decoded_structs
    assert not info.has_pids


@pytest.mark.parametrize("path", TINYGRAD, ids=lambda p: p.name)
def test_tinygrad_fixture_lines_are_the_trace(path):
    """The parser fed the lines the reader gives (its layout undone), each
    at its number in the file (blank where the reader skipped a preamble),
    makes the reader's events and counts."""
    (f,) = read(str(path))
    lines = [""] * max(n for n, _ in f["lines"])
    for n, ln in f["lines"]:
        lines[n - 1] = ln
    evs, info = _engine.parse_tinygrad_lines(str(path), lines)
    check_tinygrad_accounting(lines, evs, info)
    t_evs, (t_info,) = _engine.trace_events(str(path))
    assert t_evs and [e.seq for e in t_evs] == list(range(len(t_evs)))
    assert evs == t_evs
    assert (info.lines, info.events, info.unparsed) == (t_info.lines, t_info.events, t_info.unparsed)


NAMES = [
    "AMDKFD_IOC_SVM",
    "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU",
    "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
    "AMDKFD_IOC_GET_VERSION",
    "AMDKFD_IOC_CREATE_QUEUE",
    "AMDKFD_IOC_CREATE_QUEUE_OLD",
    "AMDKFD_IOC_GET_DMABUF_INFO",
    "AMDKFD_IOC_EXPORT_DMABUF",
    "AMDKFD_IOC_NOT_A_THING",
    "AMDKFD_IOC_FREE_MEMORY_OF_GPU",
    "AMDKFD_IOC_CREATE_EVENT",
]
FIELDS = [
    "nattr",
    "op",
    "start_addr",
    "size",
    "handle",
    "gpu_id",
    "n_success",
    "attrs",
    "queue_id",
    "flags",
    "va_addr",
    "major_version",
    "x",
]
ATTRS = [
    "KFD_IOCTL_SVM_ATTR_ACCESS",
    "KFD_IOCTL_SVM_ATTR_SET_FLAGS",
    "KFD_IOCTL_SVM_ATTR_BOGUS",
    "KFD_IOCTL_SVM_ATTR_GRANULARITY",
    "7",
    "12",
    "٣",
]
num = st.one_of(
    st.integers(0, 99999).map(str),
    st.tuples(st.integers(-50, 5000), st.integers(0, 999)).map(lambda t: f"{t[0]}.{t[1]:02d}"),
    st.sampled_from(["١٢.٥", "-0.00", "007"]),
)
hexv = st.one_of(
    st.integers(0, 40).map(hex),
    st.integers(0, (1 << 64) - 1).map(lambda v: f"0x{v:X}"),
    st.integers(0, 255).map(lambda v: "0x" + "0" * 40 + f"{v:x}"),
)
field = st.one_of(
    st.tuples(st.sampled_from(FIELDS), hexv).map(lambda t: f"{t[0]}:{t[1]}"),
    st.just("attrs:<svm_attribute_Array_2 object at 0x7f00>"),
    st.just("bad:12"),
    st.just("x:0xZZ"),
    st.just("é:0x1"),
)
ret = st.one_of(st.integers(-4095, 1 << 31).map(str), st.sampled_from(["-1", "0", "٠"]))
space = st.sampled_from(["", " ", "  ", "\t", "\u2003", "\x1c"])


def _named(t):
    ms, dur, r, name, fields, sp, tail = t
    return f"{sp}{ms} ms +{sp}{dur} ms : {r} = {name:40s} {' '.join(fields)}{tail}"


named = st.tuples(num, num, ret, st.sampled_from(NAMES), st.lists(field, max_size=6), space, space).map(_named)
attr = st.tuples(
    st.integers(0, 4), st.sampled_from(ATTRS), st.one_of(hexv, st.sampled_from(["0", "17", "012", "00"])), space
).map(lambda t: f"{t[0]}: {t[1]:40s}: {t[2]}{t[3]}")
generic = st.tuples(
    st.integers(0, 5),
    st.sampled_from([0, 8, 24, 0x3FFF, 0x4000]),
    st.sampled_from([75, 100, 98, 72, 117, 256, 1]),
    st.integers(0, 260),
    st.integers(-2, 1 << 20),
    st.integers(-4095, 1 << 20),
    st.sampled_from(["", " /dev/kfd", " /dev/dri/renderD128", " /dev/accel/accel0", " /tmp/x y", "  "]),
    st.one_of(st.just(""), st.tuples(num, num).map(lambda t: f"{t[0]} ms +{t[1]} ms : ")),
).map(lambda t: f"{t[7]}ioctl idir={t[0]} size={t[1]} itype={t[2]} nr={t[3]} fd={t[4]} ret={t[5]}{t[6]}")
junk = st.one_of(
    st.just(""),
    st.just("   "),
    st.just("hello from tinygrad"),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
)
tg_line = st.one_of(named, attr, attr, generic, junk)


def _ms(text: str) -> float:
    return float(text) / 1000.0


gen_fields = st.tuples(
    st.integers(0, 5),
    st.sampled_from([0, 8, 24, 0x3FFF, 0x4000]),
    st.sampled_from([75, 100, 98, 72, 117, 256, 1]),
    st.integers(0, 260),
    st.integers(-2, 1 << 20),
    st.integers(-4095, 1 << 20),
    st.sampled_from(["", " /dev/kfd", " /dev/dri/renderD128", " /dev/accel/accel0", " /tmp/x y", "  "]),
    st.one_of(st.none(), st.tuples(num, num)),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(gen_fields, min_size=1, max_size=12))
def test_tinygrad_generic_lines_read_back(parts):
    """`ioctl idir= size= itype= nr= fd= ret= [path]`, timed or not: each an
    Ioctl of those values, or unparsed where a value is past its _IOC field
    (dir 2 bits, size 14, type and nr 8)."""
    lines = []
    for idir, size, itype, nr, fd, ret, path, timed in parts:
        pre = "" if timed is None else f"{timed[0]} ms +{timed[1]} ms : "
        lines.append(f"{pre}ioctl idir={idir} size={size} itype={itype} nr={nr} fd={fd} ret={ret}{path}")
    evs, info = _engine.parse_tinygrad_lines("t.log", lines)
    check_tinygrad_accounting(lines, evs, info)
    it = iter(evs)
    bad = []
    for n, (idir, size, itype, nr, fd, ret, path, timed) in enumerate(parts, 1):
        if idir > 3 or size > 0x3FFF or itype > 0xFF or nr > 0xFF:
            bad.append(n)
            continue
        ev = next(it)
        assert ev.line == n
        assert (ev.dir, ev.size, ev.type, ev.nr, ev.fd, ev.ret) == (idir, size, itype, nr, fd, ret)
        assert ev.request == kfd.ioc(idir, itype, nr, size)
        assert ev.err == ("EUNKNOWN" if ret < 0 else None)
        assert ev.path == (path.strip() or None)
        if timed is None:
            assert ev.time is None and ev.dur is None
        else:
            assert (ev.time, ev.dur) == (_ms(timed[0]), _ms(timed[1]))
    assert next(it, None) is None
    assert [ln for ln, _ in info.unparsed_samples] == bad[: len(info.unparsed_samples)]
    assert info.unparsed == len(bad)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tg_line, max_size=25))
def test_tinygrad_generated_lines(lines):
    evs, info = _engine.parse_tinygrad_lines("t.log", lines)
    check_tinygrad_accounting(lines, evs, info)


ATTR_BY_NAME = {v: k for k, v in kfd.ATTR_NAMES.items()}


def test_tinygrad_svm_runs():
    """SVM calls with their attribute lines, cut short, out of order, with a
    GET_ATTR answer: each call keeps the attribute lines that follow it in
    order, up to its nattr (at most 64 are awaited), and is partial when the
    log lost some; a line out of order ends the call and is unparsed."""
    head = "  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x2000 op:0x{op} nattr:0x{n}"
    rnd = random.Random(5)
    checked = 0
    for _ in range(300):
        lines, want, unparsed = [], [], 0
        for _ in range(rnd.randrange(1, 5)):
            n, op = rnd.choice([0, 1, 2, 3, 64, 65]), rnd.choice([0, 1])
            lines.append(head.format(op=op, n=f"{n:x}"))
            awaited = n if 0 < n <= 64 else 0
            call = dict(line=len(lines), n=n, op=op, attrs=[], open=awaited > 0)
            want.append(call)
            for i in range(rnd.choice([0, n, max(0, n - 1), n + 1])):
                idx, name = rnd.choice([i, i, i, i + 1]), rnd.choice(ATTRS[:4])
                value = rnd.randrange(1 << 32)
                lines.append(f"{idx}: {name:40s}: 0x{value:x}")
                ty = ATTR_BY_NAME.get(name)
                if call["open"] and idx == len(call["attrs"]) and ty is not None:
                    call["attrs"].append((ty, value))
                    call["open"] = len(call["attrs"]) < awaited
                else:
                    call["open"] = False
                    unparsed += 1
            call["partial"] = len(call["attrs"]) < awaited
        evs, info = _engine.parse_tinygrad_lines("t.log", lines)
        check_tinygrad_accounting(lines, evs, info)
        assert len(evs) == len(want) and info.unparsed == unparsed
        for ev, w in zip(evs, want):
            assert ev.line == w["line"] and ev.ioctl == "AMDKFD_IOC_SVM"
            assert ev.arg == {"start_addr": 0x1000, "size": 0x2000, "op": w["op"], "nattr": w["n"], "attrs": w["attrs"]}
            assert ev.size == 24 + 8 * w["n"] and ev.partial == w["partial"]
            assert ev.out == ({"attrs": w["attrs"]} if w["op"] == kfd.SVM_OP_GET_ATTR else None)
            checked += 1
    assert checked > 500


# --- where the core's conventions meet values past its registers ------------------


def test_values_beyond_64_bits_are_kept_as_text():
    line = "  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_FREE_MEMORY_OF_GPU handle:0x" + "F" * 20
    (ev,), _ = _engine.parse_tinygrad_lines("t.log", [line])
    assert ev.arg == {"handle": "0x" + "F" * 20}


def test_fd_and_ret_beyond_the_registers_are_unparsed():
    lines = [
        "ioctl idir=3 size=24 itype=75 nr=32 fd=99999999999 ret=0",
        "ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=99999999999999999999",
        "  1.00 ms +  0.10 ms : 99999999999999999999 = AMDKFD_IOC_GET_VERSION",
    ]
    evs, info = _engine.parse_tinygrad_lines("t.log", lines)
    assert evs == [] and info.unparsed == 3 and info.lines == 3


def test_svm_attr_value_with_a_leading_zero_is_not_an_attr():
    """int("012", 0) refuses it (tinygrad prints hex): no attr line, the SVM
    call lost its attrs."""
    lines = [
        "  1.00 ms +  0.10 ms :  0 = AMDKFD_IOC_SVM start_addr:0x1000 size:0x1000 op:0x0 nattr:0x1",
        "0: KFD_IOCTL_SVM_ATTR_ACCESS: 012",
    ]
    (ev,), info = _engine.parse_tinygrad_lines("t.log", lines)
    assert ev.partial and ev.arg["attrs"] == [] and info.unparsed == 1
    assert info.unparsed_samples == [(2, lines[1])]


# --- (b) reading: files, layout, lines, errors ---------------------------------


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_reads(path):
    (f,) = read(str(path))
    assert f["error"] is None and f["path"] == str(path)
    head = path.read_bytes()[:15]
    want = "tinygrad" if path.parent.name == "tinygrad" else "preload" if head == b"# rocrtrace-log" else "strace"
    assert f["format"] == want
    nums = [n for n, _ in f["lines"]]
    assert nums == sorted(set(nums)) and nums[0] == f["first"]
    _engine.trace_events(str(path))


def _shapes():
    long_first = b'100   write(1, "' + b"a" * 200000 + b'"..., 200000) = 200000\n' + GOOD
    return {
        "good": GOOD,
        "tinygrad": TG,
        "junk-inside": GOOD + b"\xff\xfe\x00garbage\x00\n" + b"caf\xc3 invalid utf8\n" + GOOD + b"100   close(4",
        "hash-preamble": b"".join(b"# header line %d of the strace test suite\n" % i for i in range(500))
        + b"$ strace -f ./x\n"
        + GOOD,
        "indent4": b"".join(b"    " + ln + b"\n" for ln in GOOD.splitlines()),
        "tab": b"".join(b"\t" + ln + b"\n" for ln in GOOD.splitlines()),
        "quoted": b"".join(b"> " + ln + b"\n" for ln in GOOD.splitlines()) + b">\n",
        "quoted2": b"".join(b"> > " + ln + b"\n" for ln in GOOD.splitlines()),
        "pasted": b"Here is my log:\n\n" + b"".join(b"    " + ln + b"\n" for ln in GOOD.splitlines()),
        "relative": b'     0.000000 openat(AT_FDCWD, "/x", O_RDONLY) = 3\n     0.000034 close(3)                = 0\n',
        "crlf": GOOD.replace(b"\n", b"\r\n"),
        "crlf-tg": TG.replace(b"\n", b"\r\n") + b"\r",
        "long-first": long_first,
        "long-mid": GOOD + b'100   write(1, "' + b"a" * 5000 + b'", 5000) = 5000\n' + GOOD,
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

# name -> (format, first line number, prefix, quote, layout, lines given,
# of them too long (None), info.lines (preamble lines), unparsed, too_long,
# preamble, crlf, ends_mid_line) at max_line 1 MiB; or the error.  A line
# too long at the 1000-byte limit adds one to each of too_long, unparsed and
# the None lines (LONG_AT_1000).
READS = {
    "blank": "rocrtrace: D/blank.log: empty (no lines)",
    "crlf": ("strace", 1, "", False, "", 2, 0, 0, 0, 0, 0, True, False),
    "crlf-tg": ("tinygrad", 1, "", False, "", 3, 0, 0, 0, 0, 0, True, True),
    "good": ("strace", 1, "", False, "", 2, 0, 0, 0, 0, 0, False, False),
    "hash-preamble": ("strace", 502, "", False, "", 2, 0, 501, 0, 0, 501, False, False),
    "indent4": ("strace", 1, "    ", False, "indented by 4 column(s)", 2, 0, 0, 0, 0, 0, False, False),
    "junk-inside": ("strace", 1, "", False, "", 7, 0, 0, 0, 0, 0, False, True),
    "long-2MB-first": ("strace", 2, "", False, "", 2, 0, 1, 0, 0, 1, False, False),
    "long-2MB-first-tail": ("strace", 2, "", False, "", 3, 1, 1, 1, 1, 1, False, True),
    "long-first": ("strace", 1, "", False, "", 3, 0, 0, 0, 0, 0, False, False),
    "long-mid": ("strace", 1, "", False, "", 5, 0, 0, 0, 0, 0, False, False),
    "no-newline": ("strace", 1, "", False, "", 1, 0, 0, 0, 0, 0, False, True),
    "pasted": ("strace", 3, "    ", False, "indented by 4 column(s)", 2, 0, 2, 0, 0, 2, False, False),
    "preload": ("preload", 1, "", False, "", 2, 0, 0, 0, 0, 0, False, False),
    "quoted": ("strace", 1, "> ", True, "quoted with '>'", 3, 0, 0, 0, 0, 0, False, False),
    "quoted-tg": ("tinygrad", 1, "> ", True, "quoted with '>'", 2, 0, 0, 0, 0, 0, False, False),
    "quoted2": ("strace", 1, "> > ", True, "quoted with '> >'", 2, 0, 0, 0, 0, 0, False, False),
    "random": "rocrtrace: D/random.log: not an strace, preload or tinygrad log (first line: " + "\\\\xa5" * 15 + ")",
    "relative": ("strace", 1, "", False, "", 2, 0, 0, 0, 0, 0, False, False),
    "tab": ("strace", 1, "\t", False, "indented by 1 tab(s)", 2, 0, 0, 0, 0, 0, False, False),
    "text": "rocrtrace: D/text.log: not an strace, preload or tinygrad log (first line: hello world)",
    "tinygrad": ("tinygrad", 1, "", False, "", 2, 0, 0, 0, 0, 0, False, False),
}
LONG_AT_1000 = {"long-first", "long-mid"}
# the shapes whose lines, the layout undone, are GOOD's or TG's
OF_GOOD = {"good", "crlf", "indent4", "tab", "quoted", "quoted2", "pasted", "hash-preamble", "long-2MB-first"}
OF_TG = {"tinygrad", "crlf-tg", "quoted-tg"}


def summary(files, tmp_path):
    if isinstance(files, str):
        return files.replace(str(tmp_path), "D")
    (f,) = files
    i = f["info"]
    assert f["error"] is None
    return (
        f["format"],
        f["first"],
        f["prefix"],
        f["quote"],
        f["layout"],
        len(f["lines"]),
        sum(ln is None for _, ln in f["lines"]),
        i.lines,
        i.unparsed,
        i.too_long,
        i.preamble,
        i.crlf,
        i.ends_mid_line,
    )


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("max_line", [1 << 20, 1000])
def test_shapes_read(tmp_path, name, max_line):
    p = tmp_path / f"{name}.log"
    p.write_bytes(SHAPES[name])
    got = read(str(p), max_line=max_line)
    want = READS[name]
    if max_line == 1000 and name in LONG_AT_1000:
        want = want[:6] + (want[6] + 1, want[7], want[8] + 1, want[9] + 1) + want[10:]
    assert summary(got, tmp_path) == want
    if name in OF_GOOD | OF_TG:
        (f,) = got
        assert [ln for _, ln in f["lines"] if ln] == (GOOD_LINES if name in OF_GOOD else TG_LINES)


def zstd_compress(data: bytes) -> bytes:
    """The zstd CLI's file, in two frames (as `zstd -T`, or two files
    concatenated, write them)."""
    half = len(data) // 2
    return b"".join(
        subprocess.run(["zstd", "-q", "-c"], input=part, capture_output=True, check=True).stdout
        for part in (data[:half], data[half:])
    )


@pytest.mark.parametrize("name", ["good", "tinygrad", "pasted", "junk-inside", "crlf"])
@pytest.mark.parametrize("comp", ["gz", "xz", "bz2", "zst"])
def test_compressed_reads_as_the_plain_file(tmp_path, name, comp):
    pack = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress, "zst": zstd_compress}[comp]
    p = tmp_path / f"{name}.log.{comp}"
    p.write_bytes(pack(SHAPES[name]))
    plain = tmp_path / f"{name}.log"
    plain.write_bytes(SHAPES[name])
    assert without_names(read(str(p))) == without_names(read(str(plain)))


@pytest.mark.parametrize("name", ["good", "tinygrad", "hash-preamble", "long-2MB-first", "text", "quoted"])
def test_pipes_and_fifos_read_as_the_file(tmp_path, name):
    data = SHAPES[name]
    plain = tmp_path / "plain.log"
    plain.write_bytes(data)
    want = without_names(read(str(plain)))
    if isinstance(want, str):  # the error names what was read
        want = want.split(": ", 2)[2]
    for got in (
        read_made(pipe_arg(data)),
        read_made(pipe_arg(gzip.compress(data))),
        read_made(fifo_arg(tmp_path, data)),
    ):
        got = without_names(got)
        assert (got.split(": ", 2)[2] if isinstance(got, str) else got) == want


def test_empty_pipe_and_forced_formats(tmp_path):
    got = read_made(pipe_arg(b""))
    assert got.startswith("rocrtrace: /dev/fd/200: ") and "empty" in got
    p = tmp_path / "pasted.log"
    p.write_bytes(SHAPES["pasted"])
    for fmt, want in (("strace", "strace"), ("tinygrad", "tinygrad"), ("preload", "preload"), ("auto", "strace")):
        (f,) = read(str(p), fmt)
        # a forced format reads the file as detection would: the same layout
        assert (f["format"], f["first"], f["layout"]) == (want, 3, "indented by 4 column(s)")
        assert [ln for _, ln in f["lines"]] == GOOD_LINES


def test_errors_are_one_line(tmp_path):
    (tmp_path / "zero.log").write_bytes(b"")
    (tmp_path / "d").mkdir()
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".x.log").write_bytes(GOOD)
    for arg, why in (
        ("nope.log", "no such file or directory"),
        ("zero.log", "empty file"),
        ("d", "empty directory"),
        ("hidden", "empty directory"),
        ("nomatch*.log", "no files match"),
        ("a[b", "no files match"),
    ):
        assert read(str(tmp_path / arg)) == f"rocrtrace: {tmp_path / arg}: {why}"
    unreadable = tmp_path / "secret.log"
    unreadable.write_bytes(GOOD)
    unreadable.chmod(0)
    if not os.access(unreadable, os.R_OK):  # root reads it anyway
        assert "Permission denied" in read(str(unreadable))


def test_corrupt_compressed_is_an_error(tmp_path):
    """A corrupt or cut archive: one line naming the file (the decompressor's
    own words after it)."""
    bad = bytearray(gzip.compress(GOOD * 50))
    bad[12:-8] = b"\xff" * (len(bad) - 20)
    cut = lzma.compress(GOOD * 500)[:-40]
    for name, data in (
        ("bad.gz", bytes(bad)),
        ("cut.xz", cut),
        ("cut.bz2", bz2.compress(GOOD)[:-5]),
        ("z.zst", b"\x28\xb5\x2f\xfd\x04\x00" + b"\x00" * 20),
        ("cut.zst", zstd_compress(GOOD * 500)[:-30]),
    ):
        p = tmp_path / name
        p.write_bytes(data)
        got = read(str(p))
        msg = got if isinstance(got, str) else got[0]["error"]
        assert msg and msg.startswith(f"rocrtrace: {p}: ") and "\n" not in msg, got


def test_directories_globs_and_ff_sets(tmp_path):
    d = tmp_path / "ff"
    d.mkdir()
    (d / "tr.100").write_bytes(
        b"1.000000 clone3({flags=CLONE_VM|CLONE_FILES|CLONE_THREAD, exit_signal=0} => "
        b"{parent_tid=[101]}, 88) = 101 <0.000500>\n1.002000 close(3) = 0 <0.000001>\n"
    )
    (d / "tr.101").write_bytes(b"1.000100 close(4) = 0 <0.000001>\n")
    (d / "tr.102.gz").write_bytes(gzip.compress(b"1.000200 close(5) = 0 <0.000001>\n"))
    (d / "tg.7").write_bytes(TG)
    (d / ".hidden.103").write_bytes(GOOD)
    (d / "sub").mkdir()
    tg, t100, t101, t102 = (
        ("tg.7", "tinygrad", None),
        ("tr.100", "strace", 100),
        ("tr.101", "strace", 101),
        ("tr.102.gz", "strace", 102),
    )
    # a directory: its visible files; a glob: what it matches; a -ff set
    # (NAME.TID files) gives each file its thread
    for arg, want in (
        (d, [tg, t100, t101, t102]),
        (f"{d}/", [tg, t100, t101, t102]),
        (f"{d}/tr.*", [t100, t101, t102]),
        (f"{d}/tr.10[01]", [t100, t101]),
        (f"{d}/*", [tg, t100, t101, t102]),
        (f"{d}/tr.?0?", [t100, t101]),
        (f"{d}/.h*", [(".hidden.103", "strace", None)]),
    ):
        got = [(os.path.relpath(f["path"], d), f["format"], f["tid"]) for f in read(str(arg))]
        assert got == want, arg


@pytest.mark.parametrize("max_open", [2, 3])
def test_tinygrad_files_merge_by_time(tmp_path, max_open):
    """Several tinygrad logs merge by time, each file in its order, the
    same when more than max_open spill."""
    rnd = random.Random(max_open)
    d = tmp_path / "logs"
    d.mkdir()
    per_file = 0
    for k in range(7):
        t = rnd.uniform(0, 5)
        lines = []
        for _ in range(rnd.randrange(1, 30)):
            t += rnd.uniform(0, 2)
            lines.append(
                f"{t:8.2f} ms +{rnd.uniform(0, 3):7.2f} ms :  0 = "
                f"AMDKFD_IOC_FREE_MEMORY_OF_GPU handle:0x{rnd.randrange(99):X}"
            )
            if rnd.random() < 0.2:
                lines.append("ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd")
            if rnd.random() < 0.1:
                lines.append("print output")
        (d / f"g{k}.log").write_text("\n".join(lines) + "\n")
        per_file += len(_engine.parse_tinygrad_lines("x", lines)[0])
    evs, infos = _engine.trace_events(str(d), None, 1 << 20, max_open)
    assert len(infos) == 7 and len(evs) == per_file
    # in order of when each call had returned: a file's running latest end
    # (time + dur; a line without a time keeps its file's), ties by file
    last, keys = {}, []
    for e in evs:
        end = None if e.time is None else e.time + (e.dur or 0.0)
        last[e.file] = max(last.get(e.file, float("-inf")), end if end is not None else float("-inf"))
        keys.append(last[e.file])
    assert keys == sorted(keys)
    for name in {e.file for e in evs}:
        mine = [e.line for e in evs if e.file == name]
        assert mine == sorted(mine)
    assert [e.seq for e in evs] == list(range(len(evs)))
    assert _engine.trace_events(str(d), None, 1 << 20, 64) == (evs, infos)


def test_no_line_parses_is_an_error(tmp_path):
    p = tmp_path / "pasted.log"
    p.write_bytes(SHAPES["pasted"])
    with pytest.raises(_engine.ReadError) as er:
        _engine.trace_events(str(p), "tinygrad")
    assert str(er.value) == f"rocrtrace: {p}: no line parses as a tinygrad log"


_piece = st.sampled_from(
    [
        b"100   close(3) = 0 <0.000003>",
        b"     0.000034 close(3)                = 0",
        b"ioctl idir=3 size=24 itype=75 nr=32 fd=3 ret=0 /dev/kfd",
        b"   1.25 ms +   0.02 ms :  0 = AMDKFD_IOC_GET_VERSION major_version:0x1",
        b"# a comment",
        b"$ strace -f ./x",
        b"hello",
        b"",
        b"   ",
        b"\xff\xfe",
        b"caf\xc3\xa9",
        b"+++ exited with 0 +++",
        b"--- SIGCHLD {si_signo=SIGCHLD} ---",
        b"[pid  7] close(1) = 0",
        b"# rocrtrace-log 1",
        b"x" * 1500,
    ]
)
_prefix = st.sampled_from([b"", b"    ", b"\t", b"> ", b"> > ", b">", b" "])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(st.tuples(_prefix, _piece, st.sampled_from([b"\n", b"\r\n", b"\r\r\n"])), max_size=30),
    head=st.lists(_piece, max_size=4),
    tail=st.sampled_from([b"", b"close(", b"\r"]),
    max_line=st.sampled_from([1 << 20, 40, 1000]),
    same=st.booleans(),
)
def test_generated_files_read(tmp_path, pieces, head, tail, max_line, same):
    """Any mix of line shapes, prefixes and line ends: one file or a
    one-line error; lines numbered in order; a line given as None only when
    too long, and counted so."""
    if same and pieces:
        pieces = [(pieces[0][0], p, e) for _, p, e in pieces]
    data = b"".join(h + b"\n" for h in head) + b"".join(p + b + e for p, b, e in pieces) + tail
    p = tmp_path / "gen.log"
    p.write_bytes(data)
    got = read(str(p), max_line=max_line)
    if isinstance(got, str):
        assert got.startswith(f"rocrtrace: {p}: ") and "\n" not in got
        return
    (f,) = got
    nums = [n for n, _ in f["lines"]]
    assert nums == sorted(set(nums)) and (not nums or nums[0] >= f["first"])
    nones = sum(ln is None for _, ln in f["lines"])
    assert nones == f["info"].too_long <= f["info"].unparsed
    assert all(ln is None or len(ln.encode("utf-8", "surrogateescape")) <= max_line for _, ln in f["lines"])
    if nums:
        assert nums[-1] <= data.count(b"\n") + 1


_STDIN_SIDE = r"""
import pickle, sys
import rocrtrace._engine as e
try:
    got = e.read_input("-")
except e.ReadError as x:
    got = str(x)
sys.stdout.buffer.write(pickle.dumps(got))
"""


@pytest.mark.parametrize("name", ["good", "crlf-tg", "pasted", "text"])
def test_stdin_reads_as_the_file(tmp_path, name):
    import pickle
    import sys

    data = SHAPES[name]
    r = subprocess.run(
        [sys.executable, "-c", _STDIN_SIDE],
        input=gzip.compress(data) if name == "good" else data,
        capture_output=True,
        timeout=120,
        check=True,
    )
    got = without_names(pickle.loads(r.stdout))
    plain = tmp_path / "plain.log"
    plain.write_bytes(data)
    want = without_names(read(str(plain)))
    if isinstance(want, str):
        assert got == want.replace(str(plain), "-")
    else:
        assert got == want


@pytest.mark.parametrize("comp", [False, True])
def test_tinygrad_trace_from_a_pipe(tmp_path, comp):
    raw = (FIXTURES / "tinygrad" / "buffers.log").read_bytes()
    arg, done = pipe_arg(gzip.compress(raw) if comp else raw)()
    try:
        evs, infos = _engine.trace_events(arg)
    finally:
        done()
    want, want_infos = _engine.trace_events(str(FIXTURES / "tinygrad" / "buffers.log"))

    def key(e):
        return (
            kind(e),
            e.line,
            e.seq,
            e.time,
            e.dur,
            e.ret,
            e.err,
            e.fd,
            e.path,
            e.request,
            e.ioctl,
            e.arg,
            e.out,
            e.partial,
            e.text,
        )

    assert evs and [key(e) for e in evs] == [key(e) for e in want]
    assert {e.file for e in evs} == {arg}
    assert [vars_of(i) | {"file": 0} for i in infos] == [vars_of(i) | {"file": 0} for i in want_infos]
