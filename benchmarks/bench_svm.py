"""Replay rate of the core's SVM model alone: SVM SET_ATTR events per second.

    python benchmarks/bench_svm.py [N_EVENTS] [--intents] [--live K] [--trace LINES]

The stream is built in memory (no parsing): pin/unpin cycles of 17-page
buffers laid out like glibc's 64 KiB chunks, so neighbours share a page, on
four threads, with the V3 shapes (register grant, map, revoke of the extent
minus survivors), a few application ranges and GET_ATTR checks.  K buffers are
live at a time.  With --intents every pin/unpin is wrapped in
hsa_amd_memory_lock/unlock.  --trace also times gen_traces.py's preload log
of LINES lines (SVM churn with intent calls, allocations, dma-buf exports),
read by the core.  The clock is the model's CPU time in
rocrtrace._engine.time_svm_model (the events are converted to Rust first,
outside it).  Prints events/s, SET_ATTR/s and the findings.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # vocab.py: the event constructors
sys.path.insert(0, str(HERE))

from rocrtrace import _engine, kfd  # noqa: E402
from vocab import Intent, Ioctl, ProcessInfo, kind  # noqa: E402

PAGE = 0x1000
BASE = 0x7F0000000000
GPUS = [0x1A2B, 0x2B3C]


def stream(n: int, live: int, intents: bool, seed: int = 7):
    rnd = random.Random(seed)
    t = 1764435600.0
    seq = 0

    def ev(cls, tid, dur=4e-6, **kw):
        nonlocal t, seq
        seq += 1
        e = cls(pid=1, tid=tid, time=t, dur=dur, seq=seq, line=seq, ret=0, **kw)
        t += dur + 1e-6
        return e

    def svm(tid, start, size, attrs, op=kfd.SVM_OP_SET_ATTR, out=None):
        return ev(
            Ioctl,
            tid,
            type=kfd.TYPE_KFD,
            nr=0x20,
            fd=3,
            arg={"start_addr": start, "size": size, "op": op, "nattr": len(attrs), "attrs": attrs},
            out=out,
        )

    yield ProcessInfo(pid=1, tid=1, time=t, page_size=PAGE)
    slots = [None] * live  # slot -> (ptr, tid)
    count = 0
    aip = [(kfd.ATTR_ACCESS_IN_PLACE, g) for g in GPUS]
    reg = aip + [(kfd.ATTR_SET_FLAGS, kfd.FLAG_COHERENT), (kfd.ATTR_CLR_FLAGS, 0x80)]
    while count < n:
        i = rnd.randrange(live)
        tid = 2 + i % 4
        chunk = BASE + i * 0x10010  # 64 KiB + header: neighbours share a page
        a = chunk & ~(PAGE - 1)
        b = (chunk + 0x10010 + PAGE - 1) & ~(PAGE - 1)
        if slots[i] is None:
            if intents:
                t0, s0 = t, seq
                t += 1e-6
            yield svm(tid, a, b - a, reg)
            yield svm(tid, a, b - a, aip)
            count += 2
            if intents:
                yield Intent(
                    pid=1,
                    tid=tid,
                    time=t0,
                    dur=t - t0,
                    seq=s0,
                    ret=0,
                    name="hsa_amd_memory_lock",
                    args={"host_ptr": chunk, "size": 0x10010},
                )
                t += 1e-6
            slots[i] = chunk
        else:
            # V3: revoke own extent minus the pages live neighbours still cover
            lo = a + PAGE if i > 0 and slots[i - 1] is not None else a
            hi = b - PAGE if i + 1 < live and slots[i + 1] is not None else b
            if intents:
                t0, s0 = t, seq
                t += 1e-6
            if lo < hi:
                yield svm(tid, lo, hi - lo, [(kfd.ATTR_NO_ACCESS, g) for g in GPUS])
                count += 1
            if intents:
                yield Intent(
                    pid=1,
                    tid=tid,
                    time=t0,
                    dur=t - t0,
                    seq=s0,
                    ret=0,
                    name="hsa_amd_memory_unlock",
                    args={"host_ptr": chunk},
                )
                t += 1e-6
            slots[i] = None
        if rnd.random() < 0.02:
            yield svm(
                1,
                a,
                b - a,
                [(kfd.ATTR_ACCESS, GPUS[0])],
                op=kfd.SVM_OP_GET_ATTR,
                out={"attrs": [(kfd.ATTR_ACCESS_IN_PLACE if slots[i] else kfd.ATTR_NO_ACCESS, GPUS[0])]},
            )


def model_time(events, repeat: int = 3) -> tuple[float, int]:
    """The core's SVM model: CPU seconds per run (the call's thread time
    with ``repeat`` runs less that of the conversion alone), findings."""
    t = time.thread_time()
    _engine.time_svm_model(events, 0)
    conv = time.thread_time() - t
    t = time.thread_time()
    _, found = _engine.time_svm_model(events, repeat)
    return max(time.thread_time() - t - conv, 1e-9) / repeat, found


def report(label: str, events, repeat: int) -> None:
    el, found = model_time(events, repeat)
    n = len(events)
    sets = sum(
        1
        for e in events
        if kind(e) == "Ioctl" and e.nr == 0x20 and isinstance(e.arg, dict) and e.arg.get("op") == kfd.SVM_OP_SET_ATTR
    )
    print(
        f"{label}: {n} events ({sets} SET_ATTR) in {el:.3f} s CPU: {n / el:,.0f} events/s, "
        f"{sets / el:,.0f} SET_ATTR/s; findings {found}"
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=200_000)
    ap.add_argument("--live", type=int, default=512)
    ap.add_argument("--intents", action="store_true")
    ap.add_argument(
        "--trace", type=int, default=0, metavar="LINES", help="also time gen_traces.py's preload log of LINES lines"
    )
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    report(f"stream (live {a.live}{', intents' if a.intents else ''})", list(stream(a.n, a.live, a.intents)), a.repeat)
    if a.trace:
        import gen_traces

        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "preload.log"
            path.write_text("\n".join(gen_traces.preload_lines(a.trace)) + "\n")
            events, _ = _engine.trace_events(str(path))
        report(f"preload log ({a.trace} lines)", events, a.repeat)


if __name__ == "__main__":
    main()
