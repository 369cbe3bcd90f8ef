"""The comparison harness: the compiled core against the Python reference
engine, byte for byte, on the whole corpus (issue 16).

For every input it runs the same commands with the product's engine (the
core) and with the Python reference swapped in behind rocrtrace.engine
(pyref.py) and compares what each prints (stdout, exit status, the error):
the JSON report of ``analyze`` (with and without ``--all-fds``), its
verbose text report, the
``events`` table as CSV, ``show`` of fd 3 and of the first SVM range, the
perfetto trace (all but the large inputs), and for the large generated
traces the same with ``--jobs 2`` (the chunk cuts).  It prints one line per
difference and a summary, and exits 1 when anything differs.

The corpus: every fixture log; generated benchmark traces (benchmarks/
gen_traces.py, strace and preload, small and over the chunking threshold);
with ``--real``, real strace logs of the test programs under several option
sets and their capture-library logs.

    python tests/engine/compare.py            # fixtures + generated
    python tests/engine/compare.py --real     # + real strace/capture runs
    python tests/engine/compare.py PATH...    # just these traces
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from click.testing import CliRunner  # noqa: E402

import pyref  # noqa: E402

from rocrtrace.cli import cli  # noqa: E402

FIXTURES = ROOT / "fixtures"
GEN = ROOT / "benchmarks" / "gen_traces.py"
# (dialect, lines): small ones, and ones past the 2 MiB chunking threshold
GENERATED = (("strace", 2000), ("preload", 2000), ("strace", 40000), ("preload", 30000))
REAL_OPTIONS = (["-f", "-o"], ["-f", "-ttt", "-T", "-yy", "-o"], ["-ff", "-ttt", "-yy", "-o"],
                ["-f", "-k", "-yy", "-o"], ["-f", "-tt", "-y"])


def fixture_inputs() -> list[str]:
    return sorted(str(p) for p in FIXTURES.rglob("*")
                  if p.is_file() and p.suffix in (".log", ".gz", ".xz", ".bz2"))


def generated_inputs(work: Path) -> list[str]:
    out = []
    for dialect, n in GENERATED:
        path = work / f"gen-{dialect}-{n}.log"
        if not path.exists():
            subprocess.run([sys.executable, str(GEN), dialect, str(n), str(path)], check=True,
                           stdout=subprocess.DEVNULL)
        out.append(str(path))
    return out


def real_inputs(work: Path) -> list[str]:
    """Real strace on the test programs (the fd idioms and the shapes), and
    the capture library on the same programs."""
    from realtrace import PROGRAMS, compile_program, have_strace, run_strace

    if not have_strace():
        return []
    out = []
    names = sorted(p.stem for p in Path(PROGRAMS).glob("*.c")
                   if p.stem.startswith(("fdidiom_", "fdops", "shapes")))
    for name in names:
        for i, opts in enumerate(REAL_OPTIONS):
            d = work / f"real-{name}-{i}"
            d.mkdir(exist_ok=True)
            logs = run_strace(opts, name, [], d)
            if len(logs) > 1:
                out.append(str(d / "trace.log.*"))
            elif logs:
                out.append(logs[0])
        d = work / f"capture-{name}"
        d.mkdir(exist_ok=True)
        exe = compile_program(name)
        subprocess.run([sys.executable, "-m", "rocrtrace", "capture", "-o", str(d / "cap"),
                        "--", exe], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120)
        out.extend(sorted(str(p) for p in d.glob("cap*")))
    return out


def _svm_address(path: str) -> str | None:
    """The first SVM range's start in a (plain) trace, for show --addr."""
    try:
        with open(path, "rb") as f:
            m = re.search(rb"start_addr=(0x[0-9a-f]+)", f.read(1 << 16))
    except OSError:
        return None
    return m.group(1).decode() if m else None


def commands(path: str, large: bool) -> list[list[str]]:
    cmds = [["analyze", "--format", "json", "--no-progress", path],
            # text: one call shown once per report ("shown above" after)
            ["analyze", "--verbose", "--no-progress", "--fail-on", "never", path],
            ["analyze", "--format", "json", "--no-progress", "--all-fds", path],
            ["events", "--format", "csv", path]]
    if not any(ch in path for ch in "*?["):
        cmds.append(["show", "--fd", "3", "--format", "json", path])
        addr = _svm_address(path)
        if addr:
            cmds.append(["show", "--addr", f"{addr}:0x10000", "--format", "json", path])
    if not large:
        # the perfetto trace (a file): what run() compares is stdout + its bytes
        cmds.append(["analyze", "--no-progress", "--fail-on", "never", "--format",
                     f"perfetto:{PERFETTO_OUT}", path])
    if large:
        cmds += [["analyze", "--format", "json", "--no-progress", "--jobs", "2", path],
                 ["events", "--format", "csv", "--jobs", "2", path]]
    return cmds


PERFETTO_OUT = "{perfetto-out}"


def run(args: list[str], engine: str) -> tuple:
    """(exit status, stdout, the exception if one escaped) under one engine;
    a perfetto file the command wrote is compared as part of stdout."""
    with tempfile.TemporaryDirectory(prefix="rocrtrace-compare-pf-") as tmp:
        out = os.path.join(tmp, "trace.pftrace")
        args = [a.replace(PERFETTO_OUT, out) for a in args]
        if engine == "python":
            with pyref.selected():
                res = CliRunner().invoke(cli, args, catch_exceptions=True)
        else:
            res = CliRunner().invoke(cli, args, catch_exceptions=True)
        written = b""
        if os.path.exists(out):
            with open(out, "rb") as f:
                written = b"\n--- perfetto file ---\n" + f.read()
    exc = res.exception
    err = None if exc is None or isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
    return res.exit_code, res.stdout_bytes + written, err


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: python {x[:160]!r} / rust {y[:160]!r}"
    return f"python {len(la)} lines / rust {len(lb)} lines"


def compare(inputs: list[str], out=sys.stdout) -> tuple[int, int]:
    """(comparisons, differences); one line per difference on ``out``."""
    n = diffs = 0
    for path in inputs:
        large = not any(ch in path for ch in "*?[") and os.path.getsize(path) > (2 << 20)
        for args in commands(path, large):
            n += 1
            a, b = run(args, "python"), run(args, "rust")
            if a == b:
                continue
            diffs += 1
            what = []
            if a[0] != b[0]:
                what.append(f"exit {a[0]} / {b[0]}")
            if a[2] != b[2]:
                what.append(f"error {a[2]!r} / {b[2]!r}")
            if a[1] != b[1]:
                what.append(first_difference(a[1], b[1]))
            print(f"DIFF {' '.join(args)}: " + "; ".join(what), file=out)
    return n, diffs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="compare on these traces only")
    ap.add_argument("--real", action="store_true", help="add real strace and capture runs")
    ap.add_argument("--workdir", help="where generated traces go (default: a temp dir)")
    opts = ap.parse_args(argv)
    work = Path(opts.workdir or tempfile.mkdtemp(prefix="rocrtrace-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    inputs = opts.paths or fixture_inputs() + generated_inputs(work)
    if opts.real:
        inputs += real_inputs(work)
    n, diffs = compare(inputs)
    print(f"{len(inputs)} input(s), {n} comparison(s), {diffs} difference(s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
