"""Issue real KFD / DRM / accel ioctls from Python with ctypes structs laid
out like the kernel's (include/uapi/linux/kfd_ioctl.h), through libc's ioctl
symbol so the preloaded libraries see them."""

from __future__ import annotations

import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.ioctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p]
libc.ioctl.restype = ctypes.c_int

u32, u64, s32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32


def IOC(d: int, t: int, nr: int, size: int) -> int:
    return (d << 30) | (size << 16) | (t << 8) | nr


def IOWR(t, nr, size):
    return IOC(3, t, nr, size)


class SvmAttr(ctypes.Structure):
    _fields_ = [("type", u32), ("value", u32)]


def svm_struct(nattr: int):
    class SvmArgs(ctypes.Structure):
        _fields_ = [("start_addr", u64), ("size", u64), ("op", u32), ("nattr", u32), ("attrs", SvmAttr * nattr)]

    return SvmArgs


class ExportDmabuf(ctypes.Structure):
    _fields_ = [("handle", u64), ("flags", u32), ("dmabuf_fd", u32)]


class ImportDmabuf(ctypes.Structure):
    _fields_ = [("va_addr", u64), ("handle", u64), ("gpu_id", u32), ("dmabuf_fd", u32)]


class GetDmabufInfo(ctypes.Structure):
    _fields_ = [
        ("size", u64),
        ("metadata_ptr", u64),
        ("metadata_size", u32),
        ("gpu_id", u32),
        ("flags", u32),
        ("dmabuf_fd", u32),
    ]


class AllocMemory(ctypes.Structure):
    _fields_ = [("va_addr", u64), ("size", u64), ("handle", u64), ("mmap_offset", u64), ("gpu_id", u32), ("flags", u32)]


class FreeMemory(ctypes.Structure):
    _fields_ = [("handle", u64)]


class MapMemory(ctypes.Structure):
    _fields_ = [("handle", u64), ("device_ids_array_ptr", u64), ("n_devices", u32), ("n_success", u32)]


class AcquireVm(ctypes.Structure):
    _fields_ = [("drm_fd", u32), ("gpu_id", u32)]


class GetVersion(ctypes.Structure):
    _fields_ = [("major_version", u32), ("minor_version", u32)]


class Prime(ctypes.Structure):
    _fields_ = [("handle", u32), ("flags", u32), ("fd", s32)]


class GemClose(ctypes.Structure):
    _fields_ = [("handle", u32), ("pad", u32)]


class XdnaCreateBo(ctypes.Structure):
    _fields_ = [("flags", u64), ("vaddr", u64), ("size", u64), ("type", u32), ("handle", u32)]


class GemCreate(ctypes.Structure):
    _fields_ = [("bo_size", u64), ("alignment", u64), ("domains", u64), ("domain_flags", u64)]


class HeapAlloc(ctypes.Structure):
    _fields_ = [("len", u64), ("fd", u32), ("fd_flags", u32), ("heap_flags", u64)]


class XnackMode(ctypes.Structure):
    _fields_ = [("xnack_enabled", s32)]


class AvailableMemory(ctypes.Structure):
    _fields_ = [("available", u64), ("gpu_id", u32), ("pad", u32)]


K, D, H = 0x4B, 0x64, 0x48
GET_VERSION = IOC(2, K, 0x01, 8)
ACQUIRE_VM = IOC(1, K, 0x15, 8)
ALLOC_MEMORY_OF_GPU = IOWR(K, 0x16, 40)
FREE_MEMORY_OF_GPU = IOC(1, K, 0x17, 8)
MAP_MEMORY_TO_GPU = IOWR(K, 0x18, 24)
UNMAP_MEMORY_FROM_GPU = IOWR(K, 0x19, 24)
GET_DMABUF_INFO = IOWR(K, 0x1C, 32)
IMPORT_DMABUF = IOWR(K, 0x1D, 24)
SET_XNACK_MODE = IOWR(K, 0x21, 4)
AVAILABLE_MEMORY = IOWR(K, 0x23, 16)
EXPORT_DMABUF = IOWR(K, 0x24, 16)
GEM_CLOSE = IOC(1, D, 0x09, 8)
PRIME_HANDLE_TO_FD = IOWR(D, 0x2D, 12)
PRIME_FD_TO_HANDLE = IOWR(D, 0x2E, 12)
AMDGPU_GEM_CREATE = IOWR(D, 0x40, 32)
XDNA_CREATE_BO = IOWR(D, 0x43, 32)
DMA_HEAP_ALLOC = IOWR(H, 0x00, 24)


def svm_request(nattr: int) -> int:
    return IOWR(K, 0x20, 24 + 8 * nattr)


class IoctlError(OSError):
    pass


def ioctl(fd: int, request: int, struct=None) -> int:
    """ioctl through libc; raises IoctlError(errno) on -1."""
    ptr = ctypes.addressof(struct) if struct is not None else None
    r = libc.ioctl(fd, request, ptr)
    if r == -1:
        e = ctypes.get_errno()
        raise IoctlError(e, os.strerror(e))
    return r


def try_ioctl(fd: int, request: int, struct=None) -> int:
    """ioctl returning -errno instead of raising."""
    try:
        return ioctl(fd, request, struct)
    except IoctlError as e:
        return -e.errno


def open_kfd() -> int:
    return os.open("/dev/kfd", os.O_RDWR | os.O_CLOEXEC)


def open_render(n: int = 128) -> int:
    return os.open(f"/dev/dri/renderD{n}", os.O_RDWR | os.O_CLOEXEC)


def open_accel(n: int = 0) -> int:
    return os.open(f"/dev/accel/accel{n}", os.O_RDWR | os.O_CLOEXEC)


def svm(fd: int, start: int, size: int, attrs: list[tuple[int, int]], op: int = 0, raise_=True):
    """SET_ATTR (op 0) or GET_ATTR (op 1); returns the struct (answers in attrs)."""
    S = svm_struct(len(attrs))
    s = S(start, size, op, len(attrs))
    for i, (t, v) in enumerate(attrs):
        s.attrs[i] = SvmAttr(t, v)
    (ioctl if raise_ else try_ioctl)(fd, svm_request(len(attrs)), s)
    return s


def alloc(fd: int, gpu_id: int, size: int, va: int = 0, flags: int = 0x2, mmap_offset: int = 0):
    a = AllocMemory(va, size, 0, mmap_offset, gpu_id, flags)
    ioctl(fd, ALLOC_MEMORY_OF_GPU, a)
    return a


def map_memory(fd: int, handle: int, gpus: list[int], unmap=False):
    arr = (u32 * len(gpus))(*gpus)
    m = MapMemory(handle, ctypes.addressof(arr), len(gpus), 0)
    m._keep = arr
    ioctl(fd, UNMAP_MEMORY_FROM_GPU if unmap else MAP_MEMORY_TO_GPU, m)
    return m


def anon_pages(n: int, page: int = 4096) -> tuple[int, object]:
    """An mmap'd anonymous range (address, keep-alive object)."""
    import mmap

    m = mmap.mmap(-1, n * page)
    buf = (ctypes.c_char * (n * page)).from_buffer(m)
    return ctypes.addressof(buf), (m, buf)
