"""Capture across exec, fork+exec, vfork children, and HSA intent calls;
a fake-device scenario whose fds come from inside ioctls."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fakedev import cbuild, devns, logread
from rocrtrace.capture import run

EXEC = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "second")) {
    int fd = open("/dev/null", O_RDONLY);
    close(fd);
    return 5;
  }
  int keep = open("/dev/null", O_RDONLY);            /* survives exec */
  int gone = open("/dev/zero", O_RDONLY | O_CLOEXEC); /* dropped by exec */
  (void)keep; (void)gone;
  execl("/nonexistent/prog", "x", (char *)0);         /* fails: logged */
  pid_t c = vfork();
  if (c == 0) {                 /* a vfork child: its closes are not the parent's */
    close(keep);
    _exit(3);
  }
  int st; waitpid(c, &st, 0);
  execl(argv[0], argv[0], "second", (char *)0);
  return 99;
}
"""


def test_exec_continues_the_same_file(tmp_path):
    prog = cbuild.build(EXEC, "capture_exec")
    prefix = tmp_path / "ex"
    p = subprocess.run([str(prog)], env=run.preload_env(str(prefix)), capture_output=True, text=True)
    assert p.returncode == 5
    files = sorted(tmp_path.glob("ex.*"))
    assert len(files) == 2  # the vfork child writes its own file
    logs = [logread.read(f) for f in files]
    log = next(lg for lg in logs if "# exec /nonexistent/prog" in lg.lines)
    child = next(lg for lg in logs if lg is not log)
    # the vfork child: its own pid, its parent's pid, its close and its exit
    assert child.header["ppid"] == log.header["pid"] and not child.bad
    assert [e.name for e in child.events] == ["close"]
    assert {e.tid for e in child.events} == {int(child.header["pid"])}
    assert child.lines[-1] == "# exit status=3"
    assert not log.bad
    lines = log.lines
    assert lines.count("# rocrtrace-log 1") == 1 and lines[0] == "# rocrtrace-log 1"
    execs = [i for i, ln in enumerate(lines) if ln.startswith("# exec ")]
    assert [lines[i] for i in execs] == ["# exec /nonexistent/prog", f"# exec {prog}"]
    # the failed exec is followed by its error
    assert re.match(r"\d+ +\S+ execve\(\"/nonexistent/prog\", \[\"x\"\], .*\) = -1 ENOENT", lines[execs[0] + 1])
    # the vfork child's close of `keep` is not in the parent's log
    closes_before = [e for e in log.events if e.name == "close" and e.line < execs[1] + 1]
    assert closes_before == []
    # after the exec: a new header, maps and start snapshot without the CLOEXEC fd
    after = lines[execs[1] + 1 :]
    assert after[0].startswith("# pid=") and "exe=" + str(prog) in after[0]
    start = after.index("# fd-snapshot start")
    snap = [ln for ln in after[start + 1 :] if ln.startswith("# fd ")]
    assert any(ln.endswith("/dev/null") for ln in snap)
    assert not any(ln.endswith("/dev/zero") for ln in snap)
    assert lines[-1] == "# exit status=5"
    assert len([ln for ln in lines if ln.startswith("# exit status=")]) == 1


FAKE_HSA = r"""
#include <stdint.h>
#include <sys/ioctl.h>
typedef struct { uint64_t handle; } h_t;
int hsa_amd_memory_lock(void *p, unsigned long size, h_t *agents, int n, void **agent_ptr) {
  ioctl(-1, 0x4b20, 0);     /* the inner ioctl must be logged inside the window */
  *agent_ptr = p;
  return 0;
}
int hsa_amd_memory_unlock(void *p) { return p ? 0 : 0x1001; }
int hsa_amd_portable_export_dmabuf(const void *p, unsigned long size, int *fd, uint64_t *off) {
  *fd = 1; *off = 0x40; return 0;
}
"""

HSA_USER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
typedef struct { uint64_t handle; } h_t;
int main(void) {
  int (*lock)(void *, unsigned long, h_t *, int, void **) = dlsym(RTLD_DEFAULT, "hsa_amd_memory_lock");
  int (*unlock)(void *) = dlsym(RTLD_DEFAULT, "hsa_amd_memory_unlock");
  int (*exp)(const void *, unsigned long, int *, uint64_t *) = dlsym(RTLD_DEFAULT, "hsa_amd_portable_export_dmabuf");
  int (*svm)(void *, unsigned long, void *, unsigned long) = dlsym(RTLD_DEFAULT, "hsa_amd_svm_attributes_set");
  h_t agents[2] = {{0x5612a0}, {0x5612b0}};
  void *out = 0; int fd = -1; uint64_t off = 0;
  int a = lock((void *)0x7f3a1c201230, 0x11000, agents, 2, &out);
  int b = unlock((void *)0);
  int c = exp((void *)0x7f3a1c200000, 0x1000, &fd, &off);
  int d = svm((void *)0x1000, 0x1000, 0, 0);   /* not in the fake runtime */
  printf("%d %x %d %x %d\n", a, b, c, d, fd);
  return 0;
}
"""


def test_intent_calls_forwarded_and_logged(tmp_path):
    fake = cbuild.build(FAKE_HSA, "libfakehsa.so", shared=True)
    user = cbuild.build(HSA_USER, "hsa_user")
    env = run.preload_env(str(tmp_path / "h"), extra_preload=[str(fake)])
    p = subprocess.run([str(user)], env=env, capture_output=True, text=True)
    assert p.stdout.split() == ["0", "1001", "0", "1000", "1"]
    (f,) = tmp_path.glob("h.*")
    log = logread.read(f)
    assert not log.bad
    ev = {e.name: e for e in log.events}
    lock = ev["hsa_amd_memory_lock"]
    assert lock.args == "0x7f3a1c201230, 0x11000, [0x5612a0, 0x5612b0], 2, [0x7f3a1c201230]"
    assert lock.result == "0"
    inner = ev["ioctl"]
    assert inner.line < lock.line  # written at return ...
    assert lock.time <= inner.time <= lock.time + lock.dur + 1e-6  # ... with the entry time
    assert inner.tid == lock.tid
    assert ev["hsa_amd_memory_unlock"].args == "0" and ev["hsa_amd_memory_unlock"].result == "0x1001"
    exp = ev["hsa_amd_portable_export_dmabuf"]
    assert re.fullmatch(r"0x7f3a1c200000, 0x1000, \[1<.*>\], \[0x40\]", exp.args), exp.args
    assert ev["hsa_amd_svm_attributes_set"].result == "0x1000"


SCENARIO = r"""
import os, sys
sys.path[:0] = [%(tests)r, %(root)r]
from fakedev import kfdcalls as K
kfd = K.open_kfd(); render = K.open_render(); accel = K.open_accel()
a = K.alloc(kfd, 0x1a2b, 0x20000)
e = K.ExportDmabuf(a.handle, os.O_CLOEXEC); K.ioctl(kfd, K.EXPORT_DMABUF, e)
h1 = K.Prime(0, 0, e.dmabuf_fd); K.ioctl(render, K.PRIME_FD_TO_HANDLE, h1)
h2 = K.Prime(0, 0, e.dmabuf_fd); K.ioctl(render, K.PRIME_FD_TO_HANDLE, h2)
assert h1.handle == h2.handle
info = K.GetDmabufInfo(dmabuf_fd=e.dmabuf_fd); K.ioctl(kfd, K.GET_DMABUF_INFO, info)
assert info.size == 0x20000 and info.gpu_id == 0x1a2b
os.close(e.dmabuf_fd)
assert K.try_ioctl(kfd, K.GET_DMABUF_INFO, K.GetDmabufInfo(dmabuf_fd=e.dmabuf_fd)) == -9
K.ioctl(render, K.GEM_CLOSE, K.GemClose(h1.handle))
assert K.try_ioctl(render, K.GEM_CLOSE, K.GemClose(h1.handle)) == -22
bo = K.XdnaCreateBo(0, 0, 0x1000, 1); K.ioctl(accel, K.XDNA_CREATE_BO, bo)
K.ioctl(accel, K.GEM_CLOSE, K.GemClose(bo.handle))
assert K.try_ioctl(accel, K.GEM_CLOSE, K.GemClose(bo.handle)) == -22
pid = os.fork()
if pid == 0:
    code = 0 if K.try_ioctl(kfd, K.GET_VERSION, K.GetVersion()) == -9 else 1
    os._exit(code)
_, st = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(st) == 0
print("ok")
"""


@pytest.mark.skipif(not devns.available(), reason="needs root and unshare")
def test_fake_device_scenario_and_ioctl_created_fds(tmp_path):
    root = Path(__file__).parent.parent
    script = tmp_path / "s.py"
    script.write_text(SCENARIO % {"tests": str(Path(__file__).parent), "root": str(root)})
    p = devns.run([sys.executable, str(script)], prefix=tmp_path / "sc")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]
    files = sorted(tmp_path.glob("sc.*"), key=lambda f: f.stat().st_size)
    assert len(files) == 2  # parent and the forked child
    child, parent = (logread.read(f) for f in files)
    text = "\n".join(parent.lines)
    m = re.search(
        r"AMDKFD_IOC_EXPORT_DMABUF, \{handle=0x1a2b00000000, flags=O_CLOEXEC\} => "
        r"\{dmabuf_fd=(\d+)</memfd:dmabuf>\(deleted\)\}\) = 0",
        text,
    )
    assert m, text[-3000:]
    fd = m[1]
    assert re.search(rf"DRM_IOCTL_PRIME_FD_TO_HANDLE, \{{fd={fd}<[^>]*>\(deleted\)\}} => \{{handle=0x1\}}", text)
    assert re.search(rf"close\({fd}</memfd:dmabuf>\(deleted\)\) = 0", text)
    assert re.search(
        r"DRM_IOCTL_AMDXDNA_CREATE_BO, \{flags=0, vaddr=0, size=0x1000, type=AMDXDNA_BO_SHARE\} "
        r"=> \{handle=0x1\}\) = 0",
        text,
    )
    assert len(re.findall(r"DRM_IOCTL_GEM_CLOSE, \{handle=0x1\}\) = -1 EINVAL", text)) == 2
    # GET_VERSION is decoded: no input fields, so a failed one shows {}
    assert re.search(r"AMDKFD_IOC_GET_VERSION, \{\}\) = -1 EBADF", "\n".join(child.lines))
    assert child.lines[-1] == "# exit status=0" and parent.lines[-1] == "# exit status=0"


@pytest.mark.skipif(not devns.available(), reason="needs root and unshare")
def test_project_parser_reads_capture_output(tmp_path):
    from coremodels import trace_events

    root = Path(__file__).parent.parent
    script = tmp_path / "s.py"
    script.write_text(SCENARIO % {"tests": str(Path(__file__).parent), "root": str(root)})
    p = devns.run([sys.executable, str(script)], prefix=tmp_path / "sc")
    assert p.returncode == 0, p.stderr[-2000:]
    parent = max(tmp_path.glob("sc.*"), key=lambda f: f.stat().st_size)
    evs = [e for e in trace_events(str(parent))[0] if getattr(e, "name", "") == "ioctl"]
    exp = [e for e in evs if getattr(e, "ioctl", "") == "AMDKFD_IOC_EXPORT_DMABUF"]
    assert len(exp) == 1 and exp[0].arg == {"handle": 0x1A2B00000000, "flags": 0o2000000}
    assert set(exp[0].out) == {"dmabuf_fd"}
    closes = [e for e in evs if getattr(e, "ioctl", "") == "DRM_IOCTL_GEM_CLOSE"]
    assert [e.err for e in closes] == [None, "EINVAL", None, "EINVAL"]
