"""Issue 35, item 13's small ones still open at the last stop: a process
substitution's trace keeps its /dev/fd path as its name (not "63:20:"),
`analyze --help` names every compression it reads, and benchmarks/run.py
outside the Python rocrtrace is installed for says so in one line (exit 1,
not a child's exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C1 = os.path.join(ROOT, "fixtures/scenarios/c1-enclosing-range/v1-buggy-explicit.log")


def test_process_substitution_is_named_by_its_path():
    p = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m rocrtrace analyze <(cat "{C1}")'],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    heads = [line for line in p.stdout.splitlines() if "error[" in line]
    assert heads and all(line.startswith("/dev/fd/") for line in heads), heads


def test_analyze_help_names_zstd():
    p = subprocess.run(
        [sys.executable, "-m", "rocrtrace", "analyze", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    assert ".zst" in p.stdout and ".gz" in p.stdout


def test_benchmark_runner_without_the_dependencies_is_one_line(tmp_path):
    # a bare interpreter: no site packages, so none of rocrtrace's dependencies
    p = subprocess.run(
        [
            sys.executable,
            "-S",
            "-I",
            os.path.join(ROOT, "benchmarks", "run.py"),
            "--sizes",
            "10",
            "--runs",
            "1",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "not installed for" in p.stderr and p.stderr.count("\n") == 1


def test_fuzz_runner_without_atheris_says_so(tmp_path):
    p = subprocess.run(
        [sys.executable, "-S", "-I", os.path.join(ROOT, "tests", "fuzz", "run.py"), "parser", "0.01"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "atheris is not installed" in p.stderr, p.stdout + p.stderr
    assert "crash class" not in p.stdout
