"""fd-held-open end to end: a generated capture log (the preload dialect, whose
closes name the fd's path as strace -y does) through the parser and the
models.  An exported dma-buf fd is imported once and closed after a gap; the
close is no use of the fd, so the gap runs from the import."""

from __future__ import annotations

import pytest

from rocrtrace.engine import analyze

T0 = 1764435600.0
HEAD = "# rocrtrace-log 1\n# pid=4242 ppid=4241 exe=gpu-app page_size=4096 start=1764435600.000000\n"
CALLS = (
    'openat(AT_FDCWD, "/dev/kfd", O_RDWR|O_CLOEXEC) = 3</dev/kfd>',
    'openat(AT_FDCWD, "/dev/dri/renderD128", O_RDWR|O_CLOEXEC) = 4</dev/dri/renderD128>',
    "ioctl(3</dev/kfd>, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, {va_addr=0, size=0x200000, "
    "gpu_id=0x1a2b, flags=KFD_IOC_ALLOC_MEM_FLAGS_VRAM|KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, "
    "mmap_offset=0} => {handle=0x1a2b00000000, mmap_offset=0x10000000000}) = 0",
    "ioctl(3</dev/kfd>, AMDKFD_IOC_EXPORT_DMABUF, {handle=0x1a2b00000000, flags=O_CLOEXEC} "
    "=> {dmabuf_fd=5</memfd:dmabuf>(deleted)}) = 0",
    "ioctl(4</dev/dri/renderD128>, DRM_IOCTL_PRIME_FD_TO_HANDLE, {fd=5</memfd:dmabuf>(deleted)} => {handle=0x1}) = 0",
)


def trace(gap: float, close: str) -> str:
    """The calls 20 us apart, then `close` `gap` seconds after the import."""
    lines = [f"4242  {T0 + 20e-6 * i:.6f} {c} <0.000010>" for i, c in enumerate(CALLS)]
    t = T0 + 20e-6 * (len(CALLS) - 1) + gap
    lines.append(f"4242  {t:.6f} {close} = 0 <0.000010>")
    return HEAD + "\n".join(lines) + "\n# exit status=0\n"


@pytest.mark.parametrize("close", ["close(5</memfd:dmabuf>(deleted))", "close(5)"])
@pytest.mark.parametrize("gap, held", [(30.0, True), (11.0, True), (9.0, False), (1.0, False)])
def test_export_closed_after_a_gap(tmp_path, close, gap, held):
    log = tmp_path / "held.log"
    log.write_text(trace(gap, close))
    res = analyze([str(log)])
    assert sum(i.unparsed for i in res.inputs) == 0
    found = [f for f in res.findings if f.rule == "fd-held-open"]
    assert [f.rule for f in res.findings] == [f.rule for f in found], [f.message for f in res.findings]
    if not held:
        assert found == []  # closed within the threshold (10 s): quiet
        return
    (f,) = found
    assert f.severity == "note" and f.subject["fd"] == 5
    assert f"after its last use (DRM_IOCTL_PRIME_FD_TO_HANDLE at {log}:7)" in f.message
    assert f"until it was closed by close at {log}:8" in f.message
    assert f"{gap:.1f} s later" in f.message
