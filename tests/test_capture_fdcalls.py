"""Calls the capture library logs the way strace prints them:
every libc name of the calls logged when they fail with EBADF, and every
call that makes an fd without open().  Each program runs three times: plain,
under the real capture library, and (where strace is installed) under a real
strace; the library's lines must be strace's lines."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fakedev import cbuild, logread
from rocrtrace.capture import run
from coremodels import trace_events

PROGRAMS = Path(__file__).parent / "programs"
needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


def build(name: str) -> Path:
    return cbuild.build(PROGRAMS / f"{name}.c", name)


def captured(tmp_path, argv):
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    env = run.preload_env(str(tmp_path / "p"))
    cap = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    (f,) = tmp_path.glob("p.*")
    return plain, cap, f


def straced(tmp_path, argv):
    out = tmp_path / "strace.txt"
    subprocess.run(["strace", "-y", "-o", str(out)] + argv, capture_output=True, text=True, timeout=60, check=True)
    return out.read_text().splitlines()


def norm(line: str) -> str:
    """A call line without prefix, alignment, duration, addresses, inodes."""
    line = re.sub(r"^\d+ +\d+\.\d+ ", "", line)
    line = re.sub(r" <\d+\.\d+>$", "", line)
    line = re.sub(r"\) +=", ") =", line)
    line = re.sub(r"0x[0-9a-f]{6,}", "PTR", line)
    line = re.sub(r"(socket|pipe):\[\d+\]", r"\1:[N]", line)
    return re.sub(r"fdmake-\d+", "fdmake-N", line)


BADFD_NAMES = [
    "read",
    "read",
    "read",
    "write",
    "write",
    "pread64",
    "pread64",
    "pread64",
    "pread64",
    "pread64",
    "pwrite64",
    "pwrite64",
    "pwrite64",
    "readv",
    "writev",
    "lseek",
    "lseek",
    "lseek",
    "newfstatat",
    "newfstatat",
    "fstat",
    "fstat",
    "newfstatat",
    "newfstatat",
    "newfstatat",
    "newfstatat",
    "statx",
    "sendmsg",
    "recvmsg",
    "ioctl",
]


def test_every_libc_name_of_the_ebadf_calls_is_logged(tmp_path):
    """read/__read/__read_chk, pread/pread64/__pread64/__pread_chk/
    __pread64_chk, __write, __pwrite64, lseek64/__lseek, fstat64/__fxstat/
    __fxstat64, fstatat/fstatat64/__fxstatat, statx: on fd -1 and on a
    closed fd, each logged once, results and errno unchanged."""
    plain, cap, f = captured(tmp_path, [str(build("capture_badfd")), "aliases"])
    assert plain.returncode == cap.returncode == 0, cap.stderr
    assert cap.stdout == plain.stdout
    assert all(ln.endswith(" -1 9") for ln in cap.stdout.splitlines())
    log = logread.read(f)
    assert not log.bad
    bad = [e for e in log.events if e.errno == "EBADF"]
    # fd -1: glibc answers fstat/fstat64 of a negative fd without a system call
    minus = [n for n in BADFD_NAMES]
    minus.remove("newfstatat")
    minus.remove("newfstatat")
    assert [e.name for e in bad] == minus + BADFD_NAMES
    assert [e.args.split(",")[0] for e in bad[: len(minus)]] == ["-1"] * len(minus)
    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0
    assert len([e for e in evs if e.err == "EBADF"]) == len(bad)


@needs_strace
def test_ebadf_lines_are_stracess_lines(tmp_path):
    argv = [str(build("capture_badfd")), "aliases"]
    _, _, f = captured(tmp_path, argv)
    ours = [norm(ln) for ln in logread.read(f).lines if "EBADF" in ln and not ln.startswith("#")]
    theirs = [norm(ln) for ln in straced(tmp_path, argv) if "EBADF" in ln]
    assert ours == theirs


MADE = [
    "pipe",
    "pipe",
    "pipe2",
    "pipe2",
    "socket",
    "socketpair",
    "socketpair",
    "accept",
    "accept4",
    "eventfd",
    "memfd_create",
    "timerfd_create",
    "signalfd",
    "epoll_create",
    "epoll_create1",
    "inotify_init",
    "inotify_init1",
    "F_DUPFD_CLOEXEC",
]


def test_fds_made_without_open_are_fd_creations(tmp_path):
    """pipe, pipe2, socket, socketpair, accept, accept4, eventfd,
    memfd_create, timerfd_create, signalfd, epoll_create(1),
    inotify_init(1), fcntl(F_DUPFD_CLOEXEC): each logged, and the analyzer
    reads each as the creation of exactly the fds the program got."""
    plain, cap, f = captured(tmp_path, [str(build("capture_fdmake"))])
    assert plain.returncode == cap.returncode == 0, cap.stderr
    assert cap.stdout == plain.stdout
    got = [ln.split() for ln in cap.stdout.splitlines()]
    assert [w for w, _ in got] == MADE
    want = [int(fd) for _, fd in got]
    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0
    made = [e for e in evs if getattr(e, "fds", None) and e.name not in ("openat", "fd-snapshot")]
    created = [fd for e in made for fd in e.fds]
    # the listening and the two connecting sockets of the accept set-up come before accept
    assert created == want[:7] + [3, 4, 5] + want[7:]
    origins = {e.name: e.origin for e in made}
    assert origins == {
        "pipe2": "pipe",
        "socket": "socket",
        "socketpair": "socketpair",
        "accept": "accept",
        "accept4": "accept",
        "eventfd2": "eventfd",
        "memfd_create": "memfd_create",
        "timerfd_create": "timerfd_create",
        "signalfd4": "signalfd",
        "epoll_create": "epoll_create",
        "epoll_create1": "epoll_create",
        "inotify_init": "inotify_init",
        "inotify_init1": "inotify_init",
        "fcntl": "dup",
    }
    # every fd made is closed again: nothing is left open at exit that was not there at start
    log = logread.read(f)
    assert set(log.snapshots["exit"]) == set(log.snapshots["start"])


@needs_strace
def test_fd_creation_lines_are_stracess_lines(tmp_path):
    argv = [str(build("capture_fdmake"))]
    _, _, f = captured(tmp_path, argv)
    calls = (
        "pipe2(",
        "socket(",
        "socketpair(",
        "accept(",
        "accept4(",
        "eventfd2(",
        "memfd_create(",
        "timerfd_create(",
        "signalfd4(",
        "epoll_create(",
        "epoll_create1(",
        "inotify_init(",
        "inotify_init1(",
    )
    ours = [norm(ln) for ln in logread.read(f).lines if not ln.startswith("#")]
    ours = [ln for ln in ours if ln.startswith(calls)]
    theirs = [norm(re.sub(r"^\d+ +", "", ln)) for ln in straced(tmp_path, argv)]
    theirs = [ln for ln in theirs if ln.startswith(calls)]
    assert len(ours) == 17 and ours == theirs


# --- whole paths (issue 37) ---------------------------------------------------


def test_fd_decorations_carry_whole_paths(tmp_path):
    """A path of about 3,000 bytes (with a `<` the decoration escapes):
    openat's result, dup, close, ioctl and both snapshots (an inherited fd
    at start, the program's own at exit) decorate it whole.  Records over
    4 KiB go out as `#+` pieces that the analyzer joins."""
    d = tmp_path
    for i in range(12):
        d = d / (f"d{i:02d}<" + "x" * 240)
    d.mkdir(parents=True)
    target = d / "file"
    long = str(target)
    assert len(long) > 2900
    inherited = __import__("os").open(long, __import__("os").O_RDWR | __import__("os").O_CREAT, 0o600)
    try:
        env = run.preload_env(str(tmp_path / "p"))
        p = subprocess.run(
            [str(build("capture_longpath")), long],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            pass_fds=(inherited,),
        )
    finally:
        __import__("os").close(inherited)
    assert p.returncode == 0, p.stderr
    fd, dup = map(int, re.fullmatch(r"fd (\d+) dup (\d+)\n", p.stdout).groups())
    (f,) = tmp_path.glob("p.*")
    log = logread.read(f)
    assert not log.bad
    esc = long.replace("<", "\\74")
    deco = f"<{esc}>"
    ev = {e.name: e for e in log.events}
    assert ev["openat"].result == f"{fd}{deco}"
    assert ev["dup"].args == f"{fd}{deco}" and ev["dup"].result == f"{dup}{deco}"
    assert ev["close"].args == f"{dup}{deco}"
    assert ev["ioctl"].args.startswith(f"{fd}{deco}, FIONREAD, ")
    assert log.snapshots["start"][inherited] == esc
    assert log.snapshots["exit"][fd] == esc
    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0
    (op,) = [e for e in evs if e.name == "openat"]
    assert op.fds == (fd,) and op.paths == (long,)


# --- the same calls through syscall(2) ---------------------------------------


def test_ebadf_calls_and_fd_creations_through_syscall2(tmp_path):
    """read … recvmsg, ioctl through syscall(2) on fd -1 and a closed fd
    (24 EBADF lines), and pipe2/socket/eventfd2/memfd_create through it:
    logged under the system call's name, stdout and errno unchanged."""
    argv = [str(build("capture_badfd")), "syscalls"]
    plain, cap, f = captured(tmp_path, argv)
    assert plain.returncode == cap.returncode == 0, cap.stderr
    assert cap.stdout == plain.stdout
    log = logread.read(f)
    assert not log.bad
    names = [
        "read",
        "write",
        "pread64",
        "pwrite64",
        "readv",
        "writev",
        "lseek",
        "fstat",
        "newfstatat",
        "sendmsg",
        "recvmsg",
        "ioctl",
    ]
    assert [e.name for e in log.events if e.errno == "EBADF"] == names * 2
    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0
    made = {e.name: e.origin for e in evs if getattr(e, "origin", None) and e.name != "openat"}
    assert made == {"pipe2": "pipe", "socket": "socket", "eventfd2": "eventfd", "memfd_create": "memfd_create"}
    if shutil.which("strace"):
        keep = re.compile(r"EBADF|^(pipe2|socket|eventfd2|memfd_create)\(")
        ours = [norm(ln) for ln in log.lines if not ln.startswith("#")]
        theirs = [norm(ln) for ln in straced(tmp_path, argv)]
        assert [ln for ln in ours if keep.search(ln)] == [ln for ln in theirs if keep.search(ln)]
