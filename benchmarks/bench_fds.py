"""Replay rate of the core's fd and handle models alone (issue 16).

    python benchmarks/bench_fds.py [N_LINES] [--repeat R]

Generates the strace and preload traces of gen_traces.py (N_LINES each),
reads them with the core once, then times only the models on the same
events with rocrtrace._engine.time_fd_models (the events are converted to
Rust first, outside the timing): fed by reference, each kept event copied,
and as shared Rc<Event>s.  Prints events/s and us/event of both and the
findings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_traces  # noqa: E402
from rocrtrace import _engine  # noqa: E402


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
            events, _ = _engine.trace_events(str(path))
            n, rs, rc, found = _engine.time_fd_models(events, a.repeat)
            print(
                f"{kind}: {n} events; feed(&Event) {n / rs:,.0f} ev/s ({rs / n * 1e6:.3f} us/ev); "
                f"feed_rc {n / rc:,.0f} ev/s ({rc / n * 1e6:.3f} us/ev); findings {found}"
            )


if __name__ == "__main__":
    main()
