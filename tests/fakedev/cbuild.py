"""Compile test programs and libraries into a per-user cache, atomically
(parallel test workers may build the same thing at once)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from rocrtrace.capture.build import cache_root, find_compiler

HERE = Path(__file__).parent


def build(source: str | Path, name: str, shared: bool = False, flags: list[str] | None = None) -> Path:
    """Compile C `source` (text or a path) to a cached executable/library."""
    text = Path(source).read_text() if isinstance(source, Path) else source
    flags = list(flags or [])
    headers = ""
    if isinstance(source, Path):
        # its own headers: found beside it, and part of what the cache keys on
        flags.append(f"-I{source.parent}")
        headers = "".join(h.read_text() for h in sorted(source.parent.glob("*.h")))
    cc = find_compiler()
    key = hashlib.sha256((text + headers + " ".join(flags) + cc + str(shared)).encode()).hexdigest()[:16]
    out = cache_root() / "test-bin" / key / name
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        src = Path(tmp, name + ".c")
        src.write_text(text)
        tmp_out = Path(tmp, name)
        cmd = cc.split() + ["-O2", "-g", "-Wall", "-o", str(tmp_out), str(src)]
        if shared:
            cmd[1:1] = ["-fPIC", "-shared"]
        cmd += flags + ["-ldl", "-lpthread"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"compiling {name} failed:\n{proc.stderr}")
        os.replace(tmp_out, out)
    return out


def fakedev_library() -> Path:
    return build(HERE / "fakedev.c", "libfakedev.so", shared=True)
