"""Stress: 8 threads x 10,000 intercepted calls, randomly interleaved, with a
fork in the middle.  Every call appears exactly once, in the right file, on
its own unbroken line, and errno is what the program would see without us."""

from __future__ import annotations

import re
import subprocess
from collections import Counter


from fakedev import cbuild, logread
from rocrtrace.capture import run

THREADS, CALLS, CHILD_CALLS = 8, 10_000, 2_000

PROG = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS %(threads)d
#define CALLS %(calls)d
#define CHILD_CALLS %(child)d
static int nullfd;
static volatile int bad;

/* each call carries its (thread, index) id: in the ioctl request, the close
 * fd number or the mmap length */
static void one(int t, int i, unsigned *seed) {
  unsigned id = (unsigned)(t * 100000 + i);
  int op = rand_r(seed) %% 3;
  errno = 12345;
  if (op == 0) {
    unsigned long req = (0x40u + t) << 8 | (i & 0xff) | (unsigned long)(i >> 8) << 16;
    if (ioctl(nullfd, req, 0) != -1 || errno != ENOTTY) bad = 1;
  } else if (op == 1) {
    if (close(1000000 + id) != -1 || errno != EBADF) bad = 2;
  } else {
    if (mmap(0, 4096ul * (id + 1), PROT_READ, MAP_SHARED, 1000000, 0) != MAP_FAILED || errno != EBADF) bad = 3;
  }
}

static void *worker(void *p) {
  int t = (int)(long)p;
  unsigned seed = 1234u + t;
  for (int i = 0; i < CALLS; i++) {
    one(t, i, &seed);
    if (t == 0 && i == CALLS / 2) {
      pid_t c = fork();
      if (c == 0) {
        unsigned s2 = 99;
        for (int k = 0; k < CHILD_CALLS; k++) one(9, k, &s2);
        exit(bad ? 10 + bad : 0);
      }
      int st; waitpid(c, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st)) bad = 4;
    }
  }
  return 0;
}

int main(void) {
  nullfd = open("/dev/null", O_RDWR);
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++) pthread_create(&th[t], 0, worker, (void *)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], 0);
  printf("bad=%%d\n", bad);
  return bad;
}
""" % {"threads": THREADS, "calls": CALLS, "child": CHILD_CALLS}


def ids_of(log):
    """(thread, index) -> count, and thread -> set of tids."""
    seen, tids = Counter(), {}
    for e in log.events:
        if e.name == "ioctl":
            m = re.search(r"_IOC\(_IOC_NONE, 0x([0-9a-f]+), (0x[0-9a-f]+|0), (0x[0-9a-f]+|0)\)", e.args)
            if not m:
                continue
            t = int(m[1], 16) - 0x40
            i = int(m[2], 16) | int(m[3], 16) << 8
            assert e.errno == "ENOTTY"
        elif e.name == "close" and e.args.isdigit() and int(e.args) >= 1000000:
            t, i = divmod(int(e.args) - 1000000, 100000)
            assert e.errno == "EBADF"
        elif e.name == "mmap" and e.args.endswith(", 1000000, 0"):
            t, i = divmod(int(e.args.split(", ")[1]) // 4096 - 1, 100000)
            assert e.errno == "EBADF"
        else:
            continue
        seen[(t, i)] += 1
        tids.setdefault(t, set()).add(e.tid)
    return seen, tids


def test_threads_fork_every_call_once(tmp_path):
    prog = cbuild.build(PROG, "capture_stress")
    prefix = str(tmp_path / "st")
    p = subprocess.run([str(prog)], env=run.preload_env(prefix), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    files = sorted(tmp_path.glob("st.*"), key=lambda f: f.stat().st_size)
    assert len(files) == 2
    child, parent = (logread.read(f) for f in files)
    for log in (child, parent):
        assert not log.bad, log.bad[:3]  # no torn or merged lines
        assert log.lines[-1] == "# exit status=0"
        assert all(len(ln) < 4096 for ln in log.lines)
    assert child.header["ppid"] == parent.header["pid"]
    seen, tids = ids_of(parent)
    assert set(seen.values()) == {1}
    assert set(seen) == {(t, i) for t in range(THREADS) for i in range(CALLS)}
    assert all(len(v) == 1 for v in tids.values())  # one tid per thread
    assert len(set().union(*tids.values())) == THREADS
    cseen, ctids = ids_of(child)
    assert set(cseen) == {(9, i) for i in range(CHILD_CALLS)} and set(cseen.values()) == {1}
    assert ctids == {9: {int(child.header["pid"])}}
    # the parent logged the fork with the child's pid
    forks = [e for e in parent.events if e.name == "fork"]
    assert [int(f.result) for f in forks] == [int(child.header["pid"])]
    # the child's own header has a start snapshot holding the inherited fds
    assert "/dev/null" in child.snapshots["start"].values()
