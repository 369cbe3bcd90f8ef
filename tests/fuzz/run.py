"""Run a fuzz harness for N minutes, seeded from the fixtures, with the
strace dictionary:  python tests/fuzz/run.py parser|pipeline [MINUTES]
Crashes land in tests/fuzz/work/HARNESS/crashes/ (git-ignored); the run
restarts after a crash until the time is up and prints the crash classes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402


def run(
    harness: str, seconds: float, seed: int | None = None, runs: int | None = None, workdir: str | None = None
) -> tuple[int, dict]:
    """Fuzz until ``seconds`` have passed (or ``runs`` executions): libFuzzer
    stops at a crash, so it is restarted on the grown corpus until time is
    up.  Returns (executions, {crash class: [inputs]}), a class being the
    exception and the line that raised it."""
    work = workdir or tempfile.mkdtemp(prefix=f"rocrtrace-fuzz-{harness}-")
    corpus = os.path.join(work, "corpus")
    crashes = os.path.join(work, "crashes") + os.sep
    os.makedirs(crashes, exist_ok=True)
    if not os.path.isdir(corpus) or not os.listdir(corpus):
        common.write_corpus(corpus)
    env = dict(os.environ, PYTHONPATH=common.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    deadline = time.monotonic() + seconds
    execs = 0
    classes: dict = {}
    n = 0
    while True:
        left = deadline - time.monotonic()
        if left < 1 or (runs is not None and execs >= runs):
            break
        cmd = [
            sys.executable,
            os.path.join(HERE, f"fuzz_{harness}.py"),
            f"-dict={common.DICT}",
            f"-max_len={common.MAX_LEN}",
            f"-max_total_time={max(1, int(left))}",
            f"-artifact_prefix={crashes}",
            "-timeout=20",
            "-rss_limit_mb=3072",
            "-print_final_stats=1",
        ]
        if seed is not None:
            cmd.append(f"-seed={seed + n}")
        if runs is not None:
            cmd.append(f"-runs={runs - execs}")
        cmd.append(corpus)
        r = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, errors="replace")
        n += 1
        out = r.stdout + r.stderr
        with open(os.path.join(work, f"run-{n:03d}.log"), "w") as f:
            f.write(out)
        m = re.findall(r"stat::number_of_executed_units: (\d+)", out)
        execs += int(m[-1]) if m else 0
        art = re.findall(r"Test unit written to (\S+)", out)
        if r.returncode == 0 or not art:
            if r.returncode != 0:
                classes.setdefault(f"fuzzer exit {r.returncode}", []).append(out[-300:])
            if r.returncode == 0:
                continue
            break
        classes.setdefault(_crash_class(out), []).append(art[-1])
    return execs, classes


def _crash_class(out: str) -> str:
    """The exception and the last frame in rocrtrace that raised it."""
    exc = re.findall(r"^(\w+(?:Error|Exception|Exit)\b[^\n]*)", out, re.M)
    frames = re.findall(r'File "([^"]*rocrtrace[^"]*)", line (\d+)', out)
    where = f"{os.path.relpath(frames[-1][0], common.ROOT)}:{frames[-1][1]}" if frames else "?"
    if "Timeout" in out or "timeout" in out.split("Test unit written")[0][-400:]:
        return f"timeout at {where}"
    return f"{exc[-1][:120] if exc else 'crash'} at {where}"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("parser", "pipeline"):
        print(__doc__.strip())
        return 2
    minutes = float(argv[1]) if len(argv) > 1 else 10.0
    import importlib.util

    if importlib.util.find_spec("atheris") is None:
        # not a crash of rocrtrace: the harness cannot start at all
        print(
            f"tests/fuzz/run.py: atheris is not installed for {sys.executable} "
            "(pip install atheris, or run the venv's python)",
            file=sys.stderr,
        )
        return 2
    work = os.path.join(HERE, "work", argv[0])
    os.makedirs(work, exist_ok=True)
    execs, classes = run(argv[0], minutes * 60, workdir=work)
    print(f"fuzz {argv[0]}: {execs} executions, {len(classes)} crash class(es)")
    for k, v in sorted(classes.items()):
        print(f"  {k}: {len(v)} input(s), e.g. {v[0]}")
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
