"""Real programs under the real strace, in every option set we can run:
zero unparsed lines and the exact normalized events of the key calls."""

from __future__ import annotations

import re

import pytest

from coremodels import trace_events

import realtrace
from vocab import kind

pytestmark = pytest.mark.skipif(not realtrace.have_strace(), reason="needs strace and cc")

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
}


def trace(opts, mode, tmp_path):
    paths = realtrace.run_strace(opts, "fdops", [mode], tmp_path)
    arg = paths[0] if len(paths) == 1 else str(tmp_path / "trace.log.*")
    evs, infos = trace_events(arg)
    for info in infos:
        assert info.unparsed == 0, info.unparsed_samples
    assert len({e.seq for e in evs}) == len(evs)
    return evs, infos


def own(evs):
    """Events after the program's own startup (its first open of /dev/null
    or /dev/zero, recognisable also in raw mode by being after the last
    libc mmap): everything after the last close of the loader's fds."""
    # the loader closes fd 3 twice (ld.so.cache, libc); the program starts after
    idx = 0
    closes = [i for i, e in enumerate(evs) if kind(e) == "Close" and e.fd == 3 and e.ok]
    if len(closes) >= 2:
        idx = closes[1] + 1
    return evs[idx:]


@pytest.mark.parametrize("opt", OPTION_SETS)
def test_double_close(opt, tmp_path):
    evs, _ = trace(OPTION_SETS[opt], "double_close", tmp_path)
    mine = own(evs)
    creates = [e for e in mine if kind(e) == "FdCreate" and e.name.startswith("open")]
    assert creates and creates[0].fds == (3,) and creates[0].cloexec
    closes = [e for e in mine if kind(e) == "Close"]
    assert [(c.fd, c.ret, c.err) for c in closes] == [(3, 0, None), (3, -1, "EBADF")]
    assert closes[0].tid == closes[1].tid == creates[0].tid
    assert closes[0].pid == closes[0].tid and closes[0].pid is not None


@pytest.mark.parametrize("opt", OPTION_SETS)
def test_close_range_and_dup(opt, tmp_path):
    evs, _ = trace(OPTION_SETS[opt], "close_range", tmp_path)
    ranges = [(e.first, e.last, e.flags, e.ret) for e in evs if kind(e) == "CloseRange"]
    assert ranges == [(50, 51, 0, 0), (3, 0xFFFFFFFF, 4, 0)]
    dups = [(e.src_fd, e.fds, e.replace) for e in own(evs) if kind(e) == "FdCreate" and e.origin == "dup"]
    assert dups == [(3, (50,), True), (3, (51,), True)]


@pytest.mark.parametrize("opt", OPTION_SETS)
def test_threads_grouped(opt, tmp_path):
    evs, _ = trace(OPTION_SETS[opt], "threads", tmp_path)
    clones = [e for e in evs if kind(e) == "Clone"]
    assert len(clones) == 1 and clones[0].thread and clones[0].share_files
    child = clones[0].child
    main = clones[0].pid
    close = [e for e in own(evs) if kind(e) == "Close" and e.tid == child]
    assert close and close[0].fd == 3 and close[0].ok and close[0].pid == main
    io = [e for e in evs if kind(e) == "Ioctl"]
    assert [(e.fd, e.type, e.nr, e.size, e.err, e.tid) for e in io] == [(3, 0x4B, 0x24, 16, "EBADF", main)]
    assert io[0].ioctl == "AMDKFD_IOC_EXPORT_DMABUF"


@pytest.mark.parametrize("opt", OPTION_SETS)
def test_fork_child_is_a_process(opt, tmp_path):
    evs, _ = trace(OPTION_SETS[opt], "fork", tmp_path)
    clones = [e for e in evs if kind(e) == "Clone"]
    assert len(clones) == 1 and not clones[0].thread and not clones[0].share_files
    child = clones[0].child
    assert child != clones[0].pid
    cc = [e for e in evs if kind(e) == "Close" and e.tid == child]
    assert cc and cc[0].pid == child and cc[0].fd == 3


@pytest.mark.parametrize("opt", OPTION_SETS)
def test_kfd_drm_requests(opt, tmp_path):
    evs, _ = trace(OPTION_SETS[opt], "ioctls", tmp_path)
    got = [(e.fd, e.type, e.nr, e.size, e.ioctl, e.err) for e in evs if kind(e) == "Ioctl" and e.type in (0x4B, 0x64)]
    assert got == [
        (3, 0x4B, 0x20, 40, "AMDKFD_IOC_SVM", "ENOTTY"),
        (3, 0x4B, 0x24, 16, "AMDKFD_IOC_EXPORT_DMABUF", "ENOTTY"),
        (3, 0x64, 0x2D, 12, "DRM_IOCTL_PRIME_HANDLE_TO_FD", "ENOTTY"),
        (3, 0x4B, 0x01, 8, "AMDKFD_IOC_GET_VERSION", "ENOTTY"),
    ]


def test_injected_success(tmp_path):
    evs, _ = trace(["-f", "-o", "-e", "inject=ioctl:retval=0"], "ioctls", tmp_path)
    io = [e for e in evs if kind(e) == "Ioctl" and e.type == 0x4B]
    assert io and all(e.ret == 0 and e.err is None for e in io)


def test_fd_passing_pidfd_memfd(tmp_path):
    evs, infos = trace(["-f", "-o", "-yy", "-ttt", "-T"], "pass", tmp_path)
    mine = own(evs)
    fdc = [(e.origin, e.fds, e.cloexec) for e in mine if kind(e) == "FdCreate"]
    assert fdc == [
        ("pipe", (3, 4), True),
        ("socketpair", (5, 6), False),
        ("open", (7,), False),
        ("recvmsg", (8,), True),
    ]
    send = [e for e in mine if e.name == "sendmsg"]
    assert send and 7 in send[0].fds
    assert infos[0].has_decorations and infos[0].has_durations and infos[0].has_pids
    evs, _ = trace(["-f", "-o", "-yy"], "pidfd", tmp_path)
    fdc = [(e.origin, e.fds, e.src_fd, e.cloexec, e.paths) for e in own(evs) if kind(e) == "FdCreate"]
    assert fdc[1:] == [
        ("pidfd_open", (4,), None, True, (fdc[1][4][0],)),
        ("pidfd_getfd", (5,), 3, True, ("/dev/null",)),
        ("memfd_create", (6,), None, True, ("/memfd:hsa-queue (deleted)",)),
    ]
    kinds = [kind(e) for e in own(evs) if e.name in ("mmap", "mremap", "munmap")]
    assert kinds[-3:] == ["Mmap", "Mremap", "Munmap"]


def test_dup_family(tmp_path):
    evs, _ = trace(["-f", "-o", "-y"], "dup2", tmp_path)
    got = [
        (e.name, e.src_fd, e.fds, e.cloexec, e.replace) for e in own(evs) if kind(e) == "FdCreate" and e.origin == "dup"
    ]
    assert got == [
        ("dup2", 3, (4,), False, True),
        ("dup3", 3, (50,), True, True),
        ("fcntl", 3, (60,), False, False),
        ("fcntl", 3, (70,), True, False),
        ("dup", 3, (5,), False, False),
    ]
    sc = [(e.fd, e.cloexec) for e in evs if kind(e) == "SetCloexec"]
    assert sc == [(3, True)]


def test_emfile_and_exec(tmp_path):
    evs, _ = trace(["-f", "-o"], "emfile", tmp_path)
    opens = [e for e in own(evs) if kind(e) == "FdCreate"]
    assert opens[-1].err == "EMFILE" and opens[-1].fds == ()
    assert [e.fds[0] for e in opens[:-1]] == [3, 4, 5, 6, 7]
    evs, _ = trace(["-f", "-o", "-k"], "exec", tmp_path)
    execs = [e for e in evs if e.name == "execve"]
    assert [e.path for e in execs][-1] == "/bin/true" and execs[-1].ok
    assert execs[-1].stack, "execve frames attached"
    exits = [e for e in evs if e.name == "exit_group"]
    assert exits and exits[-1].stack, "exit_group frames after +++ attached"


def test_stacks_attached_to_right_event(tmp_path):
    evs, infos = trace(["-f", "-o", "-k"], "double_close", tmp_path)
    assert infos[0].has_stacks
    closes = [e for e in own(evs) if kind(e) == "Close"]
    for c in closes:
        assert c.stack and "close" in (c.stack[0].symbol or "")


@pytest.mark.parametrize("opt", ["f-o", "ttt", "tt-T-yy"])
def test_octal_results(opt, tmp_path):
    """strace prints umask's result in octal (``= 077``): a number, not a
    crash of int(…, 0)."""
    import subprocess

    log = tmp_path / "trace.log"
    opts = list(OPTION_SETS[opt])
    opts.insert(opts.index("-o") + 1, str(log))
    subprocess.run(
        ["strace", *opts, "-e", "trace=umask", "--", "sh", "-c", "umask 022; umask 077; umask 022"],
        check=True,
        timeout=60,
    )
    evs, infos = trace_events(str(log))
    evs = [e for e in evs if e.name == "umask"]
    assert infos[0].unparsed == 0
    assert evs and all(e.ret == int(e.text.rsplit("= ", 1)[1].split()[0], 8) for e in evs)
    assert {0o22, 0o77} <= {e.ret for e in evs}


# --- rarer value and line shapes, from real strace 6.1 (issue 13) ----------------

SHAPE_OPTIONS = {
    "f-o": ["-f", "-o"],
    "X-verbose": ["-f", "-o", "-X", "verbose"],
    "stderr": ["-f"],
    "dumps": ["-f", "-o", "-e", "write=all", "-e", "read=all"],
    "yy-ttt-T-k": ["-f", "-o", "-yy", "-ttt", "-T", "-k"],
    "summary-C": ["-f", "-C", "-o"],
    "summary-C-stderr": ["-f", "-C"],
}


def shape_trace(opts, mode, tmp_path):
    paths = realtrace.run_strace(opts, "shapes", [mode], tmp_path)
    arg = paths[0] if len(paths) == 1 else str(tmp_path / "trace.log.*")
    evs, infos = trace_events(arg)
    for info in infos:
        assert info.unparsed == 0, info.unparsed_samples
    return evs, infos


@pytest.mark.parametrize("opt", SHAPE_OPTIONS)
def test_value_shapes(opt, tmp_path):
    """Shifts in flags (FUTEX_OP_SET<<28|…, 1<<CAP_CHOWN|…), comments nested
    in comments (-X verbose ioprio_set), char literals holding ' " \\ < > (
    in v4l2_fourcc(…)), the ' * N bytes in buffer M' / ' = N buffers in
    vector M' dump headers, a -C summary after the trace: every line parses
    and the calls around them keep their arguments."""
    evs, _ = shape_trace(SHAPE_OPTIONS[opt], "values", tmp_path)
    by = {}
    for e in evs:
        by.setdefault(e.name, []).append(e)
    assert [e.ret for e in by["futex"] if e.tid == e.pid][-1] == 0
    assert by["capget"][-1].ret == 0
    assert by["ioprio_set"][-1].err == "EINVAL"
    v4l2 = [e for e in by["ioctl"] if kind(e) == "Ioctl" and e.fd == 3]
    assert len(v4l2) == 2 and all(e.err == "ENOTTY" for e in v4l2)
    if opt == "X-verbose":  # the request as a number: (type, nr) from it
        assert [(e.type, e.nr) for e in v4l2] == [(0x56, 0x05), (0x56, 0x40)]
    else:
        assert [e.ioctl for e in v4l2] == ["VIDIOC_S_FMT", "VIDIOC_TRY_FMT"]
    assert by["writev"][-1].ret == 5 and by["sendmmsg"][-1].ret == 2
    closes = [(e.fd, e.ret, e.err) for e in own(evs) if kind(e) == "Close"]
    assert closes[-2:] == [(3, 0, None), (3, -1, "EBADF")]


def test_futex_op_value_is_the_shift_form(tmp_path):
    """strace prints FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1) as shifts
    of names; the line parses (the value itself: src/parse/values.rs's
    futex_op_shifts)."""
    evs, _ = shape_trace(["-f", "-o"], "values", tmp_path)
    fut = [e for e in evs if e.name == "futex"][-1]
    op = fut.text.rsplit(", ", 1)[1].split(")")[0]
    assert op == "FUTEX_OP_SET<<28|0<<12|FUTEX_OP_CMP_GT<<24|0x1"
    assert fut.ret == 0


def test_strace_under_a_relative_name(tmp_path):
    """A stderr capture of ../../src/strace: its 'Process N attached' lines
    are strace's, and the new thread is known from them."""
    import os
    import shutil
    import subprocess

    src = tmp_path / "src"
    work = tmp_path / "a" / "b"
    src.mkdir()
    work.mkdir(parents=True)
    os.symlink(shutil.which("strace"), src / "strace")
    exe = realtrace.compile_program("shapes")
    log = tmp_path / "trace.log"
    with open(log, "wb") as err:
        subprocess.run(
            ["../../src/strace", "-f", exe, "zsplit"], cwd=work, stderr=err, stdout=subprocess.DEVNULL, timeout=60
        )
    text = log.read_text(errors="replace")
    assert "../../src/strace: Process " in text
    evs, infos = trace_events(str(log))
    assert infos[0].unparsed == 0, infos[0].unparsed_samples
    clones = [e for e in evs if kind(e) == "Clone"]
    thread = clones[-1].child
    fut = [e for e in evs if e.name == "futex" and e.tid == thread and e.err == "ETIMEDOUT"]
    assert fut and fut[0].pid == clones[-1].pid


def test_ff_exec_from_thread_is_linked(tmp_path):
    """-ff: the thread's file ends 'execve(…) <pid changed to LEADER ...>',
    the leader's has '+++ superseded …' and '<... execve resumed>) = 0': the
    merge makes one complete execve, on the leader."""
    paths = realtrace.run_strace(["-ff", "-o"], "shapes", ["thexec"], tmp_path)
    # the leader is the pid strace names, not the lowest tid (pids wrap)
    (leader,) = {int(m[1]) for p in paths for m in re.finditer(r"<pid changed to (\d+) ", open(p).read())}
    evs, infos = trace_events(str(tmp_path / "trace.log.*"))
    ex = [e for e in evs if e.name == "execve" and e.path == "/bin/true"]
    assert len(ex) == 1 and ex[0].ok and not ex[0].partial and ex[0].end_line
    assert ex[0].tid == leader and leader in {int(p.rsplit(".", 1)[1]) for p in paths}
    assert sum(i.unfinished + i.unparsed + i.orphans for i in infos) == 0


def _variants(tmp_path, data: bytes) -> dict:
    out = {}
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    forms = {
        "crlf": b"".join(ln + b"\r\n" for ln in lines),
        "indent4": b"".join(b"    " + ln + b"\n" for ln in lines),
        "quoted": b"".join(b"> " + ln + b"\n" for ln in lines),
        "preamble": b"# header from the bug report\n#\nuser@host:~$ strace -f -o t.log ./x\n\n" + data,
    }
    for k, v in forms.items():
        p = tmp_path / f"{k}.log"
        p.write_bytes(v)
        out[k] = str(p)
    return out


@pytest.mark.parametrize("opt", ["tt-T-yy", "k", "f-stderr", "r"])
def test_pasted_forms_of_real_logs(opt, tmp_path):
    """A real log pasted with CRLF, indentation, quoting or a preamble gives
    the same events (durations included) as the log itself."""
    paths = realtrace.run_strace(OPTION_SETS[opt], "fdops", ["threads"], tmp_path)
    data = open(paths[0], "rb").read()

    def key(path):
        evs, infos = trace_events(path)
        evs = [(kind(e), e.name, e.tid, e.pid, e.ret, e.err, e.dur, e.time, len(e.stack)) for e in evs]
        assert infos[0].unparsed == 0, (path, infos[0].unparsed_samples)
        return evs, infos[0]

    want, _ = key(paths[0])
    for form, path in _variants(tmp_path, data).items():
        got, info = key(path)
        assert got == want, form
        assert (info.preamble == 4) == (form == "preamble")
