"""Run a command in a private mount namespace whose /dev holds fake GPU nodes.

`unshare -m` gives the command its own mount table; a tmpfs over /dev then
holds the usual nodes plus /dev/kfd, /dev/dri/renderD128 and
/dev/accel/accel0, all null devices (c 1 3).  readlink of their fds gives the
real device paths, and fakedev.so answers their ioctls like the kernel.
Needs root (CAP_SYS_ADMIN, mknod), which the test machine has.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable, Sequence

from rocrtrace.capture.build import library_path

from .cbuild import fakedev_library

DEFAULT_GPUS = (0x1A2B, 0x3C4D)

SETUP = r"""
set -e
mount -t tmpfs -o mode=755,size=1m rocrtrace-dev /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8
mknod -m 666 /dev/urandom c 1 9
mknod -m 666 /dev/tty c 5 0
mkdir /dev/pts /dev/shm /dev/dri /dev/accel
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,size=64m shm /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
mknod -m 666 /dev/kfd c 1 3
mknod -m 666 /dev/dri/renderD128 c 1 3
mknod -m 666 /dev/accel/accel0 c 1 3
set +e
export LD_PRELOAD="$DEVNS_LD_PRELOAD"
unset DEVNS_LD_PRELOAD
exec "$@"
"""


def available() -> bool:
    """Can this machine build private /dev namespaces (root + unshare)?"""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def gpu_env(gpus: Iterable[int]) -> str:
    return ",".join(f"{g:#x}" for g in gpus)


def run(cmd: Sequence[str], env: dict[str, str] | None = None,
        gpus: Iterable[int] = DEFAULT_GPUS, capture: bool = True,
        prefix: str | os.PathLike | None = None, stack_depth: int = 0,
        timeout: float | None = 120, xnack: bool = False,
        **kwargs) -> subprocess.CompletedProcess:
    """Run `cmd` in the fake-device namespace.

    capture=True preloads the capture library (log files PREFIX.PID) before
    fakedev.so; capture=False preloads only the fake layer.  stdout/stderr
    are captured as text unless given in kwargs."""
    e = dict(os.environ if env is None else env)
    preload = [str(fakedev_library())]
    if capture:
        if prefix is None:
            raise ValueError("capture=True needs a log prefix")
        preload.insert(0, str(library_path()))
        e["ROCRTRACE_LOG"] = str(Path(prefix).absolute())
        e["ROCRTRACE_STACK_DEPTH"] = str(stack_depth)
    if e.get("LD_PRELOAD"):
        preload.append(e["LD_PRELOAD"])
    e["LD_PRELOAD"] = ":".join(preload)
    e["FAKEDEV_GPUS"] = gpu_env(gpus)
    e["FAKEDEV_XNACK"] = "1" if xnack else "0"
    # LD_PRELOAD reaches the command only (the script exports it just before
    # exec), so unshare, sh and mount leave no logs of their own
    e["DEVNS_LD_PRELOAD"] = e.pop("LD_PRELOAD")
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP, "devns", *cmd]
    base = e
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    kwargs.setdefault("text", True)
    return subprocess.run(argv, env=base, timeout=timeout, **kwargs)
