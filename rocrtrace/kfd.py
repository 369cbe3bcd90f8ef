"""Kernel user-API facts: ioctl request encoding, the KFD/DRM/dma-buf/XDNA
catalogue, and the constants of the SVM and memory ioctls.

Numbers are for x86_64 (ref/kfd-uapi.md).  Kernels dispatch on (type, nr) and
read the size field as data, so everything here is keyed by (type, nr); the
request codes are kept only to resolve the names strace prints.
"""
from __future__ import annotations

IOC_NONE, IOC_WRITE, IOC_READ = 0, 1, 2

TYPE_KFD = 0x4B      # 'K'
TYPE_DRM = 0x64      # 'd'
TYPE_DMABUF = 0x62   # 'b'
TYPE_DMAHEAP = 0x48  # 'H'
TYPE_UDMABUF = 0x75  # 'u'

DRM_COMMAND_BASE, DRM_COMMAND_END = 0x40, 0xA0


def ioc(dir_: int, type_: int, nr: int, size: int) -> int:
    return (dir_ << 30) | (size << 16) | (type_ << 8) | nr


def decode_request(req: int) -> tuple[int, int, int, int]:
    """(dir, type, nr, size) of a 32-bit request code."""
    req &= 0xFFFFFFFF
    return (req >> 30) & 3, (req >> 8) & 0xFF, req & 0xFF, (req >> 16) & 0x3FFF


# (type, nr) -> (canonical name, dir, struct size of the newest header)
KFD = {
    0x01: ("AMDKFD_IOC_GET_VERSION", 2, 8),
    0x02: ("AMDKFD_IOC_CREATE_QUEUE", 3, 96),
    0x03: ("AMDKFD_IOC_DESTROY_QUEUE", 3, 8),
    0x04: ("AMDKFD_IOC_SET_MEMORY_POLICY", 1, 32),
    0x05: ("AMDKFD_IOC_GET_CLOCK_COUNTERS", 3, 40),
    0x06: ("AMDKFD_IOC_GET_PROCESS_APERTURES", 2, 400),
    0x07: ("AMDKFD_IOC_UPDATE_QUEUE", 1, 24),
    0x08: ("AMDKFD_IOC_CREATE_EVENT", 3, 32),
    0x09: ("AMDKFD_IOC_DESTROY_EVENT", 1, 8),
    0x0A: ("AMDKFD_IOC_SET_EVENT", 1, 8),
    0x0B: ("AMDKFD_IOC_RESET_EVENT", 1, 8),
    0x0C: ("AMDKFD_IOC_WAIT_EVENTS", 3, 24),
    0x0D: ("AMDKFD_IOC_DBG_REGISTER_DEPRECATED", 1, 8),
    0x0E: ("AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED", 1, 8),
    0x0F: ("AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED", 1, 16),
    0x10: ("AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED", 1, 16),
    0x11: ("AMDKFD_IOC_SET_SCRATCH_BACKING_VA", 3, 16),
    0x12: ("AMDKFD_IOC_GET_TILE_CONFIG", 3, 40),
    0x13: ("AMDKFD_IOC_SET_TRAP_HANDLER", 1, 24),
    0x14: ("AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", 3, 16),
    0x15: ("AMDKFD_IOC_ACQUIRE_VM", 1, 8),
    0x16: ("AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", 3, 40),
    0x17: ("AMDKFD_IOC_FREE_MEMORY_OF_GPU", 1, 8),
    0x18: ("AMDKFD_IOC_MAP_MEMORY_TO_GPU", 3, 24),
    0x19: ("AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", 3, 24),
    0x1A: ("AMDKFD_IOC_SET_CU_MASK", 1, 16),
    0x1B: ("AMDKFD_IOC_GET_QUEUE_WAVE_STATE", 3, 24),
    0x1C: ("AMDKFD_IOC_GET_DMABUF_INFO", 3, 32),
    0x1D: ("AMDKFD_IOC_IMPORT_DMABUF", 3, 24),
    0x1E: ("AMDKFD_IOC_ALLOC_QUEUE_GWS", 3, 16),
    0x1F: ("AMDKFD_IOC_SMI_EVENTS", 3, 8),
    0x20: ("AMDKFD_IOC_SVM", 3, 24),
    0x21: ("AMDKFD_IOC_SET_XNACK_MODE", 3, 4),
    0x22: ("AMDKFD_IOC_CRIU_OP", 3, 56),
    0x23: ("AMDKFD_IOC_AVAILABLE_MEMORY", 3, 16),
    0x24: ("AMDKFD_IOC_EXPORT_DMABUF", 3, 16),
    0x25: ("AMDKFD_IOC_RUNTIME_ENABLE", 3, 16),
    0x26: ("AMDKFD_IOC_DBG_TRAP", 3, 32),
    0x27: ("AMDKFD_IOC_CREATE_PROCESS", 0, 0),
    0x28: ("AMDKFD_IOC_PROFILER", 3, 16),
    # ROCm DKMS / libhsakmt-only numbers (kfd-uapi.md 2a)
    0x80: ("AMDKFD_IOC_IPC_IMPORT_HANDLE", 3, 48),
    0x81: ("AMDKFD_IOC_IPC_EXPORT_HANDLE", 3, 32),
    0x82: ("AMDKFD_IOC_DBG_TRAP_DEPRECATED", 3, 40),
    0x83: ("AMDKFD_IOC_CROSS_MEMORY_COPY", 3, 48),
    0x84: ("AMDKFD_IOC_RLC_SPM", 3, 32),
    0x85: ("AMDKFD_IOC_PC_SAMPLE", 3, 32),
    0x86: ("AMDKFD_IOC_PROFILER_ROCM", 3, 40),
    0x87: ("AMDKFD_IOC_AIS_OP", 3, 40),
}

DRM_CORE = {
    0x00: ("DRM_IOCTL_VERSION", 3, 64),
    0x09: ("DRM_IOCTL_GEM_CLOSE", 1, 8),
    0x0A: ("DRM_IOCTL_GEM_FLINK", 3, 8),
    0x0B: ("DRM_IOCTL_GEM_OPEN", 3, 16),
    0x0C: ("DRM_IOCTL_GET_CAP", 3, 16),
    0x0D: ("DRM_IOCTL_SET_CLIENT_CAP", 1, 16),
    0x2D: ("DRM_IOCTL_PRIME_HANDLE_TO_FD", 3, 12),
    0x2E: ("DRM_IOCTL_PRIME_FD_TO_HANDLE", 3, 12),
    0xBF: ("DRM_IOCTL_SYNCOBJ_CREATE", 3, 8),
    0xC0: ("DRM_IOCTL_SYNCOBJ_DESTROY", 3, 8),
    0xC1: ("DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD", 3, 24),
    0xC2: ("DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE", 3, 24),
    0xC3: ("DRM_IOCTL_SYNCOBJ_WAIT", 3, 40),
    0xC4: ("DRM_IOCTL_SYNCOBJ_RESET", 3, 16),
    0xC5: ("DRM_IOCTL_SYNCOBJ_SIGNAL", 3, 16),
    0xCA: ("DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT", 3, 48),
    0xCB: ("DRM_IOCTL_SYNCOBJ_QUERY", 3, 24),
    0xCC: ("DRM_IOCTL_SYNCOBJ_TRANSFER", 3, 32),
    0xCD: ("DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL", 3, 24),
    0xCF: ("DRM_IOCTL_SYNCOBJ_EVENTFD", 3, 24),
    0xD2: ("DRM_IOCTL_GEM_CHANGE_HANDLE", 3, 8),
}

AMDGPU = {
    0x40: ("DRM_IOCTL_AMDGPU_GEM_CREATE", 3, 32),
    0x41: ("DRM_IOCTL_AMDGPU_GEM_MMAP", 3, 8),
    0x42: ("DRM_IOCTL_AMDGPU_CTX", 3, 16),
    0x43: ("DRM_IOCTL_AMDGPU_BO_LIST", 3, 24),
    0x44: ("DRM_IOCTL_AMDGPU_CS", 3, 24),
    0x45: ("DRM_IOCTL_AMDGPU_INFO", 1, 32),
    0x46: ("DRM_IOCTL_AMDGPU_GEM_METADATA", 3, 288),
    0x47: ("DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE", 3, 16),
    0x48: ("DRM_IOCTL_AMDGPU_GEM_VA", 1, 64),
    0x49: ("DRM_IOCTL_AMDGPU_WAIT_CS", 3, 32),
    0x50: ("DRM_IOCTL_AMDGPU_GEM_OP", 3, 24),
    0x51: ("DRM_IOCTL_AMDGPU_GEM_USERPTR", 3, 24),
    0x52: ("DRM_IOCTL_AMDGPU_WAIT_FENCES", 3, 24),
    0x53: ("DRM_IOCTL_AMDGPU_VM", 3, 8),
    0x54: ("DRM_IOCTL_AMDGPU_FENCE_TO_HANDLE", 3, 32),
    0x55: ("DRM_IOCTL_AMDGPU_SCHED", 1, 16),
}

AMDXDNA = {
    0x40: ("DRM_IOCTL_AMDXDNA_CREATE_HWCTX", 3, 56),
    0x41: ("DRM_IOCTL_AMDXDNA_DESTROY_HWCTX", 3, 8),
    0x42: ("DRM_IOCTL_AMDXDNA_CONFIG_HWCTX", 3, 24),
    0x43: ("DRM_IOCTL_AMDXDNA_CREATE_BO", 3, 32),
    0x44: ("DRM_IOCTL_AMDXDNA_GET_BO_INFO", 3, 48),
    0x45: ("DRM_IOCTL_AMDXDNA_SYNC_BO", 3, 24),
    0x46: ("DRM_IOCTL_AMDXDNA_EXEC_CMD", 3, 56),
    0x47: ("DRM_IOCTL_AMDXDNA_GET_INFO", 3, 16),
    0x48: ("DRM_IOCTL_AMDXDNA_SET_STATE", 3, 16),
    0x49: ("DRM_IOCTL_AMDXDNA_WAIT_CMD", 1, 16),
    0x4A: ("DRM_IOCTL_AMDXDNA_GET_ARRAY", 3, 24),
}

DMABUF = {
    0x00: ("DMA_BUF_IOCTL_SYNC", 1, 8),
    0x01: ("DMA_BUF_SET_NAME", 1, 8),
    0x02: ("DMA_BUF_IOCTL_EXPORT_SYNC_FILE", 3, 8),
    0x03: ("DMA_BUF_IOCTL_IMPORT_SYNC_FILE", 1, 8),
}
DMAHEAP = {0x00: ("DMA_HEAP_IOCTL_ALLOC", 3, 24)}
UDMABUF = {0x42: ("UDMABUF_CREATE", 1, 24), 0x43: ("UDMABUF_CREATE_LIST", 1, 8)}

_TABLES = {TYPE_KFD: KFD, TYPE_DMABUF: DMABUF, TYPE_DMAHEAP: DMAHEAP,
           TYPE_UDMABUF: UDMABUF}


def device_of(path: str | None) -> str | None:
    """Which driver family an fd path belongs to: kfd, drm, accel or None."""
    if not path:
        return None
    if path.startswith("/dev/kfd"):
        return "kfd"
    if path.startswith("/dev/dri/"):
        return "drm"
    if path.startswith("/dev/accel/"):
        return "accel"
    return None


def ioctl_name(type_: int | None, nr: int | None, path: str | None = None,
               hint: str | None = None) -> str | None:
    """Canonical name for (type, nr).  DRM driver numbers are shared between
    drivers: the fd's device (or strace's own name as ``hint``) decides."""
    if type_ is None or nr is None:
        return None
    if type_ == TYPE_DRM:
        if DRM_COMMAND_BASE <= nr < DRM_COMMAND_END:
            dev = device_of(path)
            if dev == "accel" or (hint and "AMDXDNA" in hint and dev != "drm"):
                ent = AMDXDNA.get(nr)
            else:
                ent = AMDGPU.get(nr)
        else:
            ent = DRM_CORE.get(nr)
        return ent[0] if ent else None
    ent = _TABLES.get(type_, {}).get(nr)
    return ent[0] if ent else None


def _name_index() -> dict[str, tuple[int, int, int, int]]:
    idx: dict[str, tuple[int, int, int, int]] = {}
    for type_, table in ((TYPE_KFD, KFD), (TYPE_DRM, DRM_CORE), (TYPE_DRM, AMDGPU),
                         (TYPE_DRM, AMDXDNA), (TYPE_DMABUF, DMABUF),
                         (TYPE_DMAHEAP, DMAHEAP), (TYPE_UDMABUF, UDMABUF)):
        for nr, (name, d, size) in table.items():
            idx[name] = (d, type_, nr, size)
    # Sizes that strace tables of older kernels print under the same name.
    idx["AMDKFD_IOC_CREATE_QUEUE_OLD"] = (3, TYPE_KFD, 0x02, 88)
    return idx


# name -> (dir, type, nr, size) for resolving strace's symbolic requests
REQUEST_BY_NAME = _name_index()

# strace's names for codes whose size differs from the newest header; strace
# names a code only on an exact match, so a name tells the size it was built for
STRACE_NAME_SIZES = {
    "AMDKFD_IOC_CREATE_QUEUE": (88, 96),
    "DRM_IOCTL_AMDGPU_GEM_VA": (40, 64),
    "DRM_IOCTL_AMDGPU_GEM_OP": (16, 24),
}

# --- SVM ---------------------------------------------------------------------

SVM_OP_SET_ATTR, SVM_OP_GET_ATTR = 0, 1

ATTR_PREFERRED_LOC = 0
ATTR_PREFETCH_LOC = 1
ATTR_ACCESS = 2
ATTR_ACCESS_IN_PLACE = 3
ATTR_NO_ACCESS = 4
ATTR_SET_FLAGS = 5
ATTR_CLR_FLAGS = 6
ATTR_GRANULARITY = 7

ATTR_NAMES = {
    ATTR_PREFERRED_LOC: "KFD_IOCTL_SVM_ATTR_PREFERRED_LOC",
    ATTR_PREFETCH_LOC: "KFD_IOCTL_SVM_ATTR_PREFETCH_LOC",
    ATTR_ACCESS: "KFD_IOCTL_SVM_ATTR_ACCESS",
    ATTR_ACCESS_IN_PLACE: "KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE",
    ATTR_NO_ACCESS: "KFD_IOCTL_SVM_ATTR_NO_ACCESS",
    ATTR_SET_FLAGS: "KFD_IOCTL_SVM_ATTR_SET_FLAGS",
    ATTR_CLR_FLAGS: "KFD_IOCTL_SVM_ATTR_CLR_FLAGS",
    ATTR_GRANULARITY: "KFD_IOCTL_SVM_ATTR_GRANULARITY",
}

FLAG_HOST_ACCESS = 0x01
FLAG_COHERENT = 0x02
FLAG_HIVE_LOCAL = 0x04
FLAG_GPU_RO = 0x08
FLAG_GPU_EXEC = 0x10
FLAG_GPU_READ_MOSTLY = 0x20
FLAG_GPU_ALWAYS_MAPPED = 0x40
FLAG_EXT_COHERENT = 0x80

SVM_FLAG_NAMES = {
    FLAG_HOST_ACCESS: "KFD_IOCTL_SVM_FLAG_HOST_ACCESS",
    FLAG_COHERENT: "KFD_IOCTL_SVM_FLAG_COHERENT",
    FLAG_HIVE_LOCAL: "KFD_IOCTL_SVM_FLAG_HIVE_LOCAL",
    FLAG_GPU_RO: "KFD_IOCTL_SVM_FLAG_GPU_RO",
    FLAG_GPU_EXEC: "KFD_IOCTL_SVM_FLAG_GPU_EXEC",
    FLAG_GPU_READ_MOSTLY: "KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY",
    FLAG_GPU_ALWAYS_MAPPED: "KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED",
    FLAG_EXT_COHERENT: "KFD_IOCTL_SVM_FLAG_EXT_COHERENT",
}
DEFAULT_SVM_FLAGS = FLAG_HOST_ACCESS | FLAG_COHERENT
SVM_LOCATION_SYSMEM = 0
SVM_LOCATION_UNDEFINED = 0xFFFFFFFF
DEFAULT_GRANULARITY = 9

ALLOC_FLAG_USERPTR = 0x4
ALLOC_FLAG_NAMES = {
    0x00000001: "KFD_IOC_ALLOC_MEM_FLAGS_VRAM",
    0x00000002: "KFD_IOC_ALLOC_MEM_FLAGS_GTT",
    0x00000004: "KFD_IOC_ALLOC_MEM_FLAGS_USERPTR",
    0x00000008: "KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL",
    0x00000010: "KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP",
    0x00800000: "KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS",
    0x01000000: "KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT",
    0x02000000: "KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED",
    0x04000000: "KFD_IOC_ALLOC_MEM_FLAGS_COHERENT",
    0x08000000: "KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM",
    0x10000000: "KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE",
    0x20000000: "KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC",
    0x40000000: "KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE",
    0x80000000: "KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE",
}

# Symbolic constants that may appear as values in decoded structs, by name.
OPEN_FLAG_NAMES = {0o2000000: "O_CLOEXEC", 0o2: "O_RDWR", 0o1: "O_WRONLY"}

CONSTANTS: dict[str, int] = {
    "KFD_IOCTL_SVM_OP_SET_ATTR": SVM_OP_SET_ATTR,
    "KFD_IOCTL_SVM_OP_GET_ATTR": SVM_OP_GET_ATTR,
    "KFD_IOCTL_SVM_LOCATION_SYSMEM": SVM_LOCATION_SYSMEM,
    "KFD_IOCTL_SVM_LOCATION_UNDEFINED": SVM_LOCATION_UNDEFINED,
    "O_RDONLY": 0, "O_WRONLY": 0o1, "O_RDWR": 0o2, "O_CLOEXEC": 0o2000000,
    "DRM_CLOEXEC": 0o2000000, "DRM_RDWR": 0o2,
}
for _table in (ATTR_NAMES, SVM_FLAG_NAMES, ALLOC_FLAG_NAMES):
    for _v, _n in _table.items():
        CONSTANTS[_n] = _v
# enumerations of the KFD set-up ioctls the capture library decodes
for _v, _n in enumerate(("KFD_IOC_EVENT_SIGNAL", "KFD_IOC_EVENT_NODECHANGE",
                         "KFD_IOC_EVENT_DEVICESTATECHANGE", "KFD_IOC_EVENT_HW_EXCEPTION",
                         "KFD_IOC_EVENT_SYSTEM_EVENT", "KFD_IOC_EVENT_DEBUG_EVENT",
                         "KFD_IOC_EVENT_PROFILE_EVENT", "KFD_IOC_EVENT_QUEUE_EVENT",
                         "KFD_IOC_EVENT_MEMORY")):
    CONSTANTS[_n] = _v
for _v, _n in enumerate(("KFD_IOC_QUEUE_TYPE_COMPUTE", "KFD_IOC_QUEUE_TYPE_SDMA",
                         "KFD_IOC_QUEUE_TYPE_COMPUTE_AQL", "KFD_IOC_QUEUE_TYPE_SDMA_XGMI")):
    CONSTANTS[_n] = _v
CONSTANTS["KFD_IOC_CACHE_POLICY_COHERENT"] = 0
CONSTANTS["KFD_IOC_CACHE_POLICY_NONCOHERENT"] = 1
# XDNA BO types
for _v, _n in enumerate(("AMDXDNA_BO_INVALID", "AMDXDNA_BO_SHARE", "AMDXDNA_BO_DEV_HEAP",
                         "AMDXDNA_BO_DEV", "AMDXDNA_BO_CMD")):
    CONSTANTS[_n] = _v


def flag_names(value: int, names: dict[int, str]) -> str:
    """``A|B|0x100`` in kernel-header names; ``0`` for none."""
    if value == 0:
        return "0"
    parts = []
    rest = value
    for bit, name in names.items():
        if value & bit == bit and bit:
            parts.append(name)
            rest &= ~bit
    if rest:
        parts.append(f"{rest:#x}")
    return "|".join(parts)


# (type, nr) of the ioctls the models interpret
GET_VERSION = (TYPE_KFD, 0x01)
CREATE_QUEUE = (TYPE_KFD, 0x02)
SET_MEMORY_POLICY = (TYPE_KFD, 0x04)
CREATE_EVENT = (TYPE_KFD, 0x08)
GET_PROCESS_APERTURES_NEW = (TYPE_KFD, 0x14)
ACQUIRE_VM = (TYPE_KFD, 0x15)
SET_XNACK_MODE = (TYPE_KFD, 0x21)
SVM = (TYPE_KFD, 0x20)
ALLOC_MEMORY_OF_GPU = (TYPE_KFD, 0x16)
FREE_MEMORY_OF_GPU = (TYPE_KFD, 0x17)
MAP_MEMORY_TO_GPU = (TYPE_KFD, 0x18)
UNMAP_MEMORY_FROM_GPU = (TYPE_KFD, 0x19)
GET_DMABUF_INFO = (TYPE_KFD, 0x1C)
IMPORT_DMABUF = (TYPE_KFD, 0x1D)
SMI_EVENTS = (TYPE_KFD, 0x1F)
EXPORT_DMABUF = (TYPE_KFD, 0x24)
GEM_CLOSE = (TYPE_DRM, 0x09)
PRIME_HANDLE_TO_FD = (TYPE_DRM, 0x2D)
PRIME_FD_TO_HANDLE = (TYPE_DRM, 0x2E)
SYNCOBJ_HANDLE_TO_FD = (TYPE_DRM, 0xC1)
AMDGPU_GEM_CREATE = (TYPE_DRM, 0x40)   # amdgpu render node
XDNA_CREATE_BO = (TYPE_DRM, 0x43)      # accel node
DMA_HEAP_ALLOC = (TYPE_DMAHEAP, 0x00)
DMABUF_EXPORT_SYNC_FILE = (TYPE_DMABUF, 0x02)
UDMABUF_CREATE = (TYPE_UDMABUF, 0x42)
