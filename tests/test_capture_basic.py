"""Capture library basics: header, fd snapshots, exit status, the protected
log fd, build-ids, stack frames, and the strace method."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from fakedev import cbuild, logread
from rocrtrace.capture import build, run

PROG = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int logfd_guess(void) {          /* the highest open fd: the log */
  int hi = -1;
  for (int fd = 3; fd < 70000; fd++) if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) hi = fd;
  return hi;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "plain";
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (!strcmp(mode, "close_range")) {
    close_range(3, ~0U, 0);
  } else if (!strcmp(mode, "closeall")) {
    for (int i = 3; i < 1024; i++) close(i);
  } else if (!strcmp(mode, "dup2")) {
    int hi = atoi(argv[2]);
    errno = 0;
    int r = dup2(fd, hi);
    printf("dup2=%d errno=%d\n", r, errno);
    r = close(hi);
    printf("close=%d errno=%d\n", r, errno);
    r = fcntl(hi, F_SETFD, 0);
    printf("fcntl=%d errno=%d\n", r, errno);
  } else if (!strcmp(mode, "scan")) {
    printf("highest=%d\n", logfd_guess());
  } else if (!strcmp(mode, "closefrom")) {
    closefrom(3);
  }
  fd = open("/dev/null", O_RDONLY);
  errno = 0;
  int r = ioctl(fd, 0xc0084b01, 0);  /* AMDKFD_IOC_GET_VERSION on /dev/null */
  printf("after ioctl=%d errno=%d\n", r, errno);
  fflush(stdout);
  return argc > 3 ? atoi(argv[3]) : 7;
}
"""


@pytest.fixture(scope="module")
def prog():
    return cbuild.build(PROG, "capture_basic")


def run_prog(tmp_path, args, depth=0, **kw):
    prefix = str(tmp_path / "trace")
    env = run.preload_env(prefix, depth)
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, **kw)
    files = sorted(glob.glob(prefix + ".*"))
    return proc, files


def test_library_builds_once_and_is_cached():
    a = build.library_path()
    b = build.library_path()
    assert a == b and a.exists()
    assert "kfdnames.h" not in os.listdir(a.parent)


def test_header_snapshots_and_exit(tmp_path, prog):
    proc, files = run_prog(tmp_path, [str(prog)])
    assert proc.returncode == 7
    assert len(files) == 1 and files[0].endswith(f".{files[0].rsplit('.', 1)[1]}")
    log = logread.read(files[0])
    assert log.lines[0] == "# rocrtrace-log 1"
    assert log.header["exe"] == str(prog)
    assert log.header["page_size"] == "4096"
    assert files[0].endswith("." + log.header["pid"])
    assert log.lines[-1] == "# exit status=7"
    assert "# fd-snapshot exit" in log.lines
    assert {0, 1, 2} <= set(log.snapshots["start"])
    # the log fd itself is never listed
    assert all("trace." not in p for s in log.snapshots.values() for p in s.values())
    assert not log.bad
    ioctls = [e for e in log.events if e.name == "ioctl"]
    assert len(ioctls) == 1
    assert ioctls[0].args.endswith("AMDKFD_IOC_GET_VERSION, 0")
    assert ioctls[0].errno == "ENOTTY"
    fd = int(re.match(r"(\d+)", ioctls[0].args)[1])
    assert log.snapshots["exit"][fd] == "/dev/null"
    assert "after ioctl=-1 errno=25" in proc.stdout


def test_log_fd_is_hidden_from_the_program(tmp_path, prog):
    proc, files = run_prog(tmp_path, [str(prog), "scan"])
    highest = int(re.search(r"highest=(-?\d+)", proc.stdout)[1])
    # the program cannot see it: F_GETFD on it says EBADF
    assert highest < 100


@pytest.mark.parametrize("mode", ["close_range", "closeall", "closefrom"])
def test_program_closing_everything_keeps_logging(tmp_path, prog, mode):
    proc, files = run_prog(tmp_path, [str(prog), mode])
    assert proc.returncode == 7, proc.stderr
    log = logread.read(files[0])
    names = [e.name for e in log.events]
    assert names[-2:] == ["openat", "ioctl"]
    assert log.lines[-1] == "# exit status=7"
    if mode == "closeall":
        closes = [e for e in log.events if e.name == "close"]
        assert len(closes) == 1021


@pytest.mark.parametrize("where", [-5, 0, 1, 2, 3])
def test_calls_on_the_log_fd_number_behave_as_without_capture(tmp_path, prog, where):
    # the library keeps its fds at the soft RLIMIT_NOFILE and just above it,
    # where the program cannot be handed them; dup2/close/fcntl aimed there
    # see what they see without capture (the library moves its fd first)
    limit = int(subprocess.run(["sh", "-c", "ulimit -n"], capture_output=True, text=True).stdout)
    target = min(limit, 65536) + where
    argv = [str(prog), "dup2", str(target)]
    plain = subprocess.run(argv, capture_output=True, text=True)
    proc, files = run_prog(tmp_path, argv)
    assert proc.stdout == plain.stdout
    assert proc.returncode == plain.returncode == 7
    log = logread.read(files[0])
    assert log.lines[-1] == "# exit status=7"
    d = [e for e in log.events if e.name == "dup2"]
    assert len(d) == 1 and (d[0].errno == "EBADF") == (where >= 0)
    assert log.events[-1].name == "ioctl"  # still logging after the moves


def test_capture_api_exit_status_and_listing(tmp_path, prog):
    out = []
    rc = run.capture([str(prog), "plain", "x", "42"], prefix=str(tmp_path / "cap"), echo=out.append)
    assert rc == 42
    assert any(str(tmp_path / "cap.") in line for line in out)
    rc = run.capture(["sh", "-c", "kill -SEGV $$"], prefix=str(tmp_path / "sig"), echo=None)
    assert rc == 128 + 11
    with pytest.raises(run.CaptureError):
        run.capture([], prefix=str(tmp_path / "x"))
    with pytest.raises(run.CaptureError):
        run.capture(["/bin/true"], method="ptrace")
    with pytest.raises(run.CaptureError):
        run.capture(["definitely-not-a-command-xyz"], prefix=str(tmp_path / "x"))


@pytest.mark.skipif(not shutil.which("strace"), reason="strace not installed")
def test_strace_method_writes_prefix_pid_files(tmp_path, prog):
    out = []
    rc = run.capture(["sh", "-c", f"{prog}; exit 9"], method="strace", prefix=str(tmp_path / "st"), echo=out.append)
    assert rc == 9
    files = sorted(tmp_path.glob("st.*"))
    assert len(files) == 2 and not (tmp_path / "st").exists()  # sh and the program
    assert [ln.strip() for ln in out[1:]] == [str(f) for f in sorted(files, key=lambda f: (len(str(f)), str(f)))]
    text = "".join(f.read_text() for f in files)
    assert "AMDKFD_IOC_GET_VERSION" in text or "0xc0084b01" in text
    assert "+++ exited with 7 +++" in text and "+++ exited with 9 +++" in text


@pytest.mark.skipif(not shutil.which("strace"), reason="strace not installed")
def test_strace_filter_has_every_fd_call_desc_misses(tmp_path):
    """%desc on the installed strace leaves some fd calls out: the capture
    filter names each of them (close_range on strace 6.1, the socket calls)."""
    src = tmp_path / "fd.c"
    src.write_text(r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void) {
  int sv[2]; char b = 0;
  struct iovec iov = {&b, 1}; struct msghdr mh = {0}; mh.msg_iov = &iov; mh.msg_iovlen = 1;
  socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
  sendmsg(sv[0], &mh, 0); recvmsg(sv[1], &mh, 0);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  accept4(s, 0, 0, 0); accept(s, 0, 0);
  dup2(s, 40); dup3(s, 41, 0); fcntl(s, F_DUPFD, 50); close(dup(s));
  close_range(40, 60, 0);
  return 0;
}
""")
    exe = cbuild.build(src, "capture_fdcalls")
    calls = {
        "socketpair",
        "sendmsg",
        "recvmsg",
        "socket",
        "accept4",
        "accept",
        "dup2",
        "dup3",
        "fcntl",
        "dup",
        "close",
        "close_range",
    }

    def seen(trace):
        log = tmp_path / f"{trace[:5]}.log"
        subprocess.run(["strace", "-f", "-o", str(log), "-e", f"trace={trace}", str(exe)], check=True)
        return {m[1] for m in re.finditer(r"^\d+ +(\w+)\(", log.read_text(), re.M)} & calls

    missed = calls - seen("%desc")
    assert "close_range" in missed
    assert set(run.STRACE_FD_CALLS.split(",")) >= missed
    assert seen(run.STRACE_TRACE) == calls


def test_capture_creates_the_prefix_directory_and_lists_only_its_files(tmp_path, prog):
    prefix = tmp_path / "traces" / "suite"
    out = []
    assert run.capture([str(prog)], prefix=str(prefix), echo=out.append) == 7
    first = sorted(prefix.parent.glob("suite.*"))
    assert len(first) == 1
    (prefix.parent / "suite.1").write_text("an older run\n")
    out = []
    assert run.capture([str(prog)], prefix=str(prefix), echo=out.append) == 7
    listed = [ln.strip() for ln in out[1:]]
    assert len(listed) == 1 and listed[0] not in (str(first[0]), str(prefix.parent / "suite.1"))
    assert out[0] == "rocrtrace: preload capture wrote 1 file(s):"
    (tmp_path / "file").write_text("")
    with pytest.raises(run.CaptureError, match="cannot create"):
        run.capture([str(prog)], prefix=str(tmp_path / "file" / "x"), echo=None)


def test_capture_leaves_sigint_to_the_program(tmp_path):
    sig = cbuild.build(run_path("capture_signals"), "capture_signals")
    assert run.capture([str(sig), "int"], prefix=str(tmp_path / "i"), echo=None) == 128 + 2
    log = logread.read(next(tmp_path.glob("i.*")))
    assert log.lines[-1] == "# exit signal=SIGINT"


def test_capture_keeps_an_ignored_sigint_ignored(tmp_path):
    """Started with SIGINT ignored (a script's background job), the program
    inherits it ignored, as without capture: raise(SIGINT) does not kill it."""
    sig = cbuild.build(run_path("capture_signals"), "capture_signals")
    plain = subprocess.run([str(sig), "int"], preexec_fn=_ignore_sigint, timeout=60)
    code = (
        "import sys; from rocrtrace.capture import run\n"
        "sys.exit(run.capture([sys.argv[1], 'int'], prefix=sys.argv[2], echo=None))\n"
    )
    cap = subprocess.run(
        [sys.executable, "-c", code, str(sig), str(tmp_path / "i")], preexec_fn=_ignore_sigint, timeout=60
    )
    assert plain.returncode == cap.returncode == 1  # raise() returned; main returns 1
    log = logread.read(next(tmp_path.glob("i.*")))
    assert log.lines[-1] == "# exit status=1"


def _ignore_sigint():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_path(name):
    from pathlib import Path

    return Path(__file__).parent / "programs" / f"{name}.c"


def test_build_ids_match_readelf(tmp_path, prog):
    proc, files = run_prog(tmp_path, [str(prog)])
    log = logread.read(files[0])
    seen = {m["path"]: m["build_id"] for m in log.maps}
    assert str(prog) in seen
    for path, bid in seen.items():
        out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
        m = re.search(r"Build ID: ([0-9a-f]+)", out)
        assert (m[1] if m else None) == bid, path


@pytest.mark.parametrize("depth", [1, 3])
def test_stack_frames(tmp_path, prog, depth):
    proc, files = run_prog(tmp_path, [str(prog)], depth=depth)
    log = logread.read(files[0])
    assert not log.bad
    ioctl = [e for e in log.events if e.name == "ioctl"][0]
    assert 1 <= len(ioctl.frames) <= depth
    # the first frame is libc's ioctl stub or the program, never the library
    lib = str(build.library_path())
    assert all(obj != lib for obj, _ in ioctl.frames)
    mods = {m["path"] for m in log.maps}
    for obj, off in ioctl.frames:
        assert obj in mods
    if depth >= 2:
        # the caller frame lies in the program's text: offset inside an r-xp map of it
        assert any(obj == str(prog) for obj, _ in ioctl.frames)
        off = [o for obj, o in ioctl.frames if obj == str(prog)][0]
        sym = subprocess.run(
            ["addr2line", "-f", "-e", str(prog), hex(off)], capture_output=True, text=True
        ).stdout.split()[0]
        assert sym == "main"
