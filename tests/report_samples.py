"""Analysis results built from constructed events and findings, shaped like
what the models produce, for the reporter, baseline and table tests."""

from __future__ import annotations

from rocrtrace import kfd
from rocrtrace.findings import Evidence, Finding
from rocrtrace.result import AnalysisResult
from vocab import Close, Event, Exit, FdCreate, Frame, InputInfo, Ioctl, Mmap

TRACE = "traces/c1.log"
OTHER = "traces/vmm.log"
HSA = "/opt/rocm/lib/libhsa-runtime64.so.1"


def svm(line, tid, t, start, size, attrs, *, dur=0.00004, err=None, stack=(), file=TRACE, pid=4242):
    text = (
        f"ioctl(3</dev/kfd>, AMDKFD_IOC_SVM, {{start_addr={start:#x}, size={size:#x}, "
        f"op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr={len(attrs)}, attrs=[...]}}) = " + ("0" if err is None else f"-1 {err}")
    )
    return Ioctl(
        file=file,
        line=line,
        seq=line,
        pid=pid,
        tid=tid,
        time=t,
        dur=dur,
        ret=0 if err is None else -1,
        err=err,
        fd=3,
        path="/dev/kfd",
        request=kfd.ioc(3, kfd.TYPE_KFD, 0x20, 24 + 8 * len(attrs)),
        dir=3,
        type=kfd.TYPE_KFD,
        nr=0x20,
        size=24 + 8 * len(attrs),
        ioctl="AMDKFD_IOC_SVM",
        arg={"start_addr": start, "size": size, "op": kfd.SVM_OP_SET_ATTR, "nattr": len(attrs), "attrs": list(attrs)},
        stack=stack,
        text=text,
    )


def ioctl(name, nr, line, tid, t, dur, *, err=None, size=8, file=TRACE, pid=4242):
    return Ioctl(
        file=file,
        line=line,
        seq=line,
        pid=pid,
        tid=tid,
        time=t,
        dur=dur,
        ret=0 if err is None else -1,
        err=err,
        fd=3,
        type=kfd.TYPE_KFD,
        nr=nr,
        size=size,
        ioctl=name,
        request=kfd.ioc(3, kfd.TYPE_KFD, nr, size),
        text=f"ioctl(3</dev/kfd>, {name}, 0x7ffd0000) = " + ("0" if err is None else f"-1 {err}"),
    )


REVOKE = [
    (kfd.ATTR_NO_ACCESS, 0x1A2B),
    (kfd.ATTR_CLR_FLAGS, kfd.FLAG_COHERENT),
    (kfd.ATTR_CLR_FLAGS, kfd.FLAG_EXT_COHERENT),
]
REGISTER = [(kfd.ATTR_ACCESS_IN_PLACE, 0x1A2B), (kfd.ATTR_SET_FLAGS, kfd.FLAG_COHERENT)]


def revoke_stack():
    return (
        Frame(
            HSA,
            symbol="_ZN4rocr3AMD9SvmDeregisterEPv",
            sym_offset=0x5C,
            addr=0x1A2B30,
            function="rocr::AMD::SvmDeregister(void*)",
        ),
        Frame("/usr/lib/libamdhip64.so.6", symbol="hipHostUnregister", sym_offset=0x40, addr=0x3C0010),
        Frame(
            "/work/app/bin/sweep",
            symbol="main",
            sym_offset=0x120,
            addr=0x1230,
            function="main",
            source="src/sweep.cpp",
            source_line=42,
        ),
    )


def over_revoke() -> Finding:
    victim = svm(10, 4243, 1764435600.100000, 0x7F3A1C200000, 0x11000, REGISTER)
    released = svm(12, 4244, 1764435600.110000, 0x7F3A1C210000, 0x1000, REGISTER)
    rev = svm(20, 4244, 1764435600.123500, 0x7F3A1C200000, 0x11000, REVOKE, stack=revoke_stack())
    return Finding(
        rule="svm-over-revoke",
        message="NO_ACCESS for gpu 0x1a2b on 16 pages of a live registration "
        "(0x7f3a1c200000-0x7f3a1c210000) made on thread 4243",
        event=rev,
        subject={"kind": "svm-range", "start": "0x7f3a1c200000", "end": "0x7f3a1c210000", "gpu_ids": ["0x1a2b"]},
        evidence=[
            Evidence("revoke", rev),
            Evidence("released claim", released),
            Evidence("victim claim granted", victim, note="still locked"),
        ],
        cause="enclosing-range",
        key=("svm", "enclosing-range", "REVOKE"),
        details={"pages": 16, "gpus": ["0x1a2b"], "order": "certain"},
    )


def double_close() -> Finding:
    exp = Ioctl(
        file=OTHER,
        line=3,
        seq=3,
        pid=5000,
        tid=5000,
        time=10.0,
        dur=0.00002,
        ret=0,
        fd=3,
        type=kfd.TYPE_KFD,
        nr=0x24,
        size=16,
        ioctl="AMDKFD_IOC_EXPORT_DMABUF",
        text="ioctl(3</dev/kfd>, AMDKFD_IOC_EXPORT_DMABUF, {handle=0x66a4, "
        "flags=O_CLOEXEC} => {dmabuf_fd=7</dmabuf:>}) = 0",
    )
    c1 = Close(
        file=OTHER,
        line=4,
        seq=4,
        pid=5000,
        tid=5000,
        time=10.1,
        dur=0.000002,
        ret=0,
        fd=7,
        path="/dmabuf:",
        text="close(7</dmabuf:>) = 0",
    )
    # Trace text is untrusted: a path with an escape sequence, quotes, a
    # comma and colons must come out inert in every format.
    c2 = Close(
        file=OTHER,
        line=9,
        seq=9,
        pid=5000,
        tid=5001,
        time=10.2,
        dur=0.000001,
        ret=-1,
        err="EBADF",
        fd=7,
        text='close(7) = -1 EBADF (Bad file descriptor) \x1b[31m"x<y>&z",a:b%0A',
        stack=(Frame("/usr/lib/libc.so.6", symbol="close", sym_offset=0x14, addr=0x10F0A0),),
    )
    return Finding(
        rule="fd-double-close",
        message='fd 7 (dmabuf) closed twice: "second" close, a:b, 100% <sure>\nnext line',
        event=c2,
        subject={"kind": "fd", "fd": 7, "fd_kind": "dmabuf"},
        evidence=[Evidence("this close", c2), Evidence("previous close", c1), Evidence("created by", exp)],
        key=("close", "dmabuf", "export"),
    )


def leak(line: int, fd: int) -> Finding:
    create = FdCreate(
        file=OTHER,
        line=line,
        seq=line,
        pid=5000,
        tid=5000,
        time=11.0 + line,
        ret=fd,
        fds=(fd,),
        paths=("/dmabuf:",),
        origin="AMDKFD_IOC_EXPORT_DMABUF",
        text=f"ioctl(...) => {{dmabuf_fd={fd}</dmabuf:>}}) = 0",
        stack=(Frame(HSA, symbol="hsa_amd_vmem_export_shareable_handle", sym_offset=0x30, addr=0x2000),),
    )
    return Finding(
        rule="fd-leak",
        message=f"dma-buf fd {fd} still open at exit",
        event=create,
        subject={"kind": "fd", "fd": fd, "fd_kind": "dmabuf"},
        evidence=[Evidence("created by", create)],
        key=("leak", "dmabuf"),
    )


def unparsed() -> Finding:
    return Finding(
        rule="trace-unparsed",
        message="3 lines could not be parsed (first: 5, 6, 8)",
        event=None,
        subject={"kind": "process"},
        file=TRACE,
        line=5,
        key=("unparsed", TRACE),
        details={"lines": [5, 6, 8]},
    )


def inputs() -> list[InputInfo]:
    a = InputInfo(
        file=TRACE,
        format="preload",
        lines=120,
        events=100,
        unparsed=3,
        unparsed_samples=[(5, "garbage"), (6, "more"), (8, "x")],
    )
    b = InputInfo(file=OTHER, format="strace", lines=40, events=38)
    return [a, b]


def sample_result(fail_on: str = "error") -> AnalysisResult:
    r = AnalysisResult(inputs=inputs(), fail_on=fail_on)
    r.findings = [over_revoke(), double_close(), leak(30, 9), leak(31, 10), unparsed()]
    r.coverage = {
        "shows": ["ioctl structs (SVM ranges, dma-buf fds)", "stacks"],
        "cannot_show": ["traces/vmm.log: SVM ranges (strace prints no ioctl structs)"],
        "advice": ["capture with `rocrtrace capture --method preload` for SVM analysis"],
    }
    return r


def many_result(n_err: int, n_warn: int, n_note: int) -> AnalysisResult:
    """Lots of findings of each severity, for GitHub's per-level limits."""
    r = AnalysisResult(inputs=inputs())
    for i in range(n_err):
        f = double_close()
        f.event.line = 100 + i
        f.line = 100 + i
        r.findings.append(f)
    r.findings += [leak(200 + i, 20 + i) for i in range(n_warn)]
    for i in range(n_note):
        f = unparsed()
        f.line = 300 + i
        r.findings.append(f)
    return r


def ab_events():
    """Two small traces: B adds a per-GPU revoke shape and a re-grant."""
    t = 1764435600.0
    a: list[Event] = [ioctl("AMDKFD_IOC_GET_VERSION", 0x01, 1, 1, t, 0.000010)]
    b: list[Event] = [ioctl("AMDKFD_IOC_GET_VERSION", 0x01, 1, 1, t, 0.000010)]
    per_gpu = [
        (kfd.ATTR_NO_ACCESS, 0x1A2B),
        (kfd.ATTR_CLR_FLAGS, kfd.FLAG_COHERENT),
        (kfd.ATTR_CLR_FLAGS, kfd.FLAG_EXT_COHERENT),
    ]
    two_gpu = [
        (kfd.ATTR_NO_ACCESS, 0x1A2B),
        (kfd.ATTR_NO_ACCESS, 0x3C4D),
        (kfd.ATTR_CLR_FLAGS, kfd.FLAG_COHERENT),
        (kfd.ATTR_CLR_FLAGS, 0x80),
    ]
    for i in range(3):
        a.append(svm(10 + i, 1, t + i, 0x7F0000000000, 0x1000, two_gpu))
    for i in range(12):
        b.append(svm(10 + i, 1, t + i, 0x7F0000000000, 0x1000, per_gpu))
    b.append(svm(30, 1, t + 20, 0x7F0000000000, 0x1000, [(kfd.ATTR_ACCESS_IN_PLACE, 0x1A2B)]))
    b.append(Close(file=TRACE, line=50, pid=4242, tid=1, time=t + 40, ret=0, fd=7))
    b.append(Mmap(file=TRACE, line=51, pid=4242, tid=1, time=t + 41, ret=0x7F0000000000, length=4096))
    b.append(Exit(file=TRACE, line=52, pid=4242, tid=1, time=t + 42, whole=True, status=0))
    return a, b
