"""Chunked parallel parsing (--jobs N on one file) gives exactly the
sequential parse: the same events with the same fields in the same order,
the same InputInfo, and the same findings -- for every trace of the fixture
corpus, generated benchmark traces, real strace logs and hand-made edge
cases, with chunk boundaries forced after (almost) every line."""
from __future__ import annotations

import glob
import os
import random
import subprocess
import sys

import pytest

import realtrace
from rocrtrace import inputs
from rocrtrace.inputs import open_trace
from rocrtrace.parse import chunks
from rocrtrace.replay import analyze
from rocrtrace.report import render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "strace", "**", "*.log"), recursive=True)
                + glob.glob(os.path.join(ROOT, "fixtures", "scenarios", "**", "*.log"),
                            recursive=True))


# --- comparing a chunked run with the sequential one -------------------------

def _run(path, jobs=1, max_line=1 << 20, input_format=None, **opts):
    """(event reprs, InputInfo, JSON report, chunk stats) of one analysis,
    the events taken as the models saw them (streamed)."""
    tr = open_trace(path, input_format=input_format, max_line=max_line, jobs=jobs)
    stats: dict = {}
    if jobs > 1:
        tr.chunk_opts = dict(min_bytes=0, stats=stats, **opts)
    seen: list = []
    res = analyze([tr], on_event=seen.append)
    evs = [repr(ev) for ev in seen]
    return evs, tr.infos[0], render(res, "json"), stats


_SEQ: dict = {}


def _sequential(path, max_line, input_format):
    key = (path, os.path.getmtime(path), max_line, input_format, inputs.CHUNK)
    if key not in _SEQ:
        _SEQ.clear()
        _SEQ[key] = _run(path, max_line=max_line, input_format=input_format)[:3]
    return _SEQ[key]


def _same(path, *, max_line=1 << 20, input_format=None, **opts):
    a_evs, a_info, a_rep = _sequential(path, max_line, input_format)
    b_evs, b_info, b_rep, stats = _run(path, jobs=2, max_line=max_line,
                                       input_format=input_format, **opts)
    assert stats.get("chunks"), "the chunked path did not run"
    assert not [r for r in stats["fallbacks"] if "error" in r], stats["fallbacks"]
    if a_evs != b_evs:
        i = next((i for i, (x, y) in enumerate(zip(a_evs, b_evs)) if x != y),
                 min(len(a_evs), len(b_evs)))
        pytest.fail(f"{path} {opts}: event {i} differs\n"
                    f"sequential: {a_evs[i] if i < len(a_evs) else None}\n"
                    f"chunked:    {b_evs[i] if i < len(b_evs) else None}")
    assert a_info == b_info, (path, opts)
    assert a_rep == b_rep, (path, opts)
    return stats


def _mean_line(path) -> int:
    with open(path, "rb") as f:
        data = f.read()
    return max(1, len(data) // max(1, data.count(b"\n")))


def _configs(path, ks=(1, 2, 3, 7, 50), both=True):
    """Chunk sizes of about k lines each (k=1: a boundary at every line that
    can be one), with exact seeds (ahead=1) and stale ones (ahead=3)."""
    mean = _mean_line(path)
    out = []
    for i, k in enumerate(ks):
        size = 1 if k == 1 else k * mean
        out.append(dict(chunk_bytes=size, first_bytes=size if i % 2 else 1,
                        ahead=3 - 2 * (i % 2)))
        if both:
            out.append(dict(chunk_bytes=size, first_bytes=3 * mean, ahead=1 + 2 * (i % 2)))
    return out


def _check_all(path, ks=(1, 2, 3, 7, 50), both=True, **kw):
    total: dict = {"stitched": 0, "resumed": 0, "late_frames": 0, "chunks": 0}
    for cfg in _configs(path, ks, both):
        st = _same(path, executor=chunks.InlineExecutor(), adaptive=False, **cfg, **kw)
        for k in total:
            total[k] += st[k]
    return total


def test_the_parser_state_is_known():
    assert chunks.unsupported() is None, chunks.unsupported()


# --- the fixture corpus --------------------------------------------------------

def test_corpus_is_there():
    assert len(CORPUS) >= 50


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: os.path.relpath(p, ROOT))
def test_corpus_file(path):
    total = _check_all(path)
    assert total["chunks"] > 0


# --- generated benchmark traces ------------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    d = tmp_path_factory.mktemp("gen")
    out = {}
    for kind in ("strace", "preload"):
        p = str(d / f"{kind}.log")
        subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gen_traces.py"),
                        kind, "20000", p], check=True)
        out[kind] = p
    return out


@pytest.mark.parametrize("kind", ["strace", "preload"])
def test_generated_trace(generated, kind):
    total = _check_all(generated[kind], ks=(1, 7, 50), both=False)
    assert total["stitched"] > 1000
    if kind == "strace":
        assert total["resumed"] > 100     # WAIT_EVENTS split across chunk boundaries


@pytest.mark.parametrize("kind", ["strace", "preload"])
def test_generated_trace_real_processes(generated, kind):
    st = _same(generated[kind], chunk_bytes=64 << 10, first_bytes=16 << 10)
    assert st["stitched"] >= st["chunks"] - 3, st


def test_cli_jobs_on_one_file(generated):
    """The whole command: --jobs 2 cuts one 2.2 MB file with the default
    chunk size and prints exactly what --jobs 1 prints."""
    path = generated["strace"]
    assert chunks.applicable(path, "strace")

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "rocrtrace", *args], capture_output=True,
                           text=True, cwd=ROOT)
        assert r.returncode in (0, 1), r.stderr
        return r.stdout

    for cmd in (["analyze", "--format", "json"], ["events", "--format", "jsonl"],
                ["stats", "--format", "json"]):
        one = cli(*cmd, path, "--jobs", "1")
        two = cli(*cmd, path, "-j", "2")
        assert one == two, cmd
        assert one.strip()


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
    log = d / "py-threads.log"          # clones, futexes split across threads
    subprocess.run(["strace", "-f", "-tt", "-T", "-yy", "-o", str(log), sys.executable, "-S",
                    str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=60)
    logs["py-threads"] = str(log)
    return logs


def test_real_strace_logs(real_logs):
    total = {"stitched": 0, "resumed": 0}
    for name, path in sorted(real_logs.items()):
        if name.startswith("py-"):
            t = _check_all(path, ks=(1, 7, 50), both=False)
        else:
            t = _check_all(path)
        for k in total:
            total[k] += t[k]
    assert total["stitched"] > 100
    assert total["resumed"] > 10


def test_real_strace_log_real_processes(real_logs):
    _same(real_logs["py-threads"], chunk_bytes=16 << 10, first_bytes=4 << 10)


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
# map 7f0000000000-7f0000100000 r-xp 00000000 /lib/a.so build-id=ab
# exec /bin/other
# pid=501 ppid=500 exe=/bin/other page_size=4096 start=-7.25e300
501 1700000000.000020 close(4</dev/null>) = 0
# fd-snapshot exit
# fd 3 /dev/kfd
# exit status=0
"""

MESSY = (b"\x1b[33mioctl\x1b[0m(3, AMDKFD_IOC_GET_VERSION, 0x7ffd) = -1 ENOTTY\r\n"
         b"\r\n"
         b"10 read(3, \"\\xff\", 1) = 1 <0.000001>\n"
         b"10 write(1, \"\xff\xfe bytes\", 8 <unfinished ...>\n"
         b"\n"
         b"11 close(5) = 0\n"
         + ("11 openat(AT_FDCWD, \"/tmp/" + "\u20ac" * 90 + "\", O_RDONLY) = 6\n").encode()
         + b"11 " + b"x" * 400 + b"\n"
         b"10 <... write resumed>) = 8\n"
         b"# not a preload line\n"
         b"10 clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>\n"
         b"12 read(4, \"\", 1) = 0\n"
         b"10 <... clone resumed>) = 12\n"
         b"12 close(4strace: Process 13 attached\n"
         b") = 0\n"
         b"13 exit_group(1) = ?\n"
         b"13 +++ exited with 1 +++\n"
         b"10 futex(0x1, FUTEX_WAIT, 0, NULL")


@pytest.mark.parametrize("name", ["late_frames", "preload", "messy"])
@pytest.mark.parametrize("block", [64, 256, 1 << 20])
def test_edge_cases(tmp_path, monkeypatch, name, block):
    """-k frames that follow a line emitting nothing (they go to an event
    already handed out), preload '#' blocks, and a mess of ANSI colour, CRLF,
    invalid UTF-8, empty and over-long lines (judged in the sequential
    reader's 1 MiB blocks: here made tiny), a cut line and no final newline."""
    monkeypatch.setattr(inputs, "CHUNK", block)
    data = {"late_frames": LATE_FRAMES.encode(), "preload": PRELOAD.encode(),
            "messy": MESSY}[name]
    path = tmp_path / f"{name}.log"
    path.write_bytes(data)
    total = _check_all(str(path), max_line=300)
    if name == "late_frames":
        assert total["late_frames"] > 0


def _soup(rnd: random.Random, sources: list, n: int) -> bytes:
    extra = [b"", b" > /lib/libc.so.6(read+0x10) [0x1234]", b"# fd 5 /dev/kfd",
             b"# fd-snapshot exit", b"\x1b[33m\x1b[0m", b"garbage \xff line", b"x" * 300,
             b"strace: Process 77 attached", b"77 +++ exited with 0 +++",
             b"78 +++ superseded by execve in pid 77 +++", b"77 exit_group(0) = ?",
             b"1 set_tid_address(0x7f) = 77", b"77 <... read resumed>\"x\", 1) = 1",
             b"77 read(3, <unfinished ...>", b"78 clone(child_stack=NULL, "
             b"flags=CLONE_VM|CLONE_THREAD <unfinished ...>", b"78 <... clone resumed>) = 79",
             b"79 write(1, \"a\", 1) = 1", b"  0.000100 close(3) = 0"]
    lines: list = []
    while len(lines) < n:
        if rnd.random() < 0.15:
            lines.append(rnd.choice(extra))
        else:
            src = rnd.choice(sources)
            i = rnd.randrange(len(src))
            lines.extend(src[i:i + rnd.randrange(1, 30)])
    data = b"\n".join(lines)
    if rnd.random() < 0.3:
        data = data.replace(b"\n", b"\r\n")
    return data + (b"\n" if rnd.random() < 0.5 else b"")


def test_random_line_soups(tmp_path, monkeypatch):
    """Corpus lines in random order: orphans, restarts, clones and execs in
    flight, frames and '#' lines anywhere."""
    sources = []
    for p in CORPUS:
        with open(p, "rb") as f:
            sources.append(f.read().split(b"\n"))
    for seed in range(40):
        rnd = random.Random(seed)
        monkeypatch.setattr(inputs, "CHUNK", rnd.choice([64, 1 << 20]))
        path = tmp_path / f"soup{seed}.log"
        path.write_bytes(_soup(rnd, sources, rnd.randrange(5, 300)))
        for cb in (1, 120):
            _same(str(path), max_line=rnd.choice([200, 1 << 20]), input_format="strace",
                  executor=chunks.InlineExecutor(), adaptive=False, chunk_bytes=cb,
                  first_bytes=rnd.choice([1, cb]), ahead=rnd.choice([1, 3]))


# --- when it falls back, and when it does not apply ----------------------------

def test_relative_timestamps_turn_workers_off(tmp_path):
    lines = []
    for i in range(400):
        lines.append(f"{100 + i % 3}      0.000{i % 10}00 close({i}) = -1 EBADF")
    path = tmp_path / "r.log"
    path.write_text("\n".join(lines) + "\n")
    st = _same(str(path), executor=chunks.InlineExecutor(), chunk_bytes=200, first_bytes=200)
    assert st["fallbacks"]["turned off: relative timestamps"] == 1
    assert st["stitched"] == 0


def test_workers_pause_when_seeds_are_always_stale(tmp_path):
    """A new thread in every line: a seed sent three chunks ahead never
    matches, so the main process parses, the workers pause and retry."""
    lines = [f"{1000 + i} 1700000000.{i:06d} close(3) = 0" for i in range(3000)]
    path = tmp_path / "churn.log"
    path.write_text("\n".join(lines) + "\n")
    st = _same(str(path), executor=chunks.InlineExecutor(), chunk_bytes=300, first_bytes=300)
    assert st["fallbacks"]["paused: too many re-parses"] >= 2
    assert st["fallbacks"]["stale seed"] > 0


def test_not_applicable(tmp_path):
    import gzip

    big = tmp_path / "big.log"
    big.write_bytes(b"1 close(3) = 0\n" * 200000)
    assert chunks.applicable(str(big), "strace")
    assert not chunks.applicable(str(big), "strace", min_bytes=1 << 40)
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(big.read_bytes()))
    assert not chunks.applicable(str(gz), "strace", min_bytes=0)
    assert not chunks.applicable("-", "strace", min_bytes=0)
    tr = open_trace(str(gz), jobs=2)
    assert len(list(tr.events())) == 200000


def test_plan_cuts_only_at_solid_lines(tmp_path):
    data = (b"1 read(3, <unfinished ...>\n > /lib/a.so(f+0x1) [0x1]\n\n# x\n"
            b"\x1b[0m\n 2 close(4) = 0\n") * 50
    path = tmp_path / "p.log"
    path.write_bytes(data)
    cuts = list(chunks.plan(str(path), chunk_bytes=1, first_bytes=1))
    assert cuts[0][0] == 0 and cuts[-1][1] is None
    for (s, e, n), (s2, _, n2) in zip(cuts, cuts[1:]):
        assert e == s2 and n2 == n + data[s:e].count(b"\n")
        assert data[e - 1:e] == b"\n"
        line = data[e:data.index(b"\n", e)]
        assert line and not line.startswith((b" > ", b" | ", b"#")) and b"\x1b" not in line


class _FlakyExecutor(chunks.InlineExecutor):
    """Every third job fails, as a crashed or killed worker would."""

    def __init__(self):
        self.n = 0

    def submit(self, fn, *args):
        self.n += 1
        if self.n % 3 == 0:
            def boom(*_a):
                raise RuntimeError("worker died")
            return super().submit(boom, *args)
        return super().submit(fn, *args)


def test_worker_failures_fall_back_exactly(generated):
    path = generated["strace"]
    a_evs, a_info, a_rep = _sequential(path, 1 << 20, None)
    b_evs, b_info, b_rep, stats = _run(path, jobs=2, executor=_FlakyExecutor(), adaptive=False,
                                       chunk_bytes=32 << 10, first_bytes=8 << 10)
    assert stats["fallbacks"]["worker error: RuntimeError"] > 5
    assert stats["stitched"] > 5
    assert (a_evs, a_info, a_rep) == (b_evs, b_info, b_rep)
