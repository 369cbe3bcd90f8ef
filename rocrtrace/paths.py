"""The trace arguments on the command line: what each names (a file, a
directory of -ff files, a glob, stdin) and the one-line error when it names
nothing readable.  The reading itself is the core's (rocrtrace._engine)."""

from __future__ import annotations

import glob as globmod
import os


class InputError(Exception):
    """An input that cannot be read or recognized; str() is one line."""


def _err(path: str, why: str) -> InputError:
    return InputError(f"rocrtrace: {path}: {why}")


_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"))


def compression_of(head: bytes) -> str | None:
    """The compression a file's first bytes announce, or None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def is_plain_file(path: str) -> bool:
    """A regular, readable, uncompressed file (not stdin)."""
    if path == "-":
        return False
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            return compression_of(f.read(6)) is None
    except OSError:
        return False


def expand(arg: str) -> list[str]:
    """The files one trace argument names: '-', a directory's files (sorted,
    no dot files), the file itself, or a glob's matches."""
    if arg == "-":
        return ["-"]
    if os.path.isdir(arg):
        try:
            names = sorted(os.listdir(arg))
        except OSError as e:
            raise _err(arg, e.strerror or "cannot list") from None
        paths = [os.path.join(arg, n) for n in names if not n.startswith(".") and os.path.isfile(os.path.join(arg, n))]
        if not paths:
            raise _err(arg, "empty directory")
        return paths
    if os.path.exists(arg):
        return [arg]
    if any(ch in arg for ch in "*?["):
        paths = sorted(p for p in globmod.glob(arg) if os.path.isfile(p))
        if not paths:
            raise _err(arg, "no files match")
        return paths
    raise _err(arg, "no such file or directory")


def repo_relative(path: str, cwd: str | None = None) -> str | None:
    """``path`` relative to ``cwd`` with forward slashes, or None when it
    lies outside (or climbs out with ``..``)."""
    cwd = os.path.abspath(cwd or os.getcwd())
    if not os.path.isabs(path):
        norm = os.path.normpath(path)
    else:
        try:
            norm = os.path.relpath(path, cwd)
        except ValueError:
            return None
    if norm == ".." or norm.startswith(".." + os.sep) or os.path.isabs(norm):
        return None
    return norm.replace(os.sep, "/")
