"""Compile the capture library (preload.c) with the system compiler.

The ioctl names, flag tables and struct fields the C side prints are in
ioctl_table.h beside it, generated from catalogue/ioctls.toml as the
reader's tables are (rocrtrace/kfd.py, the core's src/kfd_catalogue.rs), so
writer and reader can never disagree on a name.  The result is cached per
(source, header, compiler version) and replaced atomically, so concurrent
builds in parallel tests are safe.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("preload.c")
HEADER = SOURCE.with_name("ioctl_table.h")  # included by preload.c from its directory
LIBNAME = "librocrtrace.so"
CFLAGS = [
    "-O2",
    "-fPIC",
    "-shared",
    "-ftls-model=initial-exec",
    "-fvisibility=default",
    "-Wall",
    "-Wno-unused-function",
]
LIBS = ["-ldl", "-lpthread"]


class BuildError(RuntimeError):
    """The capture library could not be built (one-line message)."""


def find_compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name.split()[0]):
            return name
    raise BuildError(
        "no C compiler found (install gcc or set CC): rocrtrace capture builds its LD_PRELOAD library on first use"
    )


def _compiler_version(cc: str) -> str:
    try:
        out = subprocess.run(cc.split() + ["--version"], capture_output=True, text=True, timeout=30)
        return out.stdout.splitlines()[0] if out.stdout else cc
    except (OSError, subprocess.SubprocessError):
        return cc


def cache_root() -> Path:
    env = os.environ.get("ROCRTRACE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rocrtrace"


def compile_shared(
    source: Path,
    out: Path,
    cc: str | None = None,
    extra_headers: dict[str, str] | None = None,
    cflags: list[str] | None = None,
    libs: list[str] | None = None,
) -> Path:
    """Compile one C file to a shared object at `out`, atomically."""
    cc = cc or find_compiler()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".build-") as tmp:
        for name, text in (extra_headers or {}).items():
            Path(tmp, name).write_text(text)
        tmp_out = Path(tmp, out.name)
        cmd = cc.split() + (cflags or CFLAGS) + ["-I", tmp, "-o", str(tmp_out), str(source)] + (libs or LIBS)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            first = proc.stderr.strip().splitlines() or ["(no output)"]
            err = next((ln for ln in first if "error" in ln), first[0])
            raise BuildError(f"compiling {source.name} failed: {err}")
        os.replace(tmp_out, out)
    return out


def library_path(rebuild: bool = False) -> Path:
    """Path of the compiled capture library, building it if needed."""
    cc = find_compiler()
    h = hashlib.sha256()
    h.update(SOURCE.read_bytes())
    h.update(HEADER.read_bytes())
    h.update(_compiler_version(cc).encode())
    h.update(" ".join(CFLAGS + LIBS).encode())
    out = cache_root() / h.hexdigest()[:16] / LIBNAME
    if out.exists() and not rebuild:
        return out
    return compile_shared(SOURCE, out, cc)


if __name__ == "__main__":  # pragma: no cover - convenience for manual builds
    print(library_path(rebuild=True))
