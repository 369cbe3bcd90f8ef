"""The core's strace/preload parser (src/parse/strace.rs) line by line
(_engine.parse_lines) on the fixture corpus, the benchmark generator's logs,
real strace logs of the test programs under many option sets, and generated
line soups: every line accounted for, what a generator wrote read back, and
the parser fed directly giving what the reader (trace_events) gives.
The committed expected outputs (tests/engine/expected/) pin every event of
the corpus; these pin the behaviour on inputs nobody committed."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realtrace  # noqa: E402
from test_fast_paths import LINES, SPECIAL, check_accounting  # noqa: E402
from test_properties import REAL, close_lines  # noqa: E402

from rocrtrace._engine import parse_lines  # noqa: E402
from coremodels import trace_events  # noqa: E402
from vocab import kind  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def read_lines(path) -> list[str]:
    """The file's lines as the reader gives them to a parser: decoded with
    surrogateescape, without their newline."""
    text = Path(path).read_bytes().decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def parse(lines, file="t.log", tid=None):
    evs, info = parse_lines("strace", file, lines, tid)
    check_accounting(lines, evs, info)
    return evs, info


def same_as_reader(path, evs):
    """The parser fed the file's lines gives the events the reader gives
    for the file (a plain log: no layout to undo, one file)."""
    got, infos = trace_events(path)
    assert len(infos) == 1
    if infos[0].layout or infos[0].preamble or infos[0].crlf:
        return 0
    # both number the events in the order given (seq)
    assert [e.seq for e in got] == list(range(len(got)))
    assert evs == got
    return len(got)


def corpus() -> list[str]:
    files = sorted(glob.glob(str(ROOT / "fixtures/strace/*.log")) + glob.glob(str(ROOT / "fixtures/scenarios/*/*.log")))
    assert len(files) > 40, files
    return files


@pytest.mark.parametrize("path", corpus(), ids=lambda p: os.path.relpath(p, ROOT))
def test_fixture_logs(path):
    # (pasted logs are quoted or indented: the reader undoes that, so raw
    # they are mostly unparsed lines, accounted for all the same)
    evs, info = parse(read_lines(path), file=path)
    same_as_reader(path, evs)


def test_generated_benchmark_traces(tmp_path):
    """The benchmark generator's strace and preload logs (SVM ioctls,
    unfinished/resumed pairs across threads, decoded structs, intent calls):
    every line parses, every unfinished call is resumed."""
    for gen in ("strace", "preload"):
        out = tmp_path / f"{gen}.log"
        subprocess.run([sys.executable, str(ROOT / "benchmarks/gen_traces.py"), gen, "20000", str(out)], check=True)
        evs, info = parse(read_lines(out), file=str(out))
        assert info["unparsed"] == 0 and info["unfinished"] == 0 and info["orphans"] == 0
        assert len(evs) > 10000
        assert sum(kind(e) == "Ioctl" for e in evs) > 1000
        assert same_as_reader(str(out), evs) == len(evs)


# --- explicit cases -------------------------------------------------------------


def test_call_with_its_frame():
    lines = ["42 1764435600.1 close(3) = 0", " > /lib/libc.so.6(close+0x14) [0x1234]"]
    (ev,), info = parse(lines)
    assert kind(ev) == "Close" and (ev.tid, ev.fd, ev.ret, ev.time) == (42, 3, 0, 1764435600.1)
    (f,) = ev.stack
    assert (f.module, f.symbol, f.sym_offset, f.addr) == ("/lib/libc.so.6", "close", 0x14, 0x1234)
    assert info["has_stacks"] and info["has_pids"] and info["has_time"]


def test_unfinished_resumed_by_another_thread():
    """strace resumes a call on the thread that started it: a resumed half
    of another tid is no half of this call."""
    (io1, io2), info = parse(
        [
            "42 1764435600.1 ioctl(3, 0x1 <unfinished ...>",
            "43 1764435600.2 <... ioctl resumed>, 0x2) = -1 ENOTTY (x) <0.1>",
        ]
    )
    assert {(e.tid, e.partial) for e in (io1, io2)} == {(42, True), (43, True)}
    assert info["orphans"] == 1 and info["unfinished"] == 1


def test_unfinished_without_pids_joins_the_next_line():
    """Without pids the line after an unfinished call is its rest: one
    complete call over two lines."""
    (ev,), info = parse(["close(3 <unfinished ...>", "NULL) = 0"])
    assert (kind(ev), ev.fd, ev.ret, ev.line, ev.end_line, ev.partial) == ("Close", 3, 0, 1, 2, False)
    assert info["unparsed"] == info["unfinished"] == info["orphans"] == 0


def test_raw_fd_minus_one_is_the_kernels_int():
    """-e raw prints fd -1 as 0xffffffff: the events hold the int the
    kernel saw."""
    (ev,), _ = parse(["close(0xffffffff) = -1 EBADF (Bad file descriptor)"])
    assert kind(ev) == "Close" and ev.fd == -1 and ev.err == "EBADF"


# --- real strace ------------------------------------------------------------

needs_strace = pytest.mark.skipif(not realtrace.have_strace(), reason="needs strace and cc")
OPTION_SETS = {
    "f-o": ["-f", "-o"],
    "f-stderr": ["-f"],
    "ff": ["-ff", "-o"],
    "tt-T-yy": ["-f", "-o", "-tt", "-T", "-yy"],
    "ttt": ["-f", "-o", "-ttt"],
    "k": ["-f", "-o", "-k"],
    "Y": ["-f", "-o", "-Y", "-y"],
    "X-raw": ["-f", "-o", "-X", "raw"],
    "X-verbose": ["-f", "-o", "-X", "verbose"],
    "r": ["-f", "-o", "-r"],
    "n-i": ["-f", "-o", "-n", "-i"],
    "unix-ns": ["-f", "-o", "--timestamps=unix,ns", "-T"],
    "raw-all": ["-f", "-o", "-e", "raw=all"],
    "stderr-k-yy": ["-f", "-k", "-yy", "-ttt"],
    "summary-C": ["-f", "-C", "-o"],
    "dumps": ["-f", "-o", "-e", "write=all", "-e", "read=all"],
    "z": ["-f", "-o", "-z", "-ttt"],
}
FDOPS_MODES = ["threads", "fork", "pass", "pidfd", "exec", "ioctls", "dup2", "close_range", "emfile"]
SHAPES_MODES = ["values", "zsplit", "thexec"]


def _check_run(paths) -> int:
    """A real run reads without an unparsed line; one file (not -ff) fed to
    the parser directly gives the reader's events."""
    if len(paths) > 1:
        evs, infos = trace_events(os.path.join(os.path.dirname(paths[0]), "trace.log.*"))
    else:
        evs, info = parse(read_lines(paths[0]), file=paths[0])
        same_as_reader(paths[0], evs)
        _, infos = trace_events(paths[0])
    for i in infos:
        assert i.unparsed == 0, i.unparsed_samples
    return len(evs)


@needs_strace
@pytest.mark.parametrize("opt", OPTION_SETS)
def test_real_strace_logs(opt, tmp_path):
    n = 0
    for prog, modes in (("fdops", FDOPS_MODES), ("shapes", SHAPES_MODES)):
        for mode in modes:
            d = tmp_path / f"{prog}-{mode}"
            d.mkdir()
            n += _check_run(realtrace.run_strace(OPTION_SETS[opt], prog, [mode], d))
    assert n > 100


# --- generated lines ----------------------------------------------------------

SETTINGS = settings(max_examples=400, deadline=None)
FRAMES = st.sampled_from(
    [
        " > /lib/libc.so.6(close+0x14) [0x1234]",
        " > /x(+0x1) [0x2] a.c:3",
        " > unexpected_backtracing_error [0x7f]",
        " > /y() [0x5]",
        " | 00000  61 62  ab |",
        "",
        "strace: Process 42 attached",
        "% time     seconds  usecs/call     calls    errors syscall",
        "100.00    0.000010           1        10           close",
        "------ ----------- ----------- --------- --------- --------",
        "+++ exited with 0 +++",
        "42 --- SIGSEGV {si_signo=SIGSEGV} ---",
        "# pid=42 ppid=1 exe=/bin/x page_size=4096 start=1764435600.0",
        "# fd-snapshot start",
        "# fd 3 /dev/kfd",
        "# map 1000-2000 r-xp 0 /lib/x.so build-id=abcd",
        "# exit status=0",
        "# lost 3",
        "#+ 42 1+ 42 1764435600.1 ioctl(3, ",
        "#+ 42 2 0x1, {}) = 0",
        "42 1764435600.1 +++ superseded by execve in pid 43 +++",
    ]
)


@SETTINGS
@given(st.lists(st.one_of(LINES, FRAMES), min_size=1, max_size=14))
@example(
    ["42 1764435600.1 ioctl(3, 0x1 <unfinished ...>", "43 1764435600.2 <... ioctl resumed>, 0x2) = -1 ENOTTY (x) <0.1>"]
)
@example(["close(3 <unfinished ...>", "NULL) = 0"])
# a thread clone pending with no tid: the new tid's process is None
@example(
    [
        "clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>",
        "4242 1764435600.000013 +++ exited with 0 +++",
    ]
)
def test_generated_line_soups(lines):
    parse(lines)


# Pieces of every line shape the grammar knows, glued at random.
PIECES = st.sampled_from(
    list("\",(){}[]<>/*\\-=. ax0:|#+?!'\t")
    + [
        "...",
        "->",
        "/*",
        "*/",
        "(deleted)",
        "<char 1:2>",
        "</dev/kfd>",
        '"a,b"',
        "é",
        "\udcff",
        " = ",
        " <unfinished ...>",
        "<... ioctl resumed>",
        "0x1f",
        "-1",
        "EBADF",
        "<0.5>",
        "{a=1}",
        "[1, 2]",
        " => ",
        "O_CLOEXEC",
        "flags=",
        "cmsg_data=[3]",
        "SCM_RIGHTS",
        "hsa_amd_memory_lock(",
        "ioctl(",
        "clone(",
        "42 ",
        "[pid 7] ",
        "1764435600.5 ",
        "+++ ",
        "--- ",
        "# ",
        "#+ 1 1 ",
        "strace: ",
        "Process 5 attached",
        " > ",
        "CLONE_THREAD",
    ]
)
GLUED = st.lists(PIECES, max_size=25).map("".join)


@SETTINGS
@given(st.lists(st.one_of(GLUED, LINES, FRAMES), min_size=1, max_size=10))
def test_generated_glued_pieces(lines):
    parse(lines)


@SETTINGS
@given(st.lists(close_lines(), min_size=1, max_size=6))
def test_generated_close_lines(cases):
    """Complete close lines of any prefix, time, path and result: one Close
    each, with the values they were written from."""
    evs, info = parse([line for line, _ in cases])
    assert info["unparsed"] == 0
    assert len(evs) == len(cases)
    pids = any(want["pid"] is not None for _, want in cases)
    for ev, (line, want) in zip(evs, cases):
        assert kind(ev) == "Close" and ev.fd == want["fd"] and ev.path == want["path"], line
        assert (ev.err == "EBADF") == want["err"]
        # a line without a pid in a log with pids is strace's first process's
        if want["pid"] is not None or not pids:
            assert ev.tid == want["pid"]
        if want["dur"] is not None:
            assert abs(ev.dur - want["dur"]) < 1e-9


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["", "42 ", "[pid 7] ", "7 12:00:00.5 "]),
            st.sampled_from(
                ["ioctl", "clone3", "recvmsg", "hsa_amd_memory_lock", "fcntl", "mmap", "openat2", "dup3", "socketpair"]
            ),
            SPECIAL,
            st.sampled_from([") = 0", ") = 3", ") = -1 EBADF (x)", ""]),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_generated_calls_of_every_handler(parts):
    parse([f"{a}{b}({c}{d}" for a, b, c, d in parts])


@SETTINGS
@given(
    st.sampled_from(REAL),
    st.lists(
        st.tuples(
            st.integers(0, 400),
            st.sampled_from(
                [
                    '"',
                    "<",
                    ">",
                    "(",
                    ")",
                    "{",
                    "}",
                    "[",
                    "]",
                    ",",
                    "\\",
                    "=",
                    " ",
                    "\x00",
                    "\udcff",
                    "/*",
                    "*/",
                    "...",
                    " <unfinished ...>",
                    "<... x resumed>",
                    "+++ ",
                    "\x1b[0m",
                    "é",
                    "'",
                    "'x'",
                    "<<",
                    " => ",
                    "0x",
                    "-1",
                    "/",
                    "#",
                    "# ",
                    "\t",
                ]
            ),
        ),
        max_size=6,
    ),
    st.integers(0, 400),
)
def test_mutated_real_lines(line, edits, cut):
    """test_properties' real lines with edits and cuts, between two good
    ones: the good ones always come through."""
    for pos, s in edits:
        pos = min(pos, len(line))
        line = line[:pos] + s + line[pos:]
    line = line[: max(cut, 1)] if cut < len(line) else line
    evs, info = parse(["18215 close(3) = 0", line, "18215 close(4) = 0"])
    closes = [e for e in evs if kind(e) == "Close" and e.line in (1, 3)]
    assert [(e.fd, e.line) for e in closes] == [(3, 1), (4, 3)]
    assert info["unparsed"] <= 1


# Process life cycles: clones, forks, exits, exec hand-overs, -ff file tids.
TIDS = st.sampled_from(
    [
        "",
        "",
        "42 ",
        "43 ",
        "44 ",
        "[pid 43] ",
        "42<a b> ",
        "44 12:00:00.5 ",
        "42 1764435600.25 ",
        "43 +0.1 ",
        "   0.000100 ",
    ]
)
BODIES = st.sampled_from(
    [
        "clone(child_stack=NULL, flags=CLONE_VM|CLONE_FILES|CLONE_THREAD|SIGCHLD) = 43",
        "clone(child_stack=NULL, flags=CLONE_VM|CLONE_THREAD <unfinished ...>",
        "clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0}, 88 <unfinished ...>",
        "<... clone resumed>) = 44",
        "<... clone3 resumed> => {parent_tid=[44]}, 88) = 44",
        "fork() = 45",
        "vfork( <unfinished ...>",
        "<... vfork resumed>) = 46",
        "getpid() = 42",
        "gettid() = 43",
        "set_tid_address(0x7f) = 42",
        "exit_group(0) = ?",
        "exit(1) = ?",
        "+++ exited with 0 +++",
        "+++ killed by SIGKILL +++",
        "+++ superseded by execve in pid 43 +++",
        'execve("/bin/x", ["x"], 0x7f /* 3 vars */ <unfinished ...>',
        "<... execve resumed>) = 0",
        'execve("/bin/y", [], 0x1) = -1 ENOENT (No such file)',
        "--- SIGCHLD {si_signo=SIGCHLD} ---",
        "--- stopped by SIGSTOP ---",
        "read(3, <unfinished ...>",
        '<... read resumed>"x", 1) = 1',
        "<... read resumed> <unfinished ...>) = ?",
        "close(3) = 0",
        "close(4</x>) = -1 EBADF (Bad file descriptor)",
        "dup2(3, 4) = 4",
        "ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=0x1000, size=0x1000, "
        "op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=1, attrs=[{type=KFD_IOCTL_SVM_ATTR_ACCESS, "
        "value=0x1}]}) = 0",
        "ioctl(3, _IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, 0x20), 0x7f) = 0",
        "hsa_amd_memory_lock(0x1000, 4096, [0x1], 1, [0x2000]) = 0",
        "recvmsg(3, {msg_control=[{cmsg_level=SOL_SOCKET, cmsg_type=SCM_RIGHTS, "
        "cmsg_data=[5, 6]}]}, MSG_CMSG_CLOEXEC) = 1",
        "mmap(NULL, 4096, PROT_READ, MAP_SHARED, 3</dev/kfd>, 0x1000) = 0x7f0000",
        "close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) = 0",
        "fcntl(3, F_SETFD, FD_CLOEXEC) = 0",
        "fcntl(3, F_DUPFD_CLOEXEC, 10) = 10",
        "pipe2([3, 4], O_CLOEXEC) = 0",
        "socketpair(AF_UNIX, SOCK_STREAM, 0, [5, 6]) = 0",
        "# pid=42 ppid=1 exe=/x page_size=4096",
        "# fd-snapshot exit",
        "# fd 3 /dev/kfd",
        "# exec /bin/z",
        "#+ 42 1+ 42 close(",
        "#+ 42 2 3) = 0",
        "#+ 42 3 x",
        "strace: Process 44 attached",
        "strace: Process 43 detached",
        " > /lib/x.so(f+0x1) [0x10]",
        "",
        "garbage",
        "NULL) = 0",
        "<detached ...>",
        'write(1, "x", 1 <detached ...>',
        'execve("/x", [], 0x1 <pid changed to 42 ...>',
    ]
)


@SETTINGS
@given(st.lists(st.tuples(TIDS, BODIES).map("".join), min_size=1, max_size=16), st.sampled_from([None, 42, 43]))
def test_generated_process_lives(lines, tid):
    """Clones, forks, exits and exec hand-overs in any order, with and
    without a -ff file's tid: every line accounted for."""
    parse(lines, tid=tid)
