"""--jobs N on one file (the core's src/read/chunked.rs): the file's lines
are pre-parsed in chunks on N threads and the rest runs in order, so every
result is the one-thread result: the same events with every field, in the
same order, the same InputInfo, findings and event table -- on the fixture
corpus, generated benchmark traces, real strace logs and hand-made edge
cases, with cuts after every line (a chunk of one line), after every few
lines, and at the default size."""

from __future__ import annotations

import dataclasses
import glob
import gzip
import os
import random
import subprocess
import sys

import pytest

import realtrace
from rocrtrace import _engine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(
    glob.glob(os.path.join(ROOT, "fixtures", "strace", "**", "*.log"), recursive=True)
    + glob.glob(os.path.join(ROOT, "fixtures", "scenarios", "**", "*.log"), recursive=True)
)


# --- comparing a chunked run with the one-thread run -------------------------


def _plain(v):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return repr(v)
    if hasattr(v, "to_pylist"):
        return v.to_pylist()
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _finding(f) -> dict:
    return {**f.to_dict(), "key": repr(f.key), "details": repr(f.details), "cause": f.cause}


def _run(path, jobs=1, chunking=None, input_format=None, max_line=1 << 20):
    """(every event's repr, the report: inputs, findings with their
    evidence, limits, facts, programs, maps, the event table) and the
    chunk count of one analysis."""
    seen: list = []
    rep = _engine.analyze_events(
        path,
        lambda ev: seen.append(repr(ev)),
        input_format=input_format,
        max_line=max_line,
        all_fds=True,
        table=True,
        jobs=jobs,
        chunking=chunking,
    )
    chunks = rep.pop("chunks")
    out = {k: _plain(v) for k, v in rep.items() if k != "findings"}
    out["findings"] = [_finding(f) for f in rep["findings"]]
    out["inputs"] = [repr(i) for i in rep["inputs"]]
    return seen, out, chunks


_SEQ: dict = {}


def _sequential(path, input_format, max_line):
    key = (path, os.path.getmtime(path), input_format, max_line)
    if key not in _SEQ:
        _SEQ.clear()
        evs, rep, chunks = _run(path, input_format=input_format, max_line=max_line)
        assert chunks == 0, "--jobs 1 does not chunk"
        _SEQ[key] = evs, rep
    return _SEQ[key]


def _same(path, lines, jobs=2, input_format=None, max_line=1 << 20) -> int:
    """The chunked run (chunks of ``lines`` lines) equals the one-thread
    run; the number of chunks."""
    a_evs, a_rep = _sequential(path, input_format, max_line)
    b_evs, b_rep, chunks = _run(path, jobs, (lines, 0), input_format, max_line)
    assert chunks > 0, "the chunked path did not run"
    if a_evs != b_evs:
        i = next((i for i, (x, y) in enumerate(zip(a_evs, b_evs)) if x != y), min(len(a_evs), len(b_evs)))
        pytest.fail(
            f"{path} chunks of {lines}: event {i} differs\n"
            f"one thread: {a_evs[i] if i < len(a_evs) else None}\n"
            f"chunked:    {b_evs[i] if i < len(b_evs) else None}"
        )
    for k in a_rep:
        assert a_rep[k] == b_rep[k], (path, lines, k)
    return chunks


def _check_all(path, sizes=(1, 2, 3, 7, 50), ks=None, both=None, **kw) -> int:
    """Cuts after every line, then every few lines; 2 and 3 threads.
    (``ks``: the chunk sizes under their old name, other test files use it;
    ``both`` is the old seeds option, meaningless here.)"""
    sizes = ks if ks is not None else sizes
    n = 0
    for i, lines in enumerate(sizes):
        n += _same(path, lines, jobs=2 + i % 2, **kw)
    return n


# --- the fixture corpus --------------------------------------------------------


def test_corpus_is_there():
    assert len(CORPUS) >= 50


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.relpath(p, ROOT))
def test_corpus_file(path):
    lines = sum(1 for _ in open(path, "rb"))
    assert _check_all(path) >= lines


# --- generated benchmark traces ------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen")
    out = {}
    for kind in ("strace", "preload"):
        p = str(d / f"{kind}.log")
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "benchmarks", "gen_traces.py"), kind, "20000", p],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        out[kind] = p
    return out


@pytest.mark.parametrize("kind", ["strace", "preload"])
def test_generated_trace(generated, kind):
    """Every cut: WAIT_EVENTS split across chunks, preload '#' records."""
    assert _check_all(generated[kind], sizes=(1, 7, 4096)) > 20000


def test_default_chunks_and_threshold(generated):
    """Files under the threshold (2 MiB by default) are read on one thread;
    over it, in chunks (256 lines by default)."""
    path = generated["strace"]
    assert os.path.getsize(path) > 2 << 20
    lines = sum(1 for _ in open(path, "rb"))
    # the end of the file comes in the last chunk, or one of its own
    assert _engine.analyze([path], jobs=2)[0]["chunks"] == lines // 256 + 1
    assert _engine.analyze([path], jobs=2, chunking=(1000, 1 << 40))[0]["chunks"] == 0
    assert 20 <= _engine.analyze([path], jobs=2, chunking=(1000, 0))[0]["chunks"] <= 22
    assert _engine.analyze([path], jobs=1, chunking=(1000, 0))[0]["chunks"] == 0


def test_cli_jobs_on_one_file(tmp_path, generated):
    """The whole command: --jobs 2 cuts one file over 2 MiB with the default
    chunk size and prints exactly what --jobs 1 prints."""
    path = str(tmp_path / "big.log")
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "benchmarks", "gen_traces.py"), "strace", "30000", path],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    assert os.path.getsize(path) > 2 << 20
    assert _engine.analyze([path], jobs=2)[0]["chunks"] > 1

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "rocrtrace", *args], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode in (0, 1), r.stderr
        return r.stdout

    for cmd in (
        ["analyze", "--format", "json", "--no-progress"],
        ["events", "--format", "csv"],
        ["stats", "--format", "json"],
    ):
        one = cli(*cmd, path, "--jobs", "1")
        two = cli(*cmd, path, "-j", "2")
        assert one == two, cmd
        assert one.strip()


def test_a_pipe_is_chunked_too(generated):
    """stdin has no size: --jobs chunks it, with the same report."""
    path = generated["strace"]

    def cli(jobs):
        with open(path, "rb") as f:
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rocrtrace",
                    "analyze",
                    "--format",
                    "json",
                    "--no-progress",
                    "--jobs",
                    str(jobs),
                    "-",
                ],
                stdin=f,
                capture_output=True,
                cwd=ROOT,
            )
        assert r.returncode in (0, 1), r.stderr
        return r.stdout

    assert cli(1) == cli(2)


def test_several_traces_and_ff_merges(tmp_path, generated):
    """Several TRACE arguments run on threads of their own (not chunked);
    an -ff set is merged as with --jobs 1."""
    d = tmp_path / "ff"
    d.mkdir()
    lines = open(generated["strace"], "rb").read().split(b"\n")
    per: dict = {}
    for ln in lines:
        if ln[:1].isdigit():
            tid, _, rest = ln.partition(b" ")
            per.setdefault(tid, []).append(rest.lstrip())
    for tid, body in per.items():
        (d / f"t.{tid.decode()}").write_bytes(b"\n".join(body) + b"\n")
    args = [str(d / "t.*"), generated["preload"]]
    one = _engine.analyze(args, jobs=1)
    two = _engine.analyze(args, jobs=2, chunking=(1, 0))
    assert [r["chunks"] for r in two] == [0, 0]
    for a, b in zip(one, two):
        assert [_finding(f) for f in a["findings"]] == [_finding(f) for f in b["findings"]]
        assert repr(a["inputs"]) == repr(b["inputs"])


# --- real strace logs ----------------------------------------------------------

PY_THREADS = r"""
import os, threading, time, subprocess
def work(i):
    for j in range(8):
        fd = os.open("/dev/null", os.O_RDONLY)
        os.read(fd, 1)
        time.sleep(0.0003)
        os.close(fd)
ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts: t.start()
subprocess.run(["true"])
for t in ts: t.join()
"""

REAL_OPTS = {
    "f-ttt-T-yy-k": ["-f", "-ttt", "-T", "-yy", "-k", "-o"],
    "f-stderr": ["-f"],
    "no-f": ["-o"],
    "f-r": ["-f", "-r", "-o"],
    "f-tt-stderr-k": ["-f", "-tt", "-k", "-yy"],
}


@pytest.fixture(scope="module")
def real_logs(tmp_path_factory):
    if not realtrace.have_strace():
        pytest.skip("needs strace and cc")
    d = tmp_path_factory.mktemp("real")
    logs = {}
    for mode in ("threads", "fork", "exec"):
        for name, opts in REAL_OPTS.items():
            sub = d / f"{mode}-{name}"
            sub.mkdir()
            logs[f"{mode}-{name}"] = realtrace.run_strace(opts, "fdops", [mode], sub)[0]
    script = d / "threads.py"
    script.write_text(PY_THREADS)
    log = d / "py-threads.log"  # clones, futexes split across threads
    subprocess.run(
        ["strace", "-f", "-tt", "-T", "-yy", "-o", str(log), sys.executable, "-S", str(script)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=60,
    )
    logs["py-threads"] = str(log)
    return logs


def test_real_strace_logs(real_logs):
    resumed = 0
    for name, path in sorted(real_logs.items()):
        _check_all(path, sizes=(1, 3, 50) if name.startswith("py-") else (1, 2, 3, 7, 50))
        resumed += open(path, "rb").read().count(b" resumed>")
    assert resumed > 10  # split calls, cut between their halves


# --- hand-made edge cases ------------------------------------------------------

LATE_FRAMES = """\
1 1700000000.000001 read(3, "a", 1) = 1
 > /lib/x.so(f+0x1) [0x10]
2 1700000000.000002 write(1, "b", 1 <unfinished ...>
 > /lib/y.so(g+0x1) [0x20]
 > /lib/y.so(h+0x1) [0x30]
1 1700000000.000003 close(3) = 0
2 1700000000.000004 <... write resumed>) = 1
 > /lib/z.so(k+0x1) [0x40]
3 1700000000.000005 futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>
 | 00000  61 62 63                                          abc
 > /lib/w.so(m+0x1) [0x50]
1 1700000000.000006 exit_group(0) = ?
 > /lib/libc.so(exit+0x1) [0x60]
1 +++ exited with 0 +++
 > /lib/libc.so(_exit+0x1) [0x70]
2 +++ exited with 0 +++
 > /lib/v.so(n+0x1) [0x80]
3 <... futex resumed>) = ?
3 +++ exited with 0 +++
"""

PRELOAD = """\
# rocrtrace-log 1
# pid=500 ppid=1 exe=/bin/app page_size=4096 start=1700000000.000000
# fd-snapshot start
# fd 3 /dev/kfd
500 1700000000.000010 openat(AT_FDCWD, "/dev/null", O_RDONLY) = 4</dev/null>
#+ 500 1+ 500 1700000000.000011 ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, \
size=0x1000, 
500 1700000000.000012 close(9) = -1 EBADF (Bad file descriptor)
#+ 500 2 op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=0, attrs=[]}) = 0
# map 7f0000000000-7f0000100000 r-xp 00000000 /lib/a.so build-id=ab
# exec /bin/other
# pid=501 ppid=500 exe=/bin/other page_size=4096 start=-7.25e300
501 1700000000.000020 close(4</dev/null>) = 0
# fd-snapshot exit
# fd 3 /dev/kfd
# exit status=0
"""

MESSY = (
    b"\x1b[33mioctl\x1b[0m(3, AMDKFD_IOC_GET_VERSION, 0x7ffd) = -1 ENOTTY\r\n"
    b"\r\n"
    b'10 read(3, "\\xff", 1) = 1 <0.000001>\n'
    b'10 write(1, "\xff\xfe bytes", 8 <unfinished ...>\n'
    b"\n"
    b"11 close(5) = 0\n"
    + ('11 openat(AT_FDCWD, "/tmp/' + "\u20ac" * 90 + '", O_RDONLY) = 6\n').encode()
    + b"11 "
    + b"x" * 400
    + b"\n"
    b"10 <... write resumed>) = 8\n"
    b"# not a preload line\n"
    b"10 clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>\n"
    b'12 read(4, "", 1) = 0\n'
    b"10 <... clone resumed>) = 12\n"
    b"12 close(4strace: Process 13 attached\n"
    b") = 0\n"
    b"13 exit_group(1) = ?\n"
    b"13 +++ exited with 1 +++\n"
    b"10 futex(0x1, FUTEX_WAIT, 0, NULL"
)


@pytest.mark.parametrize("name", ["late_frames", "preload", "messy"])
def test_edge_cases(tmp_path, name):
    """-k frames that follow a line emitting nothing, a '#+' record cut by
    another line, preload '#' blocks, and a mess of ANSI colour, CRLF,
    invalid UTF-8, empty and over-long lines, a line cut by a diagnostic
    and no final newline: cut after every line."""
    data = {"late_frames": LATE_FRAMES.encode(), "preload": PRELOAD.encode(), "messy": MESSY}[name]
    path = tmp_path / f"{name}.log"
    path.write_bytes(data)
    for max_line in (300, 1 << 20):
        _check_all(str(path), max_line=max_line)


def _soup(rnd: random.Random, sources: list, n: int) -> bytes:
    extra = [
        b"",
        b" > /lib/libc.so.6(read+0x10) [0x1234]",
        b"# fd 5 /dev/kfd",
        b"# fd-snapshot exit",
        b"\x1b[33m\x1b[0m",
        b"garbage \xff line",
        b"x" * 300,
        b"strace: Process 77 attached",
        b"77 +++ exited with 0 +++",
        b"78 +++ superseded by execve in pid 77 +++",
        b"77 exit_group(0) = ?",
        b"1 set_tid_address(0x7f) = 77",
        b'77 <... read resumed>"x", 1) = 1',
        b"77 read(3, <unfinished ...>",
        b"78 clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>",
        b"78 <... clone resumed>) = 79",
        b'79 write(1, "a", 1) = 1',
        b"  0.000100 close(3) = 0",
    ]
    lines: list = []
    while len(lines) < n:
        if rnd.random() < 0.15:
            lines.append(rnd.choice(extra))
        else:
            src = rnd.choice(sources)
            i = rnd.randrange(len(src))
            lines.extend(src[i : i + rnd.randrange(1, 30)])
    data = b"\n".join(lines)
    if rnd.random() < 0.3:
        data = data.replace(b"\n", b"\r\n")
    return data + (b"\n" if rnd.random() < 0.5 else b"")


def test_random_line_soups(tmp_path):
    """Corpus lines in random order (seeded): orphans, restarts, clones and
    execs in flight, frames and '#' lines anywhere."""
    sources = []
    for p in CORPUS:
        with open(p, "rb") as f:
            sources.append(f.read().split(b"\n"))
    for seed in range(40):
        rnd = random.Random(seed)
        path = tmp_path / f"soup{seed}.log"
        path.write_bytes(_soup(rnd, sources, rnd.randrange(5, 300)))
        max_line = rnd.choice([200, 1 << 20])
        for lines in (1, rnd.randrange(2, 40)):
            _same(str(path), lines, jobs=rnd.choice([2, 3]), input_format="strace", max_line=max_line)


# --- what is read in chunks ----------------------------------------------------


def test_compressed_and_broken_inputs(tmp_path):
    """A compressed file is read in chunks as it decompresses; a stream that
    breaks mid-file gives the same one-line error as with one thread."""
    body = b"".join(b"1 1700000000.%06d close(%d) = 0\n" % (i, i % 50) for i in range(20000))
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(body))
    _same(str(gz), 100)
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(body)[:-40000])
    errs = []
    for jobs in (1, 2):
        with pytest.raises(_engine.ReadError) as e:
            _engine.analyze([str(cut)], jobs=jobs, chunking=(100, 0))
        errs.append(str(e.value))
    assert errs[0] == errs[1] and "cut.log.gz" in errs[0]


def test_tinygrad_logs_are_not_chunked(tmp_path):
    logs = sorted(glob.glob(os.path.join(ROOT, "fixtures", "tinygrad", "*.log")))
    assert logs
    one = _engine.analyze([logs[0]], jobs=1)[0]
    two = _engine.analyze([logs[0]], jobs=2, chunking=(1, 0))[0]
    assert two["chunks"] == 0
    assert [_finding(f) for f in one["findings"]] == [_finding(f) for f in two["findings"]]
