"""The Rust strace/preload parser (src/parse/strace.rs, reached through
_engine.parse_lines) gives exactly the events and InputInfo of the Python
reference (rocrtrace.parse.strace.Parser) on the same lines: the fixture
corpus, real strace logs of the test programs under many option sets, and
generated line soups (issue 16)."""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realtrace  # noqa: E402
from test_fast_paths import LINES, SPECIAL  # noqa: E402
from test_properties import REAL, close_lines  # noqa: E402

from rocrtrace.events import InputInfo  # noqa: E402
from rocrtrace.inputs import open_trace  # noqa: E402
from rocrtrace.parse import strace  # noqa: E402

engine = pytest.importorskip("rocrtrace._engine")
pytestmark = pytest.mark.skipif(not hasattr(engine, "parse_lines"),
                                reason="extension built without parse_lines")

ROOT = Path(__file__).resolve().parent.parent


def read_lines(path) -> list[str]:
    """The file's lines as the reader gives them to a parser: decoded with
    surrogateescape, without their newline."""
    text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def python_parse(lines, file="t.log", tid=None, tgid_of=None, handover=None):
    p = strace.Parser(file, tid=tid, tgid_of=tgid_of, handover=handover)
    out = []
    for i, line in enumerate(lines, 1):
        out += p.feed(i, line)
    out += p.finish()
    return out, p.info


def info_dict(info: InputInfo) -> dict:
    d = {f.name: getattr(info, f.name) for f in dataclasses.fields(info)}
    # the Rust header holds text: '# lost N' is the number's decimal text
    d["header"] = {k: str(v) for k, v in d["header"].items()}
    d["unparsed_samples"] = [tuple(s) for s in d["unparsed_samples"]]
    for k in ("preamble", "layout", "crlf"):     # the reader's, not the parser's
        d.pop(k)
    return d


def _int_fd(v):
    return v - (1 << 32) if isinstance(v, int) and (1 << 31) <= v < (1 << 32) else v


def as_kernel_fds(ev):
    """The known differences of representation: -e raw prints fd -1 as
    0xffffffff, which Python keeps as 4294967295 and the Rust events hold as
    the kernel's int (-1); frame text is str in events.rs."""
    for f in ("fd", "src_fd", "new_fd"):
        if hasattr(ev, f):
            setattr(ev, f, _int_fd(getattr(ev, f)))
    if hasattr(ev, "fds") and isinstance(ev.fds, tuple):
        ev.fds = tuple(_int_fd(x) for x in ev.fds)
    # events.rs keeps frame text as str: bytes that are not UTF-8 are U+FFFD
    ev.stack = tuple(dataclasses.replace(f, **{k: _lossy(getattr(f, k)) for k in
                                               ("module", "symbol", "source")})
                     for f in ev.stack)
    return ev


def _lossy(s):
    if s is None:
        return s
    return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def compare(lines, file="t.log", tid=None, tgid_of=None, handover=None) -> int:
    """Both parsers on `lines`; asserts equality, returns the events compared."""
    want, winfo = python_parse(lines, file, tid, tgid_of, handover)
    want = [as_kernel_fds(ev) for ev in want]
    got, ginfo = engine.parse_lines("strace", file, lines, tid, tgid_of, handover)
    for i, (w, g) in enumerate(zip(want, got)):
        assert g == w, (i, w, g)
    assert len(got) == len(want)
    assert ginfo == info_dict(winfo)
    return len(want)


def corpus() -> list[str]:
    files = sorted(glob.glob(str(ROOT / "fixtures/strace/*.log"))
                   + glob.glob(str(ROOT / "fixtures/scenarios/*/*.log")))
    assert len(files) > 40, files
    return files


@pytest.mark.parametrize("path", corpus(), ids=lambda p: os.path.relpath(p, ROOT))
def test_fixture_logs(path):
    # (pasted logs are quoted or indented: the reader undoes that, so raw
    # they are mostly unparsed lines, compared all the same)
    compare(read_lines(path), file=os.path.basename(path))


def test_generated_benchmark_traces(tmp_path):
    """The benchmark generator's strace and preload logs (SVM ioctls,
    unfinished/resumed pairs across threads, decoded structs, intent calls)."""
    for kind in ("strace", "preload"):
        out = tmp_path / f"{kind}.log"
        subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), kind, "20000",
                        str(out)], check=True)
        assert compare(read_lines(out), file=out.name) > 10000


def test_the_comparison_sees_differences():
    """The harness fails on a difference (a wrong tid, a lost frame)."""
    lines = ["42 1764435600.1 close(3) = 0", " > /lib/libc.so.6(close+0x14) [0x1234]"]
    got, _ = engine.parse_lines("strace", "t.log", lines)
    want, _ = python_parse(lines)
    assert got == want and got[0].stack and got[0].tid == 42
    got[0].tid = 43
    assert got != want


# --- real strace ------------------------------------------------------------

needs_strace = pytest.mark.skipif(not realtrace.have_strace(), reason="needs strace and cc")
OPTION_SETS = {
    "f-o": ["-f", "-o"], "f-stderr": ["-f"], "ff": ["-ff", "-o"],
    "tt-T-yy": ["-f", "-o", "-tt", "-T", "-yy"], "ttt": ["-f", "-o", "-ttt"],
    "k": ["-f", "-o", "-k"], "Y": ["-f", "-o", "-Y", "-y"],
    "X-raw": ["-f", "-o", "-X", "raw"], "X-verbose": ["-f", "-o", "-X", "verbose"],
    "r": ["-f", "-o", "-r"], "n-i": ["-f", "-o", "-n", "-i"],
    "unix-ns": ["-f", "-o", "--timestamps=unix,ns", "-T"],
    "raw-all": ["-f", "-o", "-e", "raw=all"], "stderr-k-yy": ["-f", "-k", "-yy", "-ttt"],
    "summary-C": ["-f", "-C", "-o"],
    "dumps": ["-f", "-o", "-e", "write=all", "-e", "read=all"],
    "z": ["-f", "-o", "-z", "-ttt"],
}
FDOPS_MODES = ["threads", "fork", "pass", "pidfd", "exec", "ioctls", "dup2", "close_range",
               "emfile"]
SHAPES_MODES = ["values", "zsplit", "thexec"]


def _compare_run(paths) -> int:
    """Each file of a run; -ff files with their tid and the tgid_of and
    handover maps inputs.py's pre-pass gives their parsers."""
    tgid_of = handover = None
    if len(paths) > 1:
        tgid_of, handover, _ = open_trace(os.path.join(os.path.dirname(paths[0]),
                                                       "trace.log.*"))._ff_threads()
    n = 0
    for p in paths:
        m = re.search(r"\.(\d+)$", p)
        tid = int(m.group(1)) if m else None
        n += compare(read_lines(p), file=os.path.basename(p), tid=tid, tgid_of=tgid_of,
                     handover=handover)
    return n


@needs_strace
@pytest.mark.parametrize("opt", OPTION_SETS)
def test_real_strace_logs(opt, tmp_path):
    n = 0
    for prog, modes in (("fdops", FDOPS_MODES), ("shapes", SHAPES_MODES)):
        for mode in modes:
            d = tmp_path / f"{prog}-{mode}"
            d.mkdir()
            n += _compare_run(realtrace.run_strace(OPTION_SETS[opt], prog, [mode], d))
    assert n > 100


# --- generated lines ----------------------------------------------------------

SETTINGS = settings(max_examples=400, deadline=None)
FRAMES = st.sampled_from([" > /lib/libc.so.6(close+0x14) [0x1234]", " > /x(+0x1) [0x2] a.c:3",
                          " > unexpected_backtracing_error [0x7f]", " > /y() [0x5]",
                          " | 00000  61 62  ab |", "", "strace: Process 42 attached",
                          "% time     seconds  usecs/call     calls    errors syscall",
                          "100.00    0.000010           1        10           close",
                          "------ ----------- ----------- --------- --------- --------",
                          "+++ exited with 0 +++", "42 --- SIGSEGV {si_signo=SIGSEGV} ---",
                          "# pid=42 ppid=1 exe=/bin/x page_size=4096 start=1764435600.0",
                          "# fd-snapshot start", "# fd 3 /dev/kfd", "# map 1000-2000 r-xp 0 "
                          "/lib/x.so build-id=abcd", "# exit status=0", "# lost 3",
                          "#+ 42 1+ 42 1764435600.1 ioctl(3, ", "#+ 42 2 0x1, {}) = 0",
                          "42 1764435600.1 +++ superseded by execve in pid 43 +++"])


@SETTINGS
@given(st.lists(st.one_of(LINES, FRAMES), min_size=1, max_size=14))
@example(["42 1764435600.1 ioctl(3, 0x1 <unfinished ...>",
          "43 1764435600.2 <... ioctl resumed>, 0x2) = -1 ENOTTY (x) <0.1>"])
@example(["close(3 <unfinished ...>", "NULL) = 0"])
# a thread clone pending with no tid: the new tid's process is None
@example(["clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>",
          "4242 1764435600.000013 +++ exited with 0 +++"])
def test_generated_line_soups(lines):
    compare(lines)


# Pieces of every line shape the grammar knows, glued at random.
PIECES = st.sampled_from(
    list('",(){}[]<>/*\\-=. ax0:|#+?!\'\t') + [
        "...", "->", "/*", "*/", "(deleted)", "<char 1:2>", "</dev/kfd>", '"a,b"', "é", "\udcff",
        " = ", " <unfinished ...>", "<... ioctl resumed>", "0x1f", "-1", "EBADF", "<0.5>",
        "{a=1}", "[1, 2]", " => ", "O_CLOEXEC", "flags=", "cmsg_data=[3]", "SCM_RIGHTS",
        "hsa_amd_memory_lock(", "ioctl(", "clone(", "42 ", "[pid 7] ", "1764435600.5 ", "+++ ",
        "--- ", "# ", "#+ 1 1 ", "strace: ", "Process 5 attached", " > ", "CLONE_THREAD"])
GLUED = st.lists(PIECES, max_size=25).map("".join)


@SETTINGS
@given(st.lists(st.one_of(GLUED, LINES, FRAMES), min_size=1, max_size=10))
def test_generated_glued_pieces(lines):
    compare(lines)


@SETTINGS
@given(st.lists(close_lines(), min_size=1, max_size=6))
def test_generated_close_lines(cases):
    compare([c[0] if isinstance(c, tuple) else c for c in cases])


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["", "42 ", "[pid 7] ", "7 12:00:00.5 "]),
                          st.sampled_from(["ioctl", "clone3", "recvmsg", "hsa_amd_memory_lock",
                                           "fcntl", "mmap", "openat2", "dup3", "socketpair"]),
                          SPECIAL, st.sampled_from([") = 0", ") = 3", ") = -1 EBADF (x)", ""])),
                min_size=1, max_size=8))
def test_generated_calls_of_every_handler(parts):
    compare([f"{a}{b}({c}{d}" for a, b, c, d in parts])


@SETTINGS
@given(st.sampled_from(REAL), st.lists(st.tuples(st.integers(0, 400), st.sampled_from(
    ['"', "<", ">", "(", ")", "{", "}", "[", "]", ",", "\\", "=", " ", "\x00", "\udcff",
     "/*", "*/", "...", " <unfinished ...>", "<... x resumed>", "+++ ", "\x1b[0m", "é",
     "'", "'x'", "<<", " => ", "0x", "-1", "/", "#", "# ", "\t"])),
    max_size=6), st.integers(0, 400))
def test_mutated_real_lines(line, edits, cut):
    """test_properties' real lines with edits and cuts, between two good ones."""
    for pos, s in edits:
        pos = min(pos, len(line))
        line = line[:pos] + s + line[pos:]
    line = line[:max(cut, 1)] if cut < len(line) else line
    compare(["18215 close(3) = 0", line, "18215 close(4) = 0"])


# Process life cycles: clones, forks, exits, exec hand-overs, -ff file tids.
TIDS = st.sampled_from(["", "", "42 ", "43 ", "44 ", "[pid 43] ", "42<a b> ", "44 12:00:00.5 ", "42 1764435600.25 ", "43 +0.1 ", "   0.000100 "])
BODIES = st.sampled_from([
    "clone(child_stack=NULL, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|SIGCHLD) = 43",
    "clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>",
    "clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0}, 88 <unfinished ...>",
    "<... clone resumed>) = 44", "<... clone3 resumed> => {parent_tid=[44]}, 88) = 44",
    "fork() = 45", "vfork( <unfinished ...>", "<... vfork resumed>) = 46",
    "getpid() = 42", "gettid() = 43", "set_tid_address(0x7f) = 42",
    "exit_group(0) = ?", "exit(1) = ?", "+++ exited with 0 +++", "+++ killed by SIGKILL +++",
    "+++ superseded by execve in pid 43 +++", "execve(\"/bin/x\", [\"x\"], 0x7f /* 3 vars */ <unfinished ...>",
    "<... execve resumed>) = 0", "execve(\"/bin/y\", [], 0x1) = -1 ENOENT (No such file)",
    "--- SIGCHLD {si_signo=SIGCHLD} ---", "--- stopped by SIGSTOP ---",
    "read(3, <unfinished ...>", "<... read resumed>\"x\", 1) = 1", "<... read resumed> <unfinished ...>) = ?",
    "close(3) = 0", "close(4</x>) = -1 EBADF (Bad file descriptor)", "dup2(3, 4) = 4",
    "ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=1, attrs=[{type=KFD_IOCTL_SVM_ATTR_ACCESS, value=0x1}]}) = 0",
    "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x20), 0x7f) = 0",
    "hsa_amd_memory_lock(0x1000, 4096, [0x1], 1, [0x2000]) = 0",
    "recvmsg(3, {msg_control=[{cmsg_level=SOL_SOCKET, cmsg_type=SCM_RIGHTS, cmsg_data=[5, 6]}]}, MSG_CMSG_CLOEXEC) = 1",
    "mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</dev/kfd>, 0x1000) = 0x7f0000",
    "close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) = 0", "fcntl(3, F_SETFD, FD_CLOEXEC) = 0", "fcntl(3, F_DUPFD_CLOEXEC, 10) = 10",
    "pipe2([3, 4], O_CLOEXEC) = 0", "socketpair(AF_UNIX, SOCK_STREAM, 0, [5, 6]) = 0",
    "# pid=42 ppid=1 exe=/x page_size=4096", "# fd-snapshot exit", "# fd 3 /dev/kfd", "# exec /bin/z",
    "#+ 42 1+ 42 close(", "#+ 42 2 3) = 0", "#+ 42 3 x", "strace: Process 44 attached", "strace: Process 43 detached",
    " > /lib/x.so(f+0x1) [0x10]", "", "garbage", "NULL) = 0", "<detached ...>",
    "write(1, \"x\", 1 <detached ...>", "execve(\"/x\", [], 0x1 <pid changed to 42 ...>",
])

@SETTINGS
@given(st.lists(st.tuples(TIDS, BODIES).map("".join), min_size=1, max_size=16),
       st.sampled_from([None, 42, 43]))
def test_generated_process_lives(lines, tid):
    compare(lines, tid=tid)
