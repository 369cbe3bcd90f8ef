"""Deterministic generator of large, realistic traces for the benchmarks.

* strace: what `strace -f -o F -ttt -T -yy` prints for a GPU program: several
  threads, WAIT_EVENTS blocking across other threads' lines (unfinished /
  resumed pairs), SVM ioctls as strace shows them (_IOC with the size field),
  allocations, opens and closes, mmap/munmap.
* preload: the capture library's dialect with decoded SVM structs: host
  registrations that share boundary pages with their neighbours, registered
  and revoked the way a fixed runtime does it (revoke = own pages minus the
  survivors), lock/unlock intent calls, allocations, dma-buf exports.

Both are clean by construction (no findings expected), so the benchmark
measures the analyzer, not the size of its report.

    python benchmarks/gen_traces.py strace 1000000 out.log
    python benchmarks/gen_traces.py preload 1000000 out.log
"""

from __future__ import annotations

import random
import re
import sys

PAGE = 0x1000
GPU = 0x1A2B
T0 = 1764435600.0


class Clock:
    def __init__(self):
        self.t = T0

    def tick(self, dt=0.000013):
        self.t += dt
        return self.t


def strace_lines(n: int, seed: int = 1):
    rnd = random.Random(seed)
    clk = Clock()
    tids = [4242 + i for i in range(8)]
    out = []
    emitted = 0
    w = out.append
    w('4242  %.6f execve("./gpu-app", ["./gpu-app"], 0x7ffd9fa3aa18 /* 35 vars */) = 0 <0.000300>' % clk.tick())
    w(
        '4242  %.6f openat(AT_FDCWD</work>, "/dev/kfd", O_RDWR|O_CLOEXEC) = 3</dev/kfd<char 238:0>> <0.000020>'
        % clk.tick()
    )
    w(
        '4242  %.6f openat(AT_FDCWD</work>, "/dev/dri/renderD128", O_RDWR|O_CLOEXEC) = 4</dev/dri/renderD128<char 226:128>> <0.000020>'
        % clk.tick()
    )
    for t in tids[1:]:
        w(
            "4242  %.6f clone3({flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID, child_tid=0x7f7e2ee5f990, parent_tid=0x7f7e2ee5f990, exit_signal=0, stack=0x7f7e2e65f000, stack_size=0x7fff80, tls=0x7f7e2ee5f6c0} => {parent_tid=[%d]}, 88) = %d <0.000050>"
            % (clk.tick(), t, t)
        )
    emitted = len(out)
    yield from out
    waiting: dict[int, float] = {}
    fdnext = 10
    maps = []
    while emitted < n - 2:
        tid = rnd.choice(tids)
        r = rnd.random()
        now = clk.tick()
        if tid in waiting:
            start = waiting.pop(tid)
            yield "%-5d %.6f <... ioctl resumed>) = 0 <%.6f>" % (tid, now, now - start)
        elif r < 0.25:
            waiting[tid] = now
            yield "%-5d %.6f ioctl(3</dev/kfd<char 238:0>>, AMDKFD_IOC_WAIT_EVENTS, 0x7f%09x <unfinished ...>" % (
                tid,
                now,
                rnd.getrandbits(32),
            )
        elif r < 0.45:
            size = rnd.choice((0x20, 0x28, 0x30, 0x38))
            yield (
                "%-5d %.6f ioctl(3</dev/kfd<char 238:0>>, _IOC(_IOC_READ|_IOC_WRITE, 0x4b, 0x20, %#x), 0x7ffc%08x) = 0 <0.000041>"
                % (tid, now, size, rnd.getrandbits(32))
            )
        elif r < 0.55:
            yield (
                "%-5d %.6f ioctl(3</dev/kfd<char 238:0>>, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, 0x7ffc%08x) = 0 <0.000120>"
                % (tid, now, rnd.getrandbits(32))
            )
        elif r < 0.65:
            yield (
                "%-5d %.6f ioctl(4</dev/dri/renderD128<char 226:128>>, DRM_IOCTL_AMDGPU_GEM_VA, 0x7ffc%08x) = 0 <0.000030>"
                % (tid, now, rnd.getrandbits(32))
            )
        elif r < 0.75:
            fd = fdnext
            fdnext = 10 + (fdnext - 9) % 50
            yield (
                '%-5d %.6f openat(AT_FDCWD</work>, "/sys/class/kfd/kfd/topology/nodes/1/properties", O_RDONLY) = %d</sys/devices/virtual/kfd/kfd/topology/nodes/1/properties> <0.000015>'
                % (tid, now, fd)
            )
            yield (
                '%-5d %.6f read(%d</sys/devices/virtual/kfd/kfd/topology/nodes/1/properties>, "cpu_cores_count 0\\nsimd_count 256\\n"..., 4096) = 1432 <0.000009>'
                % (tid, clk.tick(), fd)
            )
            yield "%-5d %.6f close(%d</sys/devices/virtual/kfd/kfd/topology/nodes/1/properties>) = 0 <0.000004>" % (
                tid,
                clk.tick(),
                fd,
            )
            emitted += 2
        elif r < 0.87:
            addr = 0x7F0000000000 + rnd.randrange(1 << 20) * PAGE
            maps.append(addr)
            yield (
                "%-5d %.6f mmap(NULL, 2097152, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = %#x <0.000011>"
                % (tid, now, addr)
            )
        elif maps:
            addr = maps.pop(rnd.randrange(len(maps)))
            yield "%-5d %.6f munmap(%#x, 2097152) = 0 <0.000020>" % (tid, now, addr)
        else:
            yield "%-5d %.6f futex(0x7f7e2ee5f990, FUTEX_WAKE_PRIVATE, 1) = 0 <0.000003>" % (tid, now)
        emitted += 1
    for tid, start in list(waiting.items()):
        now = clk.tick()
        yield "%-5d %.6f <... ioctl resumed>) = 0 <%.6f>" % (tid, now, now - start)
    yield "4242  %.6f exit_group(0) = ?" % clk.tick()
    for t in tids[1:]:
        yield "%-5d +++ exited with 0 +++" % t
    yield "4242  +++ exited with 0 +++"


def _svm_line(tid, t, start, size, attrs, dur=0.000041):
    body = ", ".join("{type=%s, value=%s}" % a for a in attrs)
    return (
        "%-5d %.6f ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {start_addr=%#x, size=%#x, "
        "op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=%d, attrs=[%s]}) = 0 <%.6f>" % (tid, t, start, size, len(attrs), body, dur)
    )


def preload_lines(n: int, seed: int = 2):
    """Registrations of glibc-like chunks (16-byte headers) that share their
    boundary pages, revoked as the fixed runtime does (own pages minus live)."""
    rnd = random.Random(seed)
    clk = Clock()
    tids = [5000 + i for i in range(4)]
    yield "# rocrtrace-log 1"
    yield "# pid=5000 ppid=1 exe=/usr/bin/gpu-app page_size=4096 start=%.6f" % T0
    yield "# fd-snapshot start"
    yield "# fd 0 /dev/pts/0"
    yield "# fd 1 /dev/pts/0"
    yield "# fd 2 /dev/pts/0"
    yield "# fd 3 /dev/kfd"
    emitted = 7
    base = 0x7F3A00000000
    arena = 4096  # pages in the arena
    yield (
        "%-5d %.6f mmap(%#x, %d, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED, -1, 0) = %#x <0.000010>"
        % (tids[0], clk.tick(), base, arena * PAGE, base)
    )
    emitted += 1
    live: dict[int, tuple[int, int]] = {}  # ptr -> (first page, last page+1)
    pages: dict[int, int] = {}  # page -> live registrations on it
    handle = 0x1A2B00000001
    while emitted < n - 3:
        tid = rnd.choice(tids)
        r = rnd.random()
        if r < 0.45 and len(live) < 300:
            chunk = rnd.randrange(arena - 20)
            ptr = base + chunk * PAGE + 0x10
            if ptr in live:
                continue
            size = rnd.choice((0x10000, 0x4000, 0x800))
            p0 = (ptr & ~(PAGE - 1)) // PAGE
            p1 = (ptr + size + PAGE - 1) // PAGE
            t = clk.tick()
            yield _svm_line(
                tid,
                t + 0.000002,
                p0 * PAGE,
                (p1 - p0) * PAGE,
                [
                    ("KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE", "%#x" % GPU),
                    ("KFD_IOCTL_SVM_ATTR_SET_FLAGS", "KFD_IOCTL_SVM_FLAG_COHERENT"),
                    ("KFD_IOCTL_SVM_ATTR_CLR_FLAGS", "KFD_IOCTL_SVM_FLAG_EXT_COHERENT"),
                ],
            )
            yield "%-5d %.6f hsa_amd_memory_lock(%#x, %#x, [0x5612a0], 1, [%#x]) = 0 <0.000060>" % (
                tid,
                t,
                ptr,
                size,
                ptr,
            )
            clk.tick(0.00007)
            live[ptr] = (p0, p1)
            for p in range(p0, p1):
                pages[p] = pages.get(p, 0) + 1
            emitted += 2
        elif r < 0.85 and live:
            ptr = rnd.choice(list(live))
            p0, p1 = live.pop(ptr)
            for p in range(p0, p1):
                pages[p] -= 1
            t = clk.tick()
            runs = []
            p = p0
            while p < p1:  # revoke only the pages nobody else registered
                if pages[p]:
                    p += 1
                    continue
                q = p
                while q < p1 and not pages[q]:
                    q += 1
                runs.append((p, q))
                p = q
            for a, b in runs:
                yield _svm_line(
                    tid, t + 0.000002, a * PAGE, (b - a) * PAGE, [("KFD_IOCTL_SVM_ATTR_NO_ACCESS", "%#x" % GPU)]
                )
                emitted += 1
            for p in range(p0, p1):
                if not pages[p]:
                    del pages[p]
            yield "%-5d %.6f hsa_amd_memory_unlock(%#x) = 0 <0.000090>" % (tid, t, ptr)
            clk.tick(0.0001)
            emitted += 1
        elif r < 0.93:
            t = clk.tick()
            yield (
                "%-5d %.6f ioctl(3</dev/kfd>, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, {va_addr=0, size=0x200000, "
                "gpu_id=%#x, flags=KFD_IOC_ALLOC_MEM_FLAGS_VRAM|KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, mmap_offset=0} "
                "=> {handle=%#x, mmap_offset=0x100000000}) = 0 <0.000100>" % (tid, t, GPU, handle)
            )
            yield (
                "%-5d %.6f ioctl(3</dev/kfd>, AMDKFD_IOC_EXPORT_DMABUF, {handle=%#x, flags=O_CLOEXEC} "
                "=> {dmabuf_fd=9</dmabuf:>}) = 0 <0.000020>" % (tid, clk.tick(), handle)
            )
            yield "%-5d %.6f close(9</dmabuf:>) = 0 <0.000003>" % (tid, clk.tick())
            yield (
                "%-5d %.6f ioctl(3</dev/kfd>, AMDKFD_IOC_FREE_MEMORY_OF_GPU, {handle=%#x}) = 0 <0.000030>"
                % (tid, clk.tick(), handle)
            )
            handle += 1
            emitted += 4
        else:
            yield "%-5d %.6f ioctl(3</dev/kfd>, AMDKFD_IOC_WAIT_EVENTS, 0x7ffc12345678) = 0 <0.000200>" % (
                tid,
                clk.tick(),
            )
            emitted += 1
    yield "# fd-snapshot exit"
    yield "# fd 3 /dev/kfd"
    yield "# exit status=0"


_EPOCH = re.compile(r"^(\d+ +)(\d{10})\.(\d{6}) ")


def time_of_day(line: str) -> str:
    """-tt form of a -ttt line (UTC), for parsers that only read -tt."""
    m = _EPOCH.match(line)
    if not m:
        return line
    secs = int(m.group(2)) % 86400
    return "%s%02d:%02d:%02d.%s %s" % (
        m.group(1),
        secs // 3600,
        secs // 60 % 60,
        secs % 60,
        m.group(3),
        line[m.end() :],
    )


def main(argv):
    import argparse

    ap = argparse.ArgumentParser(description="Write a deterministic GPU-program trace.")
    ap.add_argument("kind", choices=["strace", "preload"])
    ap.add_argument("lines", type=int, help="number of lines")
    ap.add_argument("path", help="output file")
    ap.add_argument("--tt", action="store_true", help="strace: -tt time of day, not -ttt")
    a = ap.parse_args(argv[1:])
    kind, n, path, tt = a.kind, a.lines, a.path, a.tt
    gen = strace_lines if kind == "strace" else preload_lines
    with open(path, "w") as fh:
        buf = []
        for line in gen(n):
            buf.append(time_of_day(line) if tt else line)
            if len(buf) >= 10000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")


if __name__ == "__main__":
    main(sys.argv)
