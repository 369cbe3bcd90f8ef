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
# the one GPU of the ROCm topology (tests/test_rocm_real.py runs on it): gpu_id 6699
ROCM_GPU = 0x1A2B

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
if [ -n "$DEVNS_TOPOLOGY" ]; then
  # the KFD topology the real libhsakmt reads: a tmpfs over /sys/devices/virtual
  # with the real entries bound back, and the prepared kfd/kfd/topology tree
  mkdir /dev/.sysvirt
  mount --bind /sys/devices/virtual /dev/.sysvirt
  mount -t tmpfs -o mode=755,size=1m rocrtrace-sys /sys/devices/virtual
  for e in /dev/.sysvirt/*; do
    n=${e##*/}
    mkdir "/sys/devices/virtual/$n"
    mount --bind "$e" "/sys/devices/virtual/$n"
  done
  umount /dev/.sysvirt
  rmdir /dev/.sysvirt
  mkdir -p /sys/devices/virtual/kfd/kfd
  cp -r "$DEVNS_TOPOLOGY" /sys/devices/virtual/kfd/kfd/topology
  # rocminfo runs `lsmod | grep amdgpu`; this machine may have no /proc/modules
  mkdir /dev/.devns-bin
  printf '#!/bin/sh\necho "Module                  Size  Used by"\necho "amdgpu              9999999  0"\n' \
    > /dev/.devns-bin/lsmod
  chmod 755 /dev/.devns-bin/lsmod
  export PATH="/dev/.devns-bin:$PATH"
fi
unset DEVNS_TOPOLOGY
set +e
export LD_PRELOAD="$DEVNS_LD_PRELOAD"
unset DEVNS_LD_PRELOAD
exec "$@"
"""


def available() -> bool:
    """Can this machine build private /dev namespaces (root + unshare)?"""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def _props(d: Path, values: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "properties").write_text("".join(f"{k} {v}\n" for k, v in values.items()))


def _host_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 8 << 30


def write_topology(root: Path, gpu_id: int = ROCM_GPU) -> Path:
    """The sysfs KFD topology of one CPU node and one GPU node, with the
    property values libhsakmt 5.2, ROCr and rocminfo were found to accept (files are decimal)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "generation_id").write_text("1\n")
    (root / "system_properties").write_text("platform_oem 0\nplatform_id 0\nplatform_rev 0\n")
    cpu, gpu = root / "nodes" / "0", root / "nodes" / "1"
    common = {
        "max_waves_per_simd": 0,
        "lds_size_in_kb": 0,
        "gds_size_in_kb": 0,
        "num_gws": 0,
        "wave_front_size": 0,
        "array_count": 0,
        "simd_arrays_per_engine": 0,
        "cu_per_simd_array": 0,
        "simd_per_cu": 0,
        "max_slots_scratch_cu": 0,
        "gfx_target_version": 0,
        "vendor_id": 0,
        "device_id": 0,
        "location_id": 0,
        "domain": 0,
        "drm_render_minor": 0,
        "hive_id": 0,
        "num_sdma_engines": 0,
        "num_sdma_xgmi_engines": 0,
        "num_sdma_queues_per_engine": 0,
        "num_cp_queues": 0,
        "max_engine_clk_fcompute": 0,
        "local_mem_size": 0,
        "fw_version": 0,
        "capability": 0,
        "debug_prop": 0,
        "sdma_fw_version": 0,
        "unique_id": 0,
    }
    _props(
        cpu,
        {
            "cpu_cores_count": 2,
            "simd_count": 0,
            "mem_banks_count": 1,
            "caches_count": 0,
            "io_links_count": 1,
            "cpu_core_id_base": 0,
            "simd_id_base": 0,
            **common,
            "max_engine_clk_ccompute": 2000,
        },
    )
    (cpu / "gpu_id").write_text("0\n")
    (cpu / "name").write_text("\n")
    _props(
        cpu / "mem_banks" / "0",
        {"heap_type": 0, "size_in_bytes": _host_memory(), "flags": 0, "width": 64, "mem_clk_max": 1600},
    )
    (cpu / "caches").mkdir()
    _props(cpu / "io_links" / "0", _link(0, 1))
    g = dict(common)
    g.update(
        {
            "simd_count": 160,
            "mem_banks_count": 1,
            "caches_count": 2,
            "io_links_count": 1,
            "simd_id_base": 2147487744,
            "capability": 0x08002280,
            "max_waves_per_simd": 16,
            "lds_size_in_kb": 64,
            "num_gws": 64,
            "wave_front_size": 32,
            "array_count": 8,
            "simd_arrays_per_engine": 2,
            "cu_per_simd_array": 10,
            "simd_per_cu": 2,
            "max_slots_scratch_cu": 32,
            "gfx_target_version": 100300,
            "vendor_id": 4098,
            "device_id": 29631,
            "location_id": 768,
            "drm_render_minor": 128,
            "num_sdma_engines": 2,
            "num_sdma_queues_per_engine": 6,
            "num_cp_queues": 8,
            "max_engine_clk_fcompute": 2500,
            "local_mem_size": 0,
            "fw_version": 100,
            "unique_id": 0x1A2B3C4D5E6F7081,
            "sdma_fw_version": 50,
        }
    )
    _props(gpu, {"cpu_cores_count": 0, **g, "cpu_core_id_base": 0, "max_engine_clk_ccompute": 2000})
    (gpu / "gpu_id").write_text(f"{gpu_id}\n")
    (gpu / "name").write_text("gfx1030\n")
    _props(
        gpu / "mem_banks" / "0",
        {"heap_type": 1, "size_in_bytes": 16 << 30, "flags": 0, "width": 256, "mem_clk_max": 1000},
    )
    # cache type 9 (Data|HSACU): with 5 rocminfo aborts "GPU cache info missing"
    for i, (level, size) in enumerate(((1, 16), (2, 4096))):
        _props(
            gpu / "caches" / str(i),
            {
                "processor_id_low": 2147487744,
                "level": level,
                "size": size,
                "cache_line_size": 64,
                "cache_lines_per_tag": 1,
                "association": 16,
                "latency": 1,
                "type": 9,
                "sibling_map": "1",
            },
        )
    _props(gpu / "io_links" / "0", _link(1, 0))
    return root


def _link(src: int, dst: int) -> dict:
    return {
        "type": 2,
        "version_major": 0,
        "version_minor": 0,
        "node_from": src,
        "node_to": dst,
        "weight": 20,
        "min_latency": 0,
        "max_latency": 0,
        "min_bandwidth": 0,
        "max_bandwidth": 0,
        "recommended_transfer_size": 0,
        "flags": 1,
    }


def gpu_env(gpus: Iterable[int]) -> str:
    return ",".join(f"{g:#x}" for g in gpus)


def run(
    cmd: Sequence[str],
    env: dict[str, str] | None = None,
    gpus: Iterable[int] = DEFAULT_GPUS,
    capture: bool = True,
    prefix: str | os.PathLike | None = None,
    stack_depth: int = 0,
    timeout: float | None = 120,
    xnack: bool = False,
    topology: str | os.PathLike | None = None,
    fake: bool = True,
    **kwargs,
) -> subprocess.CompletedProcess:
    """Run `cmd` in the fake-device namespace.

    capture=True preloads the capture library (log files PREFIX.PID) before
    fakedev.so; capture=False preloads only the fake layer.  stdout/stderr
    are captured as text unless given in kwargs.  ``topology``: a directory
    from write_topology(), put at /sys/devices/virtual/kfd/kfd/topology (with
    a fake lsmod on PATH) for the real ROCm user space.  fake=False leaves
    fakedev.so out: every ioctl then reaches the null devices (ENOTTY), so a
    struct the fake kernel would choke on can still be passed and logged."""
    e = dict(os.environ if env is None else env)
    preload = [str(fakedev_library())] if fake else []
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
    if topology is not None:
        e["DEVNS_TOPOLOGY"] = str(Path(topology).absolute())
    else:
        e.pop("DEVNS_TOPOLOGY", None)
    # LD_PRELOAD reaches the command only (the script exports it just before
    # exec), so unshare, sh and mount leave no logs of their own
    e["DEVNS_LD_PRELOAD"] = e.pop("LD_PRELOAD")
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", SETUP, "devns", *cmd]
    base = e
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    kwargs.setdefault("text", True)
    return subprocess.run(argv, env=base, timeout=timeout, **kwargs)
