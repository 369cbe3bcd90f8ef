"""Run a fuzz harness for N minutes, seeded from the fixtures, with the
strace dictionary:  python tests/fuzz/run.py parser|pipeline [MINUTES]
Crashes land in tests/fuzz/crashes/ (git-ignored); the run keeps going after
a crash (libFuzzer fork mode) and prints how many it found."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402


def run(harness: str, seconds: float, seed: int | None = None, runs: int | None = None,
        workdir: str | None = None, fork: bool = True) -> tuple[int, list[str]]:
    work = workdir or tempfile.mkdtemp(prefix=f"rocrtrace-fuzz-{harness}-")
    corpus = os.path.join(work, "corpus")
    crashes = os.path.join(work, "crashes") + os.sep
    os.makedirs(crashes, exist_ok=True)
    if not os.path.isdir(corpus) or not os.listdir(corpus):
        common.write_corpus(corpus)
    cmd = [sys.executable, os.path.join(HERE, f"fuzz_{harness}.py"),
           f"-dict={common.DICT}", f"-max_len={common.MAX_LEN}",
           f"-max_total_time={max(1, int(seconds))}", f"-artifact_prefix={crashes}",
           "-timeout=20", "-rss_limit_mb=3072", "-print_final_stats=1"]
    if seed is not None:
        cmd.append(f"-seed={seed}")
    if runs is not None:
        cmd.append(f"-runs={runs}")
    if fork:
        cmd += ["-fork=1", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    cmd.append(corpus)
    env = dict(os.environ, PYTHONPATH=common.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rc = subprocess.run(cmd, env=env, cwd=work).returncode
    found = sorted(glob.glob(crashes + "crash-*") + glob.glob(crashes + "timeout-*")
                   + glob.glob(crashes + "oom-*"))
    return rc, found


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("parser", "pipeline"):
        print(__doc__.strip())
        return 2
    minutes = float(argv[1]) if len(argv) > 1 else 10.0
    work = os.path.join(HERE, "work", argv[0])
    os.makedirs(work, exist_ok=True)
    rc, found = run(argv[0], minutes * 60, workdir=work)
    print(f"fuzz {argv[0]}: exit {rc}, {len(found)} crash/timeout input(s) in {work}/crashes")
    for p in found:
        print("  ", p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
