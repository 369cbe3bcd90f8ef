"""Replay rate of the fd and handle models, Python and compiled (issue 16).

    python benchmarks/bench_fds.py [N_LINES] [--repeat R]

Generates the strace and preload traces of gen_traces.py (N_LINES each),
reads them with the Python reader once, then times only the models on the
same events: rocrtrace.models FdModel+HandleModel against
rocrtrace._engine.time_fd_models (the events are converted to Rust first,
outside the timing; fed by reference, each kept event copied, and as shared
Rc<Event>s).  Prints events/s and us/event for both, and the
findings count of each (they must match).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_traces  # noqa: E402
from rocrtrace import _engine  # noqa: E402
from rocrtrace.inputs import open_trace  # noqa: E402
from rocrtrace.models.fds import FdModel  # noqa: E402
from rocrtrace.models.handles import HandleModel  # noqa: E402


def python_rate(events):
    t0 = time.perf_counter()
    fds = FdModel()
    hm = HandleModel(fds)
    for ev in events:
        fds.feed(ev)
        hm.feed(ev)
    fds.finish()
    hm.finish()
    return time.perf_counter() - t0, len(fds.findings) + len(hm.findings)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("lines", nargs="?", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for kind, gen in (("strace", gen_traces.strace_lines), ("preload", gen_traces.preload_lines)):
            path = Path(d) / f"{kind}.log"
            with open(path, "w") as f:
                for line in gen(a.lines):
                    f.write(line + "\n")
            events = list(open_trace(str(path)).events())
            py = min(python_rate(events)[0] for _ in range(a.repeat))
            py_found = python_rate(events)[1]
            n, rs, rc, rust_found = _engine.time_fd_models(events, a.repeat)
            print(f"{kind}: {n} events; python {n / py:,.0f} ev/s ({py / n * 1e6:.2f} us/ev); "
                  f"rust feed(&Event) {n / rs:,.0f} ev/s ({rs / n * 1e6:.3f} us/ev, x{py / rs:.1f}); "
                  f"rust feed_rc {n / rc:,.0f} ev/s ({rc / n * 1e6:.3f} us/ev, x{py / rc:.1f}); "
                  f"findings python {py_found} rust {rust_found}")


if __name__ == "__main__":
    main()
