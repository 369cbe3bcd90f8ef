"""The capture library holds no fd while the program runs (issues 33, 37):
at any RLIMIT_NOFILE, with or without the right to raise it, the program
gets every number it would get without capture.  Each program runs plain
and under the real library, and what it saw must be the same."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fakedev import cbuild, logread
from rocrtrace.capture import run
from coremodels import trace_events

PROGRAMS = Path(__file__).parent / "programs"
needs_prlimit = pytest.mark.skipif(
    shutil.which("prlimit") is None or shutil.which("setpriv") is None, reason="needs prlimit and setpriv"
)


def build(name: str) -> Path:
    return cbuild.build(PROGRAMS / f"{name}.c", name)


def limited(limits: str) -> list[str]:
    """prlimit, and for soft = hard no CAP_SYS_RESOURCE (a container's
    default): the library cannot raise the limit to put an fd above it."""
    pre = ["prlimit", f"--nofile={limits}"]
    soft, hard = limits.split(":")
    if soft == hard:
        pre += ["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource"]
    return pre


@needs_prlimit
@pytest.mark.parametrize("limits", ["64:64", "4096:4096", "1024:4096"])
@pytest.mark.parametrize("mode", ["fill", "top", "sweep", "listing"])
def test_the_programs_fd_numbers_stay_free(tmp_path, limits, mode):
    """fill: files openable before EMFILE, closes that succeed, stdio
    reopened as 0 1 2; top: dup2 onto and close the two highest numbers;
    sweep: a forked child closing every number; listing: closing what
    /proc/self/fd lists.  Before: under 64:64 57 files instead of 60, and a
    listing found and closed the library's three fds."""
    argv = limited(limits) + [str(build("capture_fdlimit")), mode]
    plain = subprocess.run(argv + [str(tmp_path / "plain.txt")], capture_output=True, text=True, timeout=120)
    env = run.preload_env(str(tmp_path / "p"))
    cap = subprocess.run(argv + [str(tmp_path / "cap.txt")], capture_output=True, text=True, timeout=120, env=env)
    assert plain.returncode == cap.returncode == 0, cap.stderr
    seen = (tmp_path / "cap.txt").read_text()
    assert seen == (tmp_path / "plain.txt").read_text()
    if mode == "fill":
        assert "reopened 0 1 2" in seen
    logs = [logread.read(f) for f in tmp_path.glob("p.*")]
    assert logs and all(lg.lines[-1] == "# exit status=0" for lg in logs)
    for lg in logs:
        assert not lg.bad
        assert not [ln for ln in lg.lines if ln.startswith("# capture-fds")]  # no fd held
        bad_closes = [e for e in lg.events if e.errno == "EBADF" and e.name == "close"]
        if mode == "listing":  # it closed only what was its own
            assert bad_closes == []
        if mode == "top":  # only its own second closes failed
            assert len(bad_closes) == 2


PROG_KILLED = r"""
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
int main(void) {
  for (int i = 0; i < 50; i++) close(open("/dev/null", O_RDONLY));
  raise(SIGKILL);
  return 0;
}
"""


def test_a_killed_process_leaves_a_log_the_analyzer_reads_whole(tmp_path):
    """SIGKILL: no exit handler runs, so the log keeps the unused rest of its
    last growth step, filled with newlines (empty lines the reader skips,
    never NUL bytes); `rocrtrace capture` cuts them."""
    prog = cbuild.build(PROG_KILLED, "capture_killed")
    env = run.preload_env(str(tmp_path / "raw"))
    p = subprocess.run([str(prog)], env=env, timeout=60)
    assert p.returncode == -signal.SIGKILL
    (raw,) = tmp_path.glob("raw.*")
    data = raw.read_bytes()
    assert b"\0" not in data and data.endswith(b"\n\n\n")
    evs, infos = trace_events(str(raw))
    assert infos[0].unparsed == 0 and not infos[0].exit_seen
    assert run.trim_tail(str(raw)) > 0
    data = raw.read_bytes()
    assert data.endswith(b") = 0 <0.000000>\n") or data.endswith(">\n")
    assert not data.endswith(b"\n\n")
    # and through the command itself
    prefix = str(tmp_path / "cmd")
    assert run.capture([str(prog)], prefix=prefix, echo=None) == 128 + signal.SIGKILL
    (f,) = tmp_path.glob("cmd.*")
    assert not f.read_bytes().endswith(b"\n\n")
    log = logread.read(f)
    assert [e.name for e in log.events].count("close") == 50
    evs, infos = trace_events(str(f))
    assert infos[0].unparsed == 0 and not infos[0].exit_seen


def test_the_log_of_a_live_writer_is_not_trimmed(tmp_path):
    prog = cbuild.build("#include <unistd.h>\nint main(void) { sleep(30); return 0; }\n", "capture_sleeper")
    env = run.preload_env(str(tmp_path / "p"))
    proc = subprocess.Popen([str(prog)], env=env)
    try:
        for _ in range(200):
            files = list(tmp_path.glob("p.*"))
            if files and files[0].stat().st_size:
                break
            time.sleep(0.02)
        (f,) = files
        assert run.trim_tail(str(f)) == 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit")
def test_without_a_log_window_the_log_says_where_its_fds_are(tmp_path):
    """A tight RLIMIT_AS leaves no room to map the log: the library falls
    back to holding fds and says where (`# capture-fds`), so the report can
    tell whether the program could meet them."""
    env = run.preload_env(str(tmp_path / "p"))
    p = subprocess.run(
        ["prlimit", "--as=40000000", str(build("capture_fdmake"))], env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0, p.stderr
    (f,) = tmp_path.glob("p.*")
    log = logread.read(f)
    (note,) = [ln for ln in log.lines if ln.startswith("# capture-fds ")]
    kv = dict(w.split("=", 1) for w in note.split()[2:])
    fds = [int(x) for x in kv["fds"].split(",")]
    limit = int(kv["limit"])
    assert kv["placement"] == ("above-limit" if min(fds) >= limit else "below-limit")
    assert log.lines[-1] == "# exit status=0"
    _, infos = trace_events(str(f))
    assert infos[0].unparsed == 0


def test_many_threads_grow_one_log_without_losing_a_record(tmp_path):
    """8 threads x 4000 failing closes: the log grows through many steps
    while they write; every record is there, none torn, and the file ends
    exactly after the last line."""
    src = r"""
#include <pthread.h>
#include <unistd.h>
static void *run(void *a) { (void)a; for (int i = 0; i < 4000; i++) close(-1); return 0; }
int main(void) {
  pthread_t t[8];
  for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, run, 0);
  for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
  return 0;
}
"""
    prog = cbuild.build(src, "capture_threads_grow")
    env = run.preload_env(str(tmp_path / "p"))
    p = subprocess.run([str(prog)], env=env, timeout=120)
    assert p.returncode == 0
    (f,) = tmp_path.glob("p.*")
    data = f.read_bytes()
    assert b"\0" not in data and data.endswith(b"# exit status=0\n")
    log = logread.read(f)
    assert not log.bad
    assert len([e for e in log.events if e.name == "close" and e.errno == "EBADF"]) == 32000
    assert len(data) > 4 * 256 * 1024
    assert os.path.getsize(f) == len(data)


def test_a_program_unmapping_the_log_window_keeps_its_memory(tmp_path):
    """The program finds the log's mapping in /proc/self/maps, unmaps it and
    maps its own memory there (MAP_FIXED): the library never copies into it
    again; the log says where it stopped and ends there, whole."""
    prefix = str(tmp_path / "p")
    env = run.preload_env(prefix)
    p = subprocess.run([str(build("capture_unmapwin")), prefix], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "found 1\nbad bytes 0\n"
    (f,) = tmp_path.glob("p.*")
    data = f.read_bytes()
    assert b"\0" not in data
    assert data.decode().splitlines()[-1].startswith("# capture-window-lost ")
    # its memory where the window was: nothing of the log reached it (the
    # program checked), not even the exit lines written after its munmap
    _, infos = trace_events(str(f))
    assert infos[0].unparsed == 0 and not infos[0].exit_seen  # read as cut short
    plain = subprocess.run([str(build("capture_unmapwin")), prefix], capture_output=True, text=True, timeout=60)
    assert plain.stdout == "found 0\n"


PROG_TERM = r"""
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
static void *run(void *a) { (void)a; for (;;) close(-1); return 0; }
int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, run, 0);
  usleep(20000);
  kill(getpid(), SIGTERM);
  for (;;) pause();
}
"""


def test_a_fatal_signal_amid_writes_leaves_a_whole_log(tmp_path):
    """SIGTERM lands on a thread in the middle of writing a record: the
    handler finishes that copy before its own lines, so the log has no hole
    and ends with the signal."""
    prog = cbuild.build(PROG_TERM, "capture_term_amid")
    for i in range(8):
        env = run.preload_env(str(tmp_path / f"r{i}"))
        p = subprocess.run([str(prog)], env=env, timeout=60)
        assert p.returncode == -signal.SIGTERM
        (f,) = tmp_path.glob(f"r{i}.*")
        data = f.read_bytes()
        assert b"\0" not in data, i
        log = logread.read(f)
        assert not log.bad and log.lines[-1] == "# exit signal=SIGTERM"
