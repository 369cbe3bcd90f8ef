"""The Rust SVM model (src/models/svm.rs) against the Python one on the same
events: events/s of each model alone, in CPU time (parsing and the Python -> Rust
event conversion are outside both clocks).

    python benchmarks/bench_svm_engine.py [LINES] [--churn N]

The trace is gen_traces.py's preload dialect (SVM registration/revoke churn
with lock/unlock intent calls, allocations, dma-buf exports); --churn also
times bench_svm.py's in-memory stream of N SET_ATTRs (17-page neighbours
sharing pages, with intents).  Both models must give the same number of
findings.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from rocrtrace._engine import time_svm_model  # noqa: E402
from rocrtrace.inputs import open_trace  # noqa: E402
from rocrtrace.models.svm import SvmModel  # noqa: E402


def python_time(events) -> tuple[float, int]:
    """The Python model's CPU time (thread_time: fair on a loaded machine)."""
    t = time.thread_time()
    m = SvmModel()
    for e in events:
        m.feed(e)
    m.finish()
    return time.thread_time() - t, len(m.findings)


def rust_time(events, repeat: int = 3) -> tuple[float, int]:
    """The Rust model's CPU time per run: the call's thread time with
    ``repeat`` runs less that of the conversion alone."""
    t = time.thread_time()
    time_svm_model(events, 0)
    conv = time.thread_time() - t
    t = time.thread_time()
    _, found = time_svm_model(events, repeat)
    return (time.thread_time() - t - conv) / repeat, found


def compare(label: str, events, repeat: int = 3) -> None:
    py = min(python_time(events) for _ in range(repeat))
    rs = rust_time(events, repeat)
    assert py[1] == rs[1], (py, rs)
    n = len(events)
    print(f"{label}: {n} events, {py[1]} findings; Python {n / py[0]:,.0f} events/s "
          f"({py[0]:.3f} s CPU), Rust {n / rs[0]:,.0f} events/s ({rs[0]:.3f} s CPU): "
          f"{py[0] / rs[0]:.1f}x")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lines", nargs="?", type=int, default=200_000)
    ap.add_argument("--churn", type=int, default=0)
    a = ap.parse_args(argv)
    import gen_traces

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "preload.log"
        path.write_text("\n".join(gen_traces.preload_lines(a.lines)) + "\n")
        events = list(open_trace(str(path)).events())
    compare(f"preload SVM churn ({a.lines} lines)", events)
    if a.churn:
        import bench_svm

        compare(f"bench_svm stream ({a.churn} SET_ATTRs, intents)",
                list(bench_svm.stream(a.churn, 512, True)))


if __name__ == "__main__":
    main()
