"""The compiled core runs on any thread, one after another: a thread that
ran it may exit before the next one starts.  With mimalloc v3 as the
extension's allocator the second thread crashed in mi_thread_init
(_mi_subproc) once the first had exited; the front's Ctrl-C handling runs
the core on worker threads, and scripts may use threads of their own."""

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_on_successive_threads():
    code = textwrap.dedent("""
        import threading
        from rocrtrace import engine
        P = "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log"
        got = []
        for _ in range(4):
            t = threading.Thread(target=lambda: got.append(len(engine.analyze([P]).findings)))
            t.start()
            t.join()
        print(got)
    """)
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    counts = eval(p.stdout.strip())
    assert len(counts) == 4 and len(set(counts)) == 1 and counts[0] > 0
