"""Helpers for tests that run real programs under the real strace."""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
CACHE = os.path.join(tempfile.gettempdir(), "rocrtrace-test-bin")


def have_strace() -> bool:
    return shutil.which("strace") is not None and shutil.which("cc") is not None


def compile_program(name: str) -> str:
    """Build tests/programs/NAME.c with the system cc, cached by content."""
    src = os.path.join(PROGRAMS, name + ".c")
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    os.makedirs(CACHE, exist_ok=True)
    out = os.path.join(CACHE, f"{name}-{digest}")
    if not os.path.exists(out):
        tmp = out + f".{os.getpid()}"
        subprocess.run(["cc", "-O0", "-g", "-pthread", "-o", tmp, src], check=True)
        os.replace(tmp, out)
    return out


def run_strace(options: list[str], program: str, args: list[str], tmpdir) -> list[str]:
    """Run PROGRAM ARGS under ``strace OPTIONS``; returns the log path(s).

    With ``-o`` among the options the log goes to tmpdir/trace.log (``-ff``:
    one file per tid); without it stderr is the log (a stderr capture)."""
    tmpdir = str(tmpdir)
    exe = compile_program(program)
    log = os.path.join(tmpdir, "trace.log")
    opts = list(options)
    stderr_capture = "-o" not in opts
    if not stderr_capture:
        i = opts.index("-o")
        opts.insert(i + 1, log)
    cmd = ["strace"] + opts + ["--", exe] + list(args)
    if stderr_capture:
        with open(log, "wb") as err:
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=tmpdir, timeout=60)
        return [log]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmpdir, timeout=60)
    if "-ff" in opts:
        return sorted(glob.glob(log + ".*"))
    return [log]
