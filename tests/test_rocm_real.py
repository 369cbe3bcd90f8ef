"""The real ROCm 5.2 user space (Debian's libhsa-runtime64, libhsakmt,
rocminfo) on the fake KFD, captured by the real capture library.

tests/rocm/hsaops.c and kmtops.c call the runtime's and the thunk's APIs,
correctly and misusing them; each run is analyzed and must give exactly its
expected errors and warnings (notes are free: a fake device's coverage
caveats).  Structure is checked too: what each API issued, decoded as the
kernel structs say, so the expectations rest on what the runtime really did.
Runs under ``setarch -R`` (no ASLR) so that malloc's placement, and with it
which pages buffers share, is the same every run.
"""

from __future__ import annotations

import glob
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from rocrtrace import _engine, kfd
from rocrtrace.engine import analyze

from coremodels import end
from fakedev import devns
from fakedev.cbuild import build
from vocab import kind

HERE = Path(__file__).parent / "rocm"
PACKAGES = {  # what each piece needs: Debian 12's ROCm 5.2.3 packages
    "/usr/include/hsa/hsa_ext_amd.h": "libhsa-runtime-dev",
    "/usr/include/hsakmt.h": "libhsakmt-dev",
    "/usr/bin/rocminfo": "rocminfo",
}


def _missing() -> str | None:
    if not devns.available():
        return "needs root and unshare for the fake device namespace"
    gone = [pkg for path, pkg in PACKAGES.items() if not os.path.exists(path)]
    if gone or not shutil.which("setarch"):
        return "ROCm 5.2 packages not installed: " + " ".join(gone or ["util-linux (setarch)"])
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

# program, mode -> the errors and warnings it must give (rule -> count), and no others
EXPECTED = {
    ("hsaops", "init"): {},
    ("hsaops", "svm_malloc"): {},
    ("hsaops", "svm_mmap"): {},
    ("hsaops", "svm_neighbours"): {},
    ("hsaops", "lock"): {},
    ("hsaops", "lock_nested"): {},
    ("hsaops", "lock_overlap"): {},
    ("hsaops", "lock_neighbours"): {},
    ("hsaops", "lock_svm_neighbour"): {},
    ("hsaops", "lock_threads"): {},
    ("hsaops", "revoke_locked"): {},  # SVM changes cannot hurt a userptr lock
    ("hsaops", "pool"): {},
    ("hsaops", "ipc"): {},
    ("kmtops", "register"): {},
    ("kmtops", "svm"): {},
    ("kmtops", "xnack"): {},
    ("kmtops", "events"): {},
    ("kmtops", "queue"): {},
    ("kmtops", "default_access"): {},  # XNACK off: the grant-less registration had no access
    ("rocminfo", ""): {},
    # misuse the kernel sees
    ("hsaops", "svm_pool"): {"svm-bad-range": 1},  # SVM on a userptr BO: EADDRINUSE
    ("hsaops", "bug_revoke_shared"): {"svm-over-revoke": 1},
    ("hsaops", "bug_close_kfd"): {"fd-use-after-close": 2},  # the ALLOC, and its retry
    ("kmtops", "bug_over_revoke"): {"svm-over-revoke": 1},
    ("kmtops", "bug_over_revoke_twice"): {"svm-over-revoke": 2},  # two fingerprints
    ("kmtops", "bug_close_kfd"): {"fd-use-after-close": 1},
    # misuse the runtime itself absorbs: no ioctl, nothing a trace can hold against it
    ("hsaops", "bug_double_unlock"): {},
    ("hsaops", "bug_free_twice"): {},
    ("hsaops", "bug_use_after_free"): {},
    ("kmtops", "bug_double_deregister"): {},
}

LIBS = {"hsaops": ["-lhsa-runtime64"], "kmtops": ["-lhsakmt"]}


@pytest.fixture(scope="module")
def topology(tmp_path_factory):
    return devns.write_topology(tmp_path_factory.mktemp("kfd") / "topology")


def capture(prog: str, mode: str, topology, tmp_path, stack_depth: int = 0, xnack: bool = False):
    """Run one program in the fake namespace under the capture library;
    (analysis result, parsed events, process result)."""
    if prog == "rocminfo":
        cmd = ["rocminfo"]
    else:
        exe = build(HERE / f"{prog}.c", prog, flags=LIBS[prog])
        cmd = [str(exe), mode]
    res = devns.run(
        ["setarch", "x86_64", "-R", *cmd],
        gpus=(devns.ROCM_GPU,),
        capture=True,
        prefix=tmp_path / "log",
        topology=topology,
        stack_depth=stack_depth,
        timeout=120,
        xnack=xnack,
    )
    logs = sorted(glob.glob(str(tmp_path / "log.*")))
    assert logs, res.stderr
    arg = logs[0] if len(logs) == 1 else str(tmp_path / "log.*")
    events = _engine.trace_events(arg)[0]
    return analyze([arg]), events, res, logs


def judged(res) -> Counter:
    """Occurrences per rule, notes aside (a repeated finding is one finding
    that counts them)."""
    out: Counter = Counter()
    for f in res.findings:
        if f.severity != "note":
            out[f.rule] += f.details.get("occurrences", 1)
    return out


@pytest.mark.parametrize("prog,mode", list(EXPECTED), ids=[f"{p}-{m}" if m else p for p, m in EXPECTED])
def test_exact_findings(prog, mode, topology, tmp_path):
    res, events, proc, logs = capture(prog, mode, topology, tmp_path)
    assert proc.returncode == 0, proc.stderr  # every call answered as expected
    assert sum(i.unparsed for i in res.inputs) == 0, [i.unparsed_samples for i in res.inputs]
    assert dict(judged(res)) == EXPECTED[(prog, mode)], [f.message for f in res.findings]
    # never two SVM findings on one fingerprint (bug_close_kfd's two
    # identical EBADF ALLOCs are one fd finding "2 times")
    fps = [f.fingerprint for f in res.findings if f.rule.startswith("svm-")]
    assert len(fps) == len(set(fps)), "two findings share a fingerprint"
    if mode != "bug_close_kfd":  # that one _exits on purpose
        for log in logs:
            assert "# exit status=0" in Path(log).read_text()


def _ioctls(events, nr):
    return [e for e in events if kind(e) == "Ioctl" and e.type == kfd.TYPE_KFD and e.nr == nr]


def _intents(events, name):
    return [e for e in events if kind(e) == "Intent" and e.name == name]


def _inside(ev, outer):
    # both lines give times and durations to the microsecond, each cut: an
    # inner call may seem to end up to a microsecond past its outer call
    return outer.time <= ev.time <= end(outer) and end(ev) <= end(outer) + 1.5e-6 and ev.tid == outer.tid


def test_hsa_init_ioctls_are_decoded(topology, tmp_path):
    """What hsa_init issues, with the structs the capture library decodes."""
    _, events, _, _ = capture("hsaops", "init", topology, tmp_path)
    (ver,) = _ioctls(events, 0x01)
    assert ver.out == {"major_version": 1, "minor_version": 17}
    (ap,) = _ioctls(events, 0x14)
    assert ap.out == {"num_of_nodes": 1}
    (acq,) = _ioctls(events, 0x15)
    assert acq.arg["gpu_id"] == devns.ROCM_GPU
    opened = {
        fd: path for e in events if kind(e) == "FdCreate" and e.time < acq.time for fd, path in zip(e.fds, e.paths)
    }
    assert opened[acq.arg["drm_fd"]] == "/dev/dri/renderD128"  # the VM of a render fd
    (pol,) = _ioctls(events, 0x04)
    assert pol.arg["gpu_id"] == devns.ROCM_GPU and pol.arg["default_policy"] in (0, 1)
    (xn,) = _ioctls(events, 0x21)
    assert xn.arg == {"xnack_enabled": -1} and xn.out == {"xnack_enabled": 0}  # a query
    evs = _ioctls(events, 0x08)
    assert [e.arg["event_type"] for e in evs] == [8, 0]  # memory event, then a signal
    assert evs[1].out["event_page_offset"] == 2 << 62
    assert all(e.arg is not None for e in _ioctls(events, 0x16))


def test_create_queue_is_decoded(topology, tmp_path):
    """ROCm 5.2's thunk sends a 96-byte CREATE_QUEUE (its own header has the
    fields upstream added in 6.12): decoded all the same."""
    _, events, _, _ = capture("kmtops", "queue", topology, tmp_path)
    (q,) = _ioctls(events, 0x02)
    assert q.size == 96
    assert q.arg["queue_type"] == 2 and q.arg["gpu_id"] == devns.ROCM_GPU  # COMPUTE_AQL
    assert q.arg["ring_size"] == 0x10000 and q.arg["queue_percentage"] == 100
    assert q.out["queue_id"] == 0 and q.out["doorbell_offset"] >> 62 == 3  # DOORBELL mmap type


def test_ipc_needs_a_rocm_only_ioctl(topology, tmp_path):
    """ROCm 5.2's hsa_amd_ipc_memory_create sends IPC_EXPORT_HANDLE (0x81, the
    ROCm DKMS driver's number); an upstream KFD has none (EINVAL)."""
    _, events, proc, _ = capture("hsaops", "ipc", topology, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (ipc,) = _ioctls(events, 0x81)
    assert ipc.ioctl == "AMDKFD_IOC_IPC_EXPORT_HANDLE" and ipc.err == "EINVAL"


def test_lock_is_a_userptr_buffer(topology, tmp_path):
    """ROCm 5.2's hsa_amd_memory_lock: ALLOC(USERPTR) + MAP at a GPU VA of its
    own, no SVM ioctl; unlock UNMAPs and FREEs it (ref/real-rocm-on-fake-kfd)."""
    _, events, _, _ = capture("hsaops", "lock", topology, tmp_path)
    (lock,) = _intents(events, "hsa_amd_memory_lock")
    (unlock,) = _intents(events, "hsa_amd_memory_unlock")
    inside = [e for e in events if kind(e) == "Ioctl" and _inside(e, lock)]
    assert [e.nr for e in inside] == [0x16, 0x18]
    alloc = inside[0]
    assert alloc.arg["flags"] & kfd.ALLOC_FLAG_USERPTR
    assert alloc.arg["mmap_offset"] == lock.args["host_ptr"] & ~0xFFF
    assert alloc.arg["va_addr"] != lock.args["host_ptr"] & ~0xFFF
    assert not _ioctls(events, 0x20)
    handle = alloc.out["handle"]
    assert [(e.nr, e.arg["handle"]) for e in events if kind(e) == "Ioctl" and _inside(e, unlock)] == [
        (0x19, handle),
        (0x17, handle),
    ]


def test_svm_attributes_set_rounds_outward(topology, tmp_path):
    """hsa_amd_svm_attributes_set on a 64 KiB malloc'd buffer: one SET_ATTR per
    call inside its window, on the range rounded outward, in the shapes the
    ref lists; hsa_amd_svm_attributes_get is one GET_ATTR whose ACCESS the
    kernel answers as ACCESS_IN_PLACE."""
    res, events, _, _ = capture("hsaops", "svm_malloc", topology, tmp_path)
    sets = _intents(events, "hsa_amd_svm_attributes_set")
    assert len(sets) == 2
    svm = _ioctls(events, 0x20)
    shapes = []
    for call in sets:
        (rec,) = [e for e in svm if _inside(e, call)]
        ptr, size = call.args["ptr"], call.args["size"]
        assert rec.arg["start_addr"] == ptr & ~0xFFF
        assert rec.arg["start_addr"] + rec.arg["size"] == (ptr + size + 0xFFF) & ~0xFFF
        shapes.append(rec.arg["attrs"])
    assert shapes == [
        [(kfd.ATTR_ACCESS_IN_PLACE, devns.ROCM_GPU), (kfd.ATTR_SET_FLAGS, kfd.FLAG_COHERENT)],
        [(kfd.ATTR_NO_ACCESS, devns.ROCM_GPU)],
    ]
    (get,) = [e for e in svm if e.arg["op"] == kfd.SVM_OP_GET_ATTR]
    # ACCESS_QUERY asks ACCESS, GLOBAL_FLAG asks both flag words
    assert [t for t, _ in get.arg["attrs"]] == [kfd.ATTR_ACCESS, kfd.ATTR_CLR_FLAGS, kfd.ATTR_SET_FLAGS]
    assert get.out["attrs"][0] == (kfd.ATTR_ACCESS_IN_PLACE, devns.ROCM_GPU)


def test_xnack_mode_decides_default_access(topology, tmp_path):
    """The same program with XNACK on: the registration that granted nothing
    relied on default access (every GPU), and the neighbour's revoke took it."""
    res, events, proc, _ = capture("kmtops", "default_access", topology, tmp_path, xnack=True)
    assert proc.returncode == 0, proc.stderr
    (xn,) = _ioctls(events, 0x21)
    assert xn.out == {"xnack_enabled": 1}
    assert dict(judged(res)) == {"svm-over-revoke": 1}
    (f,) = [f for f in res.findings if f.rule == "svm-over-revoke"]
    assert f.cause == "shared-page" and f.details["pages"] == 1


def test_wait_events_blocks_until_set(topology, tmp_path):
    """The fake's WAIT_EVENTS: a timeout, then a wait another thread's
    SET_EVENT ends (the program itself checks the status and the time)."""
    _, events, proc, _ = capture("kmtops", "events", topology, tmp_path)
    assert proc.returncode == 0, proc.stderr
    w1, w2 = _ioctls(events, 0x0C)
    (st,) = _ioctls(events, 0x0A)
    assert w1.dur >= 0.045
    # the set comes 100 ms into the wait, which it ends.  A record's time is
    # CLOCK_REALTIME at entry and its duration CLOCK_MONOTONIC, so across
    # two threads the end is only as exact as the two clocks agree: this VM
    # slews its realtime clock, and once put the set 0.3 ms after the end.
    slack = 0.005
    assert w2.dur >= 0.09
    assert st.tid != w2.tid and w2.time + 0.09 < st.time < end(w2) + slack


def test_destroy_event_names_the_events_create_event_made(topology, tmp_path):
    """DESTROY_EVENT is decoded: the runtime destroys exactly the events whose
    ids CREATE_EVENT answered, each once, after it was made (hsaKmtDestroyEvent
    in kmtops events; hsa_shut_down's in hsaops init)."""
    for prog, mode in (("kmtops", "events"), ("hsaops", "init")):
        (tmp_path / prog).mkdir()
        _, events, proc, _ = capture(prog, mode, topology, tmp_path / prog)
        assert proc.returncode == 0, proc.stderr
        created = {e.out["event_id"]: e for e in _ioctls(events, 0x08) if e.out}
        destroyed = _ioctls(events, 0x09)
        assert destroyed, prog
        assert all(e.ioctl == "AMDKFD_IOC_DESTROY_EVENT" and set(e.arg) == {"event_id"} for e in destroyed)
        assert sorted(e.arg["event_id"] for e in destroyed) == sorted(created)
        assert all(created[e.arg["event_id"]].time < e.time for e in destroyed)


def test_rocminfo_sees_the_fake_gpu(topology, tmp_path):
    res, events, proc, logs = capture("rocminfo", "", topology, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "gfx1030" in proc.stdout and "*** Done ***" in proc.stdout
    assert len(logs) > 1  # lsmod, grep: children write their own logs


def test_main_false_positives_are_gone(topology, tmp_path):
    """The trace that gave one svm-over-revoke and two svm-stale-no-access on
    a correct program (ROCm 5.2 on the fake KFD): with stacks, as people
    capture."""
    res, events, proc, _ = capture("hsaops", "lock_svm_neighbour", topology, tmp_path, stack_depth=8)
    assert proc.returncode == 0
    assert judged(res) == Counter()
    assert _ioctls(events, 0x20) and _intents(events, "hsa_amd_memory_lock")
