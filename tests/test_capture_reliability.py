"""The capture library changes nothing the program does: its fds
are never where the program can meet them, children are attributed to
themselves, log files are never opened through a planted symlink, fatal
signals are named, and calls failing with EBADF are logged.  Every test runs
a real program from tests/programs/capture_*.c under the real library,
usually next to the same run without it."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fakedev import cbuild, logread
from rocrtrace.capture import run
from coremodels import trace_events

PROGRAMS = Path(__file__).parent / "programs"
X86_64 = platform.machine() == "x86_64"


def build(name: str) -> Path:
    return cbuild.build(PROGRAMS / f"{name}.c", name)


def both(tmp_path, argv, prefix="p", pre=(), timeout=120):
    """(run without capture, run with capture, the log files it wrote)"""
    argv = list(pre) + [str(a) for a in argv]
    plain = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    env = run.preload_env(str(tmp_path / prefix))
    cap = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    files = sorted(tmp_path.glob(prefix + ".*"), key=lambda f: int(f.suffix[1:]))
    return plain, cap, files


def library_paths(log: logread.Log) -> list[str]:
    """Lines that mention one of the library's own fds: its log file or the
    /proc files it keeps open."""
    pid = log.header["pid"]
    own = (str(log.path), f"/proc/{pid}/fd>", f"/proc/{pid}/maps>", f"/proc/{pid}/fd\n")
    return [ln for ln in log.lines if any(o in ln for o in own)]


# --- the library's fds -------------------------------------------------------


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit")
@pytest.mark.parametrize("limits", ["1024:4096", "4096:4096"])
@pytest.mark.parametrize("mode", ["plain", "raw"])
def test_probing_every_fd_number_sees_what_it_sees_without_capture(tmp_path, mode, limits):
    """fstat, fcntl, close, dup2 onto, close again, on every number below
    RLIMIT_NOFILE and a few above it; then close_range(3, ~0U) and an open
    that must get 3.  raw: the closes go through syscall(2).  1024:4096: the
    library's fds go above the soft limit; 4096:4096 (without
    CAP_SYS_RESOURCE): just below it, moved away as the probe reaches them."""
    pre = ["prlimit", f"--nofile={limits}"]
    if limits == "4096:4096":
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv")
        pre += ["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource"]
    plain, cap, files = both(tmp_path, [build("capture_fdprobe"), mode], pre=pre)
    assert plain.returncode == cap.returncode == 0, cap.stderr
    assert cap.stdout == plain.stdout
    assert "next open=3" in cap.stdout
    (f,) = files
    log = logread.read(f)
    assert not log.bad and log.lines[-1] == "# exit status=0"
    assert library_paths(log) == []
    limit = int(re.search(r"limit (\d+)", cap.stdout)[1])
    assert all(n < limit for s in log.snapshots.values() for n in s)
    # the program's calls are all there, the library's moves are not
    # (prlimit and setpriv run first in the same process: count after the exec)
    start = max([i for i, ln in enumerate(log.lines, 1) if ln.startswith("# exec ")], default=0)
    probe = [e for e in log.events if e.line > start]
    closes = [e for e in probe if e.name == "close"]
    assert len(closes) == 2 * (limit + 8 - 4)
    assert not [e for e in probe if e.name in ("fcntl", "dup")]
    # the analyzer finds no double close of anything the library held
    _, infos = trace_events(str(f))
    assert infos[0].unparsed == 0


@pytest.mark.skipif(not X86_64, reason="inline x86_64 system calls")
@pytest.mark.parametrize("limits", [None, "1024:20000"])
def test_raw_close_and_reuse_of_the_log_number_gets_no_records(tmp_path, limits):
    """The program closes the library's fds with inline syscalls, raises its
    limit with prlimit64 through syscall(2) and dup2s its own file onto those
    numbers (inline too): its file stays empty, the records go on in the log."""
    own = tmp_path / "own.dat"
    pre = ["prlimit", f"--nofile={limits}"] if limits else []
    env = run.preload_env(str(tmp_path / "p"))
    p = subprocess.run(
        pre + [str(build("capture_rawclose")), str(own)], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout == "own file bytes=0\n" and own.stat().st_size == 0
    (f,) = tmp_path.glob("p.*")
    log = logread.read(f)
    assert [e.name for e in log.events][-6:] == ["openat", "close"] * 3
    assert log.lines[-1] == "# exit status=0"


def test_exit_snapshot_never_holds_a_low_fd(tmp_path):
    """A thread's ioctl(3) racing the exit-time fd snapshot gets EBADF, as
    without capture: the library never takes the lowest free number."""
    prog = build("capture_exitrace")
    for i in range(6):
        env = run.preload_env(str(tmp_path / f"r{i}"))
        p = subprocess.run([str(prog)], capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0
        assert p.stdout == "exit\n", p.stdout[:500]


# --- children ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fork", "clone3", "vfork", "posix_spawn"])
def test_every_child_writes_its_own_records(tmp_path, mode):
    if mode == "clone3" and not X86_64:
        pytest.skip("syscall(2) is hooked on x86_64 and aarch64")
    plain, cap, files = both(tmp_path, [build("capture_children"), mode])
    assert plain.returncode == cap.returncode == 0, cap.stderr
    m = re.fullmatch(r"child (\d+) status (\d+)\n", cap.stdout)
    assert m and m[2] == ("0" if mode == "posix_spawn" else "3")
    child_pid = int(m[1])
    assert len(files) == 2
    logs = {int(lg.header["pid"]): lg for lg in map(logread.read, files)}
    child = logs.pop(child_pid)
    (parent,) = logs.values()
    ppid = int(parent.header["pid"])
    assert child.header["ppid"] == str(ppid)
    for lg, pid in ((parent, ppid), (child, child_pid)):
        assert not lg.bad
        assert {e.tid for e in lg.events} <= {pid}, lg.path
    # the parent: its own calls only, and the child's creation where it is
    # interposable (vfork() itself cannot be)
    names = [e.name for e in parent.events]
    assert names.count("openat") == 1 and names.count("close") == 1
    made = {"fork": "fork", "clone3": "clone3", "posix_spawn": "vfork", "vfork": None}[mode]
    if made:
        (ev,) = [e for e in parent.events if e.name == made]
        assert int(ev.result) == child_pid
    if mode == "clone3":
        assert "exit_signal=SIGCHLD" in parent.events[names.index("clone3")].args
    if mode == "posix_spawn":  # the child's image after exec: `true`
        assert child.header["exe"].endswith("/true") and child.lines[-1] == "# exit status=0"
        return
    # the child: open, close, the double close's EBADF, its exit status
    assert [(e.name, e.errno) for e in child.events] == [("openat", None), ("close", None), ("close", "EBADF")]
    assert child.lines[-1] == "# exit status=3"
    assert child.snapshots["start"] and "exit" in child.snapshots


@pytest.mark.skipif(not X86_64, reason="openat2 through syscall(2)")
def test_openat2_is_logged_like_openat(tmp_path):
    plain, cap, files = both(tmp_path, [build("capture_badfd"), "openat2"])
    assert cap.stdout == plain.stdout and "openat2 3 0" in cap.stdout
    log = logread.read(files[0])
    (ev,) = [e for e in log.events if e.name == "openat2"]
    assert ev.args.startswith('AT_FDCWD, "/dev/null", {flags=O_RDONLY|O_CLOEXEC, resolve=0}, 24')
    assert ev.result == "3</dev/null>"
    evs, _ = trace_events(str(files[0]))
    assert [e for e in evs if e.name == "openat2" and getattr(e, "fds", None) == (3,)]


# --- log files ---------------------------------------------------------------


def _in_pid_ns(argv, env):
    """Run argv as pid 1 of a new pid namespace (so its log is PREFIX.1)."""
    return subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc"] + argv, env=env, capture_output=True, text=True, timeout=60
    )


needs_ns = pytest.mark.skipif(
    shutil.which("unshare") is None or not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
    reason="needs root and unshare",
)


@needs_ns
@pytest.mark.parametrize("who", ["process", "fork child", "vfork child"])
@pytest.mark.parametrize("plant", ["symlink", "hardlink"])
def test_log_is_never_opened_through_a_planted_name(tmp_path, plant, who):
    """The name a log will get (pid 1 in a new pid namespace; its first
    child is pid 2) is planted beforehand: the victim is never touched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    name = tmp_path / ("p.1" if who == "process" else "p.2")
    if plant == "symlink":
        name.symlink_to(victim)
    else:
        name.hardlink_to(victim)
    env = run.preload_env(str(tmp_path / "p"))
    argv = [str(build("capture_badfd"))] if who == "process" else [str(build("capture_children")), who.split()[0]]
    p = _in_pid_ns(argv, env)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "precious\n"  # neither truncated nor appended to
    assert (name.is_symlink()) == (plant == "symlink")
    if who != "process":  # the parent still wrote its own log
        assert logread.read(tmp_path / "p.1").lines[-1] == "# exit status=0"


@needs_ns
def test_stale_log_of_a_reused_pid_is_replaced(tmp_path):
    (tmp_path / "p.1").write_text("old content\n")
    env = run.preload_env(str(tmp_path / "p"))
    p = _in_pid_ns([str(build("capture_badfd"))], env)
    assert p.returncode == 0, p.stderr
    log = logread.read(tmp_path / "p.1")
    assert log.lines[0] == "# rocrtrace-log 1" and "old content" not in log.lines


# --- signals -----------------------------------------------------------------


@pytest.mark.parametrize(
    "mode,sig",
    [
        ("segv", "SIGSEGV"),
        ("abort", "SIGABRT"),
        ("term", "SIGTERM"),
        ("bus", "SIGBUS"),
        ("reraise", "SIGSEGV"),
        ("altstack", "SIGTERM"),
        ("int", "SIGINT"),
    ],
)
def test_fatal_signal_is_named_and_the_death_is_the_same(tmp_path, mode, sig):
    plain, cap, files = both(tmp_path, [build("capture_signals"), mode])
    assert plain.returncode == cap.returncode < 0
    assert cap.stdout == plain.stdout
    log = logread.read(files[0])
    assert log.lines[-1] == f"# exit signal={sig}"
    assert "# fd-snapshot exit" in log.lines
    _, infos = trace_events(str(files[0]))
    assert infos[0].exit_seen


@pytest.mark.parametrize("mode", ["handler", "query"])
def test_the_programs_own_dispositions_are_untouched(tmp_path, mode):
    """Its own handler runs (and its _exit is the exit); sigaction() and
    signal() report exactly what the program set, never the library's."""
    plain, cap, files = both(tmp_path, [build("capture_signals"), mode])
    assert plain.returncode == cap.returncode == (3 if mode == "handler" else 0)
    assert cap.stdout == plain.stdout
    assert logread.read(files[0]).lines[-1] == f"# exit status={plain.returncode}"


def test_a_log_without_exit_says_how_it_can_happen(tmp_path):
    from rocrtrace.coverage import input_findings

    prog = build("capture_signals")
    env = run.preload_env(str(tmp_path / "p"))
    proc = subprocess.Popen([str(prog), "bus"], env=env)  # SIGBUS: named in the log
    assert proc.wait(timeout=60) == -7
    (f,) = tmp_path.glob("p.*")
    # a log that just stops: what SIGKILL leaves
    cut = tmp_path / "cut.log"
    cut.write_text(
        "\n".join(
            ln for ln in f.read_text().splitlines() if not ln.startswith("# exit") and "fd-snapshot exit" not in ln
        )
        + "\n"
    )
    findings = []
    for path in (f, cut):
        _, infos = trace_events(str(path))
        findings.append([x for x in input_findings(infos[0]) if x.rule == "trace-incomplete"])
    assert findings[0] == []
    (inc,) = findings[1]
    assert "SIGKILL" in inc.message and "no '# exit' line" in inc.message


# --- calls that matter when they fail on a bad fd ----------------------------


def test_calls_failing_with_ebadf_are_logged(tmp_path):
    plain, cap, files = both(tmp_path, [build("capture_badfd")])
    assert plain.returncode == cap.returncode == 0
    assert cap.stdout == plain.stdout  # results and errno unchanged
    log = logread.read(files[0])
    assert not log.bad
    bad = [(e.name, e.errno) for e in log.events if e.errno]
    # fstat: the newfstatat(fd, "", ..., AT_EMPTY_PATH) glibc >= 2.33 issues, as strace shows it
    assert bad == [
        (n, "EBADF")
        for n in (
            "read",
            "write",
            "pread64",
            "pwrite64",
            "readv",
            "writev",
            "lseek",
            "newfstatat",
            "sendmsg",
            "recvmsg",
            "ioctl",
        )
    ]
    (w,) = [e for e in log.events if e.name == "write"]
    assert w.args == '3, "hello", 5'
    # successful ones are not logged
    assert [e.name for e in log.events if not e.errno] == ["openat", "close"]
    # and the analyzer reads every one of them as a use of the closed fd
    evs, _ = trace_events(str(files[0]))
    assert len([e for e in evs if e.err == "EBADF"]) == 11
