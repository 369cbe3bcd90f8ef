//! Kernel user-API facts: ioctl request encoding, the KFD/DRM/dma-buf/XDNA
//! catalogue, and the constants of the SVM and memory ioctls (the port of
//! rocrtrace/kfd.py; numbers are for x86_64, from the kernel's uapi
//! headers: linux/kfd_ioctl.h, drm/amdgpu_drm.h, linux/dma-buf.h, ...).
//!
//! Kernels dispatch on (type, nr) and read the size field as data, so
//! everything here is keyed by (type, nr); request codes are kept only to
//! resolve the names strace prints.

pub const IOC_NONE: u8 = 0;
pub const IOC_WRITE: u8 = 1;
pub const IOC_READ: u8 = 2;
pub const IOC_READ_WRITE: u8 = IOC_READ | IOC_WRITE;

/// 'K'
pub const TYPE_KFD: u8 = 0x4B;
/// 'd'
pub const TYPE_DRM: u8 = 0x64;
/// 'b'
pub const TYPE_DMABUF: u8 = 0x62;
/// 'H'
pub const TYPE_DMAHEAP: u8 = 0x48;
/// 'u'
pub const TYPE_UDMABUF: u8 = 0x75;

/// DRM driver ioctls are nr 0x40..0xa0; every other nr is the DRM core's.
pub const DRM_COMMAND_BASE: u8 = 0x40;
pub const DRM_COMMAND_END: u8 = 0xA0;

/// The largest value of the request's size field (14 bits).
pub const IOC_SIZE_MAX: u16 = 0x3FFF;

/// `_IOC(dir, type, nr, size)`; `size` is cut to its 14 bits and `dir` to
/// its 2, as the macro's fields are.
pub const fn ioc(dir: u8, type_: u8, nr: u8, size: u16) -> u32 {
    ((dir as u32 & 3) << 30)
        | ((size as u32 & IOC_SIZE_MAX as u32) << 16)
        | ((type_ as u32) << 8)
        | nr as u32
}

/// The four fields of a request code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Request {
    pub dir: u8,
    pub type_: u8,
    pub nr: u8,
    pub size: u16,
}

/// (dir, type, nr, size) of a 32-bit request code (kfd.decode_request;
/// the Python masks a wider int to 32 bits first, which `u32` already is).
pub const fn decode_request(req: u32) -> Request {
    Request {
        dir: ((req >> 30) & 3) as u8,
        type_: ((req >> 8) & 0xFF) as u8,
        nr: (req & 0xFF) as u8,
        size: ((req >> 16) & IOC_SIZE_MAX as u32) as u16,
    }
}

/// One ioctl of a table: canonical name, direction and the struct size of
/// the newest header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub nr: u8,
    pub name: &'static str,
    pub dir: u8,
    pub size: u16,
}

const fn e(nr: u8, name: &'static str, dir: u8, size: u16) -> Entry {
    Entry {
        nr,
        name,
        dir,
        size,
    }
}

/// AMDKFD ioctls by nr (Linux 7.2, KFD 1.23), then the ROCm DKMS /
/// libhsakmt-only numbers (kfd-uapi.md 2, 2a).
pub const KFD: &[Entry] = &[
    e(0x01, "AMDKFD_IOC_GET_VERSION", 2, 8),
    e(0x02, "AMDKFD_IOC_CREATE_QUEUE", 3, 96),
    e(0x03, "AMDKFD_IOC_DESTROY_QUEUE", 3, 8),
    e(0x04, "AMDKFD_IOC_SET_MEMORY_POLICY", 1, 32),
    e(0x05, "AMDKFD_IOC_GET_CLOCK_COUNTERS", 3, 40),
    e(0x06, "AMDKFD_IOC_GET_PROCESS_APERTURES", 2, 400),
    e(0x07, "AMDKFD_IOC_UPDATE_QUEUE", 1, 24),
    e(0x08, "AMDKFD_IOC_CREATE_EVENT", 3, 32),
    e(0x09, "AMDKFD_IOC_DESTROY_EVENT", 1, 8),
    e(0x0A, "AMDKFD_IOC_SET_EVENT", 1, 8),
    e(0x0B, "AMDKFD_IOC_RESET_EVENT", 1, 8),
    e(0x0C, "AMDKFD_IOC_WAIT_EVENTS", 3, 24),
    e(0x0D, "AMDKFD_IOC_DBG_REGISTER_DEPRECATED", 1, 8),
    e(0x0E, "AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED", 1, 8),
    e(0x0F, "AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED", 1, 16),
    e(0x10, "AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED", 1, 16),
    e(0x11, "AMDKFD_IOC_SET_SCRATCH_BACKING_VA", 3, 16),
    e(0x12, "AMDKFD_IOC_GET_TILE_CONFIG", 3, 40),
    e(0x13, "AMDKFD_IOC_SET_TRAP_HANDLER", 1, 24),
    e(0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", 3, 16),
    e(0x15, "AMDKFD_IOC_ACQUIRE_VM", 1, 8),
    e(0x16, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", 3, 40),
    e(0x17, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", 1, 8),
    e(0x18, "AMDKFD_IOC_MAP_MEMORY_TO_GPU", 3, 24),
    e(0x19, "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", 3, 24),
    e(0x1A, "AMDKFD_IOC_SET_CU_MASK", 1, 16),
    e(0x1B, "AMDKFD_IOC_GET_QUEUE_WAVE_STATE", 3, 24),
    e(0x1C, "AMDKFD_IOC_GET_DMABUF_INFO", 3, 32),
    e(0x1D, "AMDKFD_IOC_IMPORT_DMABUF", 3, 24),
    e(0x1E, "AMDKFD_IOC_ALLOC_QUEUE_GWS", 3, 16),
    e(0x1F, "AMDKFD_IOC_SMI_EVENTS", 3, 8),
    e(0x20, "AMDKFD_IOC_SVM", 3, 24),
    e(0x21, "AMDKFD_IOC_SET_XNACK_MODE", 3, 4),
    e(0x22, "AMDKFD_IOC_CRIU_OP", 3, 56),
    e(0x23, "AMDKFD_IOC_AVAILABLE_MEMORY", 3, 16),
    e(0x24, "AMDKFD_IOC_EXPORT_DMABUF", 3, 16),
    e(0x25, "AMDKFD_IOC_RUNTIME_ENABLE", 3, 16),
    e(0x26, "AMDKFD_IOC_DBG_TRAP", 3, 32),
    e(0x27, "AMDKFD_IOC_CREATE_PROCESS", 0, 0),
    e(0x28, "AMDKFD_IOC_PROFILER", 3, 16),
    e(0x80, "AMDKFD_IOC_IPC_IMPORT_HANDLE", 3, 48),
    e(0x81, "AMDKFD_IOC_IPC_EXPORT_HANDLE", 3, 32),
    e(0x82, "AMDKFD_IOC_DBG_TRAP_DEPRECATED", 3, 40),
    e(0x83, "AMDKFD_IOC_CROSS_MEMORY_COPY", 3, 48),
    e(0x84, "AMDKFD_IOC_RLC_SPM", 3, 32),
    e(0x85, "AMDKFD_IOC_PC_SAMPLE", 3, 32),
    e(0x86, "AMDKFD_IOC_PROFILER_ROCM", 3, 40),
    e(0x87, "AMDKFD_IOC_AIS_OP", 3, 40),
];

/// DRM core ioctls (nr outside the driver range).
pub const DRM_CORE: &[Entry] = &[
    e(0x00, "DRM_IOCTL_VERSION", 3, 64),
    e(0x09, "DRM_IOCTL_GEM_CLOSE", 1, 8),
    e(0x0A, "DRM_IOCTL_GEM_FLINK", 3, 8),
    e(0x0B, "DRM_IOCTL_GEM_OPEN", 3, 16),
    e(0x0C, "DRM_IOCTL_GET_CAP", 3, 16),
    e(0x0D, "DRM_IOCTL_SET_CLIENT_CAP", 1, 16),
    e(0x2D, "DRM_IOCTL_PRIME_HANDLE_TO_FD", 3, 12),
    e(0x2E, "DRM_IOCTL_PRIME_FD_TO_HANDLE", 3, 12),
    e(0xBF, "DRM_IOCTL_SYNCOBJ_CREATE", 3, 8),
    e(0xC0, "DRM_IOCTL_SYNCOBJ_DESTROY", 3, 8),
    e(0xC1, "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD", 3, 24),
    e(0xC2, "DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE", 3, 24),
    e(0xC3, "DRM_IOCTL_SYNCOBJ_WAIT", 3, 40),
    e(0xC4, "DRM_IOCTL_SYNCOBJ_RESET", 3, 16),
    e(0xC5, "DRM_IOCTL_SYNCOBJ_SIGNAL", 3, 16),
    e(0xCA, "DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT", 3, 48),
    e(0xCB, "DRM_IOCTL_SYNCOBJ_QUERY", 3, 24),
    e(0xCC, "DRM_IOCTL_SYNCOBJ_TRANSFER", 3, 32),
    e(0xCD, "DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL", 3, 24),
    e(0xCF, "DRM_IOCTL_SYNCOBJ_EVENTFD", 3, 24),
    e(0xD2, "DRM_IOCTL_GEM_CHANGE_HANDLE", 3, 8),
];

/// amdgpu driver ioctls (render nodes).
pub const AMDGPU: &[Entry] = &[
    e(0x40, "DRM_IOCTL_AMDGPU_GEM_CREATE", 3, 32),
    e(0x41, "DRM_IOCTL_AMDGPU_GEM_MMAP", 3, 8),
    e(0x42, "DRM_IOCTL_AMDGPU_CTX", 3, 16),
    e(0x43, "DRM_IOCTL_AMDGPU_BO_LIST", 3, 24),
    e(0x44, "DRM_IOCTL_AMDGPU_CS", 3, 24),
    e(0x45, "DRM_IOCTL_AMDGPU_INFO", 1, 32),
    e(0x46, "DRM_IOCTL_AMDGPU_GEM_METADATA", 3, 288),
    e(0x47, "DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE", 3, 16),
    e(0x48, "DRM_IOCTL_AMDGPU_GEM_VA", 1, 64),
    e(0x49, "DRM_IOCTL_AMDGPU_WAIT_CS", 3, 32),
    e(0x50, "DRM_IOCTL_AMDGPU_GEM_OP", 3, 24),
    e(0x51, "DRM_IOCTL_AMDGPU_GEM_USERPTR", 3, 24),
    e(0x52, "DRM_IOCTL_AMDGPU_WAIT_FENCES", 3, 24),
    e(0x53, "DRM_IOCTL_AMDGPU_VM", 3, 8),
    e(0x54, "DRM_IOCTL_AMDGPU_FENCE_TO_HANDLE", 3, 32),
    e(0x55, "DRM_IOCTL_AMDGPU_SCHED", 1, 16),
];

/// amdxdna driver ioctls (accel nodes); their nrs collide with amdgpu's.
pub const AMDXDNA: &[Entry] = &[
    e(0x40, "DRM_IOCTL_AMDXDNA_CREATE_HWCTX", 3, 56),
    e(0x41, "DRM_IOCTL_AMDXDNA_DESTROY_HWCTX", 3, 8),
    e(0x42, "DRM_IOCTL_AMDXDNA_CONFIG_HWCTX", 3, 24),
    e(0x43, "DRM_IOCTL_AMDXDNA_CREATE_BO", 3, 32),
    e(0x44, "DRM_IOCTL_AMDXDNA_GET_BO_INFO", 3, 48),
    e(0x45, "DRM_IOCTL_AMDXDNA_SYNC_BO", 3, 24),
    e(0x46, "DRM_IOCTL_AMDXDNA_EXEC_CMD", 3, 56),
    e(0x47, "DRM_IOCTL_AMDXDNA_GET_INFO", 3, 16),
    e(0x48, "DRM_IOCTL_AMDXDNA_SET_STATE", 3, 16),
    e(0x49, "DRM_IOCTL_AMDXDNA_WAIT_CMD", 1, 16),
    e(0x4A, "DRM_IOCTL_AMDXDNA_GET_ARRAY", 3, 24),
];

pub const DMABUF: &[Entry] = &[
    e(0x00, "DMA_BUF_IOCTL_SYNC", 1, 8),
    e(0x01, "DMA_BUF_SET_NAME", 1, 8),
    e(0x02, "DMA_BUF_IOCTL_EXPORT_SYNC_FILE", 3, 8),
    e(0x03, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE", 1, 8),
];
pub const DMAHEAP: &[Entry] = &[e(0x00, "DMA_HEAP_IOCTL_ALLOC", 3, 24)];
pub const UDMABUF: &[Entry] = &[
    e(0x42, "UDMABUF_CREATE", 1, 24),
    e(0x43, "UDMABUF_CREATE_LIST", 1, 8),
];

/// Every table with its type, in the order kfd._name_index walks them.
pub const TABLES: &[(u8, &[Entry])] = &[
    (TYPE_KFD, KFD),
    (TYPE_DRM, DRM_CORE),
    (TYPE_DRM, AMDGPU),
    (TYPE_DRM, AMDXDNA),
    (TYPE_DMABUF, DMABUF),
    (TYPE_DMAHEAP, DMAHEAP),
    (TYPE_UDMABUF, UDMABUF),
];

fn find(table: &[Entry], nr: u8) -> Option<&Entry> {
    table.iter().find(|x| x.nr == nr)
}

/// Which driver family an fd path belongs to (kfd.device_of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Kfd,
    Drm,
    Accel,
}

pub fn device_of(path: Option<&[u8]>) -> Option<Device> {
    let p = path?;
    if p.starts_with(b"/dev/kfd") {
        Some(Device::Kfd)
    } else if p.starts_with(b"/dev/dri/") {
        Some(Device::Drm)
    } else if p.starts_with(b"/dev/accel/") {
        Some(Device::Accel)
    } else {
        None
    }
}

/// The table entry for (type, nr) (kfd.ioctl_name).  DRM driver numbers are
/// shared between drivers: the fd's device decides, or strace's own name as
/// `hint` when the device is not known to be a render node.
pub fn ioctl_entry(
    type_: u8,
    nr: u8,
    path: Option<&[u8]>,
    hint: Option<&str>,
) -> Option<&'static Entry> {
    let table: &'static [Entry] = match type_ {
        TYPE_DRM if (DRM_COMMAND_BASE..DRM_COMMAND_END).contains(&nr) => {
            let dev = device_of(path);
            let xdna_hint = hint.is_some_and(|h| h.contains("AMDXDNA")) && dev != Some(Device::Drm);
            if dev == Some(Device::Accel) || xdna_hint {
                AMDXDNA
            } else {
                AMDGPU
            }
        }
        TYPE_DRM => DRM_CORE,
        TYPE_KFD => KFD,
        TYPE_DMABUF => DMABUF,
        TYPE_DMAHEAP => DMAHEAP,
        TYPE_UDMABUF => UDMABUF,
        _ => return None,
    };
    find(table, nr)
}

/// Canonical name for (type, nr); see [`ioctl_entry`].
pub fn ioctl_name(
    type_: u8,
    nr: u8,
    path: Option<&[u8]>,
    hint: Option<&str>,
) -> Option<&'static str> {
    ioctl_entry(type_, nr, path, hint).map(|x| x.name)
}

/// The name strace tables of older kernels print for CREATE_QUEUE's 88-byte
/// code (kfd._name_index's extra entry).
pub const CREATE_QUEUE_OLD: &str = "AMDKFD_IOC_CREATE_QUEUE_OLD";

/// Names outside the catalogue kept at most (see [`static_name`]).
pub const MAX_INTERNED: usize = 1 << 16;

/// An ioctl name as the `&'static str` events hold: the catalogue's own, or
/// for a name a log has that the catalogue does not know, one copy kept for
/// the process.  None once [`MAX_INTERNED`] such names are kept: a log of
/// made-up names must not grow memory with its length (strace itself knows
/// a few thousand names, so a real log never gets near).
pub fn static_name(name: &str) -> Option<&'static str> {
    use std::collections::HashSet;
    use std::sync::{LazyLock, Mutex};
    static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Default::default);
    if name == CREATE_QUEUE_OLD {
        return Some(CREATE_QUEUE_OLD);
    }
    for (_, table) in TABLES {
        if let Some(x) = table.iter().find(|x| x.name == name) {
            return Some(x.name);
        }
    }
    keep(
        &mut NAMES.lock().unwrap_or_else(|e| e.into_inner()),
        name,
        MAX_INTERNED,
    )
}

/// `name` from `set`, or added to it while it holds fewer than `cap`.
fn keep(
    set: &mut std::collections::HashSet<&'static str>,
    name: &str,
    cap: usize,
) -> Option<&'static str> {
    if let Some(&n) = set.get(name) {
        return Some(n);
    }
    if set.len() >= cap {
        return None;
    }
    let n: &'static str = Box::leak(name.into());
    set.insert(n);
    Some(n)
}

/// (dir, type, nr, size) of a symbolic request strace printed
/// (kfd.REQUEST_BY_NAME).
pub fn request_by_name(name: &str) -> Option<Request> {
    if name == CREATE_QUEUE_OLD {
        return Some(Request {
            dir: 3,
            type_: TYPE_KFD,
            nr: 0x02,
            size: 88,
        });
    }
    // the last table holding the name wins, as the Python dict's last write
    TABLES.iter().rev().find_map(|&(type_, table)| {
        table.iter().find(|x| x.name == name).map(|x| Request {
            dir: x.dir,
            type_,
            nr: x.nr,
            size: x.size,
        })
    })
}

/// strace names a code only on an exact match, so a name tells the size it
/// was built for: the names whose size differs between headers, with the
/// sizes they were printed for (kfd.STRACE_NAME_SIZES).
pub const STRACE_NAME_SIZES: &[(&str, &[u16])] = &[
    ("AMDKFD_IOC_CREATE_QUEUE", &[88, 96]),
    ("DRM_IOCTL_AMDGPU_GEM_VA", &[40, 64]),
    ("DRM_IOCTL_AMDGPU_GEM_OP", &[16, 24]),
];

// --- SVM ---------------------------------------------------------------------

pub const SVM_OP_SET_ATTR: u32 = 0;
pub const SVM_OP_GET_ATTR: u32 = 1;

pub const ATTR_PREFERRED_LOC: u32 = 0;
pub const ATTR_PREFETCH_LOC: u32 = 1;
pub const ATTR_ACCESS: u32 = 2;
pub const ATTR_ACCESS_IN_PLACE: u32 = 3;
pub const ATTR_NO_ACCESS: u32 = 4;
pub const ATTR_SET_FLAGS: u32 = 5;
pub const ATTR_CLR_FLAGS: u32 = 6;
pub const ATTR_GRANULARITY: u32 = 7;

pub const ATTR_NAMES: &[(u32, &str)] = &[
    (ATTR_PREFERRED_LOC, "KFD_IOCTL_SVM_ATTR_PREFERRED_LOC"),
    (ATTR_PREFETCH_LOC, "KFD_IOCTL_SVM_ATTR_PREFETCH_LOC"),
    (ATTR_ACCESS, "KFD_IOCTL_SVM_ATTR_ACCESS"),
    (ATTR_ACCESS_IN_PLACE, "KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE"),
    (ATTR_NO_ACCESS, "KFD_IOCTL_SVM_ATTR_NO_ACCESS"),
    (ATTR_SET_FLAGS, "KFD_IOCTL_SVM_ATTR_SET_FLAGS"),
    (ATTR_CLR_FLAGS, "KFD_IOCTL_SVM_ATTR_CLR_FLAGS"),
    (ATTR_GRANULARITY, "KFD_IOCTL_SVM_ATTR_GRANULARITY"),
];

/// The kernel-header name of an SVM attribute type.
pub fn attr_name(t: u32) -> Option<&'static str> {
    ATTR_NAMES.iter().find(|x| x.0 == t).map(|x| x.1)
}

pub const FLAG_HOST_ACCESS: u32 = 0x01;
pub const FLAG_COHERENT: u32 = 0x02;
pub const FLAG_HIVE_LOCAL: u32 = 0x04;
pub const FLAG_GPU_RO: u32 = 0x08;
pub const FLAG_GPU_EXEC: u32 = 0x10;
pub const FLAG_GPU_READ_MOSTLY: u32 = 0x20;
pub const FLAG_GPU_ALWAYS_MAPPED: u32 = 0x40;
pub const FLAG_EXT_COHERENT: u32 = 0x80;

pub const SVM_FLAG_NAMES: &[(u64, &str)] = &[
    (0x01, "KFD_IOCTL_SVM_FLAG_HOST_ACCESS"),
    (0x02, "KFD_IOCTL_SVM_FLAG_COHERENT"),
    (0x04, "KFD_IOCTL_SVM_FLAG_HIVE_LOCAL"),
    (0x08, "KFD_IOCTL_SVM_FLAG_GPU_RO"),
    (0x10, "KFD_IOCTL_SVM_FLAG_GPU_EXEC"),
    (0x20, "KFD_IOCTL_SVM_FLAG_GPU_READ_MOSTLY"),
    (0x40, "KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED"),
    (0x80, "KFD_IOCTL_SVM_FLAG_EXT_COHERENT"),
];

/// The flags of a new range.
pub const DEFAULT_SVM_FLAGS: u32 = FLAG_HOST_ACCESS | FLAG_COHERENT;
pub const SVM_LOCATION_SYSMEM: u32 = 0;
pub const SVM_LOCATION_UNDEFINED: u32 = 0xFFFF_FFFF;
/// log2 pages (2 MiB)
pub const DEFAULT_GRANULARITY: u32 = 9;

pub const ALLOC_FLAG_USERPTR: u32 = 0x4;
pub const ALLOC_FLAG_NAMES: &[(u64, &str)] = &[
    (0x0000_0001, "KFD_IOC_ALLOC_MEM_FLAGS_VRAM"),
    (0x0000_0002, "KFD_IOC_ALLOC_MEM_FLAGS_GTT"),
    (0x0000_0004, "KFD_IOC_ALLOC_MEM_FLAGS_USERPTR"),
    (0x0000_0008, "KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL"),
    (0x0000_0010, "KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP"),
    (0x0080_0000, "KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS"),
    (0x0100_0000, "KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT"),
    (0x0200_0000, "KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED"),
    (0x0400_0000, "KFD_IOC_ALLOC_MEM_FLAGS_COHERENT"),
    (0x0800_0000, "KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM"),
    (0x1000_0000, "KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE"),
    (0x2000_0000, "KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC"),
    (0x4000_0000, "KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE"),
    (0x8000_0000, "KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE"),
];

pub const OPEN_FLAG_NAMES: &[(u64, &str)] =
    &[(0o2000000, "O_CLOEXEC"), (0o2, "O_RDWR"), (0o1, "O_WRONLY")];

/// Symbolic constants that may appear as values in decoded structs, by name
/// (kfd.CONSTANTS): the plain ones here, then the attribute, flag and
/// enumeration names ([`constant`] looks in all of them).
const PLAIN_CONSTANTS: &[(&str, u64)] = &[
    ("KFD_IOCTL_SVM_OP_SET_ATTR", SVM_OP_SET_ATTR as u64),
    ("KFD_IOCTL_SVM_OP_GET_ATTR", SVM_OP_GET_ATTR as u64),
    ("KFD_IOCTL_SVM_LOCATION_SYSMEM", SVM_LOCATION_SYSMEM as u64),
    (
        "KFD_IOCTL_SVM_LOCATION_UNDEFINED",
        SVM_LOCATION_UNDEFINED as u64,
    ),
    ("O_RDONLY", 0),
    ("O_WRONLY", 0o1),
    ("O_RDWR", 0o2),
    ("O_CLOEXEC", 0o2000000),
    ("DRM_CLOEXEC", 0o2000000),
    ("DRM_RDWR", 0o2),
    ("KFD_IOC_CACHE_POLICY_COHERENT", 0),
    ("KFD_IOC_CACHE_POLICY_NONCOHERENT", 1),
];

/// Enumerations of the KFD set-up ioctls the capture library decodes, and
/// the XDNA BO types: each name's value is its index.
const ENUMS: &[&[&str]] = &[
    &[
        "KFD_IOC_EVENT_SIGNAL",
        "KFD_IOC_EVENT_NODECHANGE",
        "KFD_IOC_EVENT_DEVICESTATECHANGE",
        "KFD_IOC_EVENT_HW_EXCEPTION",
        "KFD_IOC_EVENT_SYSTEM_EVENT",
        "KFD_IOC_EVENT_DEBUG_EVENT",
        "KFD_IOC_EVENT_PROFILE_EVENT",
        "KFD_IOC_EVENT_QUEUE_EVENT",
        "KFD_IOC_EVENT_MEMORY",
    ],
    &[
        "KFD_IOC_QUEUE_TYPE_COMPUTE",
        "KFD_IOC_QUEUE_TYPE_SDMA",
        "KFD_IOC_QUEUE_TYPE_COMPUTE_AQL",
        "KFD_IOC_QUEUE_TYPE_SDMA_XGMI",
    ],
    &[
        "AMDXDNA_BO_INVALID",
        "AMDXDNA_BO_SHARE",
        "AMDXDNA_BO_DEV_HEAP",
        "AMDXDNA_BO_DEV",
        "AMDXDNA_BO_CMD",
    ],
];

/// The value of a symbolic constant a decoded struct may show.
pub fn constant(name: &str) -> Option<u64> {
    constant_bytes(name.as_bytes())
}

/// [`constant`] of a name still in the line's bytes (no UTF-8 check first).
pub fn constant_bytes(name: &[u8]) -> Option<u64> {
    CONSTANTS.get(name).copied()
}

/// Every name [`constant`] knows, looked up once per scalar of every struct:
/// a hash map, not a walk over the tables.  The first table naming a
/// constant wins (plain ones, attributes, SVM flags, allocation flags, then
/// the enumerations, in that order).
static CONSTANTS: std::sync::LazyLock<
    std::collections::HashMap<&'static [u8], u64, foldhash::fast::RandomState>,
> = std::sync::LazyLock::new(|| {
    let mut m = std::collections::HashMap::with_hasher(foldhash::fast::RandomState::default());
    for &(n, v) in PLAIN_CONSTANTS {
        m.entry(n.as_bytes()).or_insert(v);
    }
    for &(v, n) in ATTR_NAMES {
        m.entry(n.as_bytes()).or_insert(v.into());
    }
    for table in [SVM_FLAG_NAMES, ALLOC_FLAG_NAMES] {
        for &(v, n) in table {
            m.entry(n.as_bytes()).or_insert(v);
        }
    }
    for names in ENUMS {
        for (i, n) in names.iter().enumerate() {
            m.entry(n.as_bytes()).or_insert(i as u64);
        }
    }
    m
});

/// `A|B|0x100` in kernel-header names (in the table's order), `0` for none
/// (kfd.flag_names).  Each named bit is tested against the whole value, so
/// a name covering several bits shows when all of them are set.
pub fn flag_names(value: u64, names: &[(u64, &str)]) -> String {
    if value == 0 {
        return "0".to_owned();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut rest = value;
    for &(bit, name) in names {
        if bit != 0 && value & bit == bit {
            parts.push(name.to_owned());
            rest &= !bit;
        }
    }
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

// --- the (type, nr) of the ioctls the models interpret ------------------------

pub type Key = (u8, u8);

pub const GET_VERSION: Key = (TYPE_KFD, 0x01);
pub const CREATE_QUEUE: Key = (TYPE_KFD, 0x02);
pub const SET_MEMORY_POLICY: Key = (TYPE_KFD, 0x04);
pub const CREATE_EVENT: Key = (TYPE_KFD, 0x08);
pub const GET_PROCESS_APERTURES_NEW: Key = (TYPE_KFD, 0x14);
pub const ACQUIRE_VM: Key = (TYPE_KFD, 0x15);
pub const SET_XNACK_MODE: Key = (TYPE_KFD, 0x21);
pub const SVM: Key = (TYPE_KFD, 0x20);
pub const ALLOC_MEMORY_OF_GPU: Key = (TYPE_KFD, 0x16);
pub const FREE_MEMORY_OF_GPU: Key = (TYPE_KFD, 0x17);
pub const MAP_MEMORY_TO_GPU: Key = (TYPE_KFD, 0x18);
pub const UNMAP_MEMORY_FROM_GPU: Key = (TYPE_KFD, 0x19);
pub const GET_DMABUF_INFO: Key = (TYPE_KFD, 0x1C);
pub const IMPORT_DMABUF: Key = (TYPE_KFD, 0x1D);
pub const SMI_EVENTS: Key = (TYPE_KFD, 0x1F);
pub const EXPORT_DMABUF: Key = (TYPE_KFD, 0x24);
pub const GEM_CLOSE: Key = (TYPE_DRM, 0x09);
pub const PRIME_HANDLE_TO_FD: Key = (TYPE_DRM, 0x2D);
pub const PRIME_FD_TO_HANDLE: Key = (TYPE_DRM, 0x2E);
pub const SYNCOBJ_HANDLE_TO_FD: Key = (TYPE_DRM, 0xC1);
/// amdgpu render node
pub const AMDGPU_GEM_CREATE: Key = (TYPE_DRM, 0x40);
/// accel node
pub const XDNA_CREATE_BO: Key = (TYPE_DRM, 0x43);
pub const DMA_HEAP_ALLOC: Key = (TYPE_DMAHEAP, 0x00);
pub const DMABUF_EXPORT_SYNC_FILE: Key = (TYPE_DMABUF, 0x02);
pub const DMABUF_IMPORT_SYNC_FILE: Key = (TYPE_DMABUF, 0x03);
pub const UDMABUF_CREATE: Key = (TYPE_UDMABUF, 0x42);
pub const UDMABUF_CREATE_LIST: Key = (TYPE_UDMABUF, 0x43);

/// The struct field names (kernel uapi, kfd-uapi.md 4) that the decoders
/// write and the models read.
pub mod fields {
    // kfd_ioctl_svm_args and its attributes
    pub const START_ADDR: &str = "start_addr";
    pub const SIZE: &str = "size";
    pub const OP: &str = "op";
    pub const NATTR: &str = "nattr";
    /// the attribute array, a list of [type, value]
    pub const ATTRS: &str = "attrs";
    pub const TYPE: &str = "type";
    pub const VALUE: &str = "value";
    // memory and dma-buf ioctls
    pub const HANDLE: &str = "handle";
    pub const VA_ADDR: &str = "va_addr";
    pub const MMAP_OFFSET: &str = "mmap_offset";
    pub const GPU_ID: &str = "gpu_id";
    pub const FLAGS: &str = "flags";
    pub const DMABUF_FD: &str = "dmabuf_fd";
    /// MAP/UNMAP_MEMORY_TO_GPU's gpu_id list, as the decoder names it
    pub const DEVICE_IDS_ARRAY: &str = "device_ids_array";
    pub const N_DEVICES: &str = "n_devices";
    pub const N_SUCCESS: &str = "n_success";
    pub const DRM_FD: &str = "drm_fd";
    pub const XNACK_ENABLED: &str = "xnack_enabled";
    /// SMI_EVENTS' new fd
    pub const ANON_FD: &str = "anon_fd";
    // DRM PRIME / syncobj / dma-buf / dma-heap
    pub const FD: &str = "fd";
    pub const FD_FLAGS: &str = "fd_flags";
    pub const MEMFD: &str = "memfd";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kfd-uapi.md sections 2 and 2a: (nr, name, request code computed by gcc)
    const REF_KFD: &[(u8, &str, u32)] = &[
        (0x01, "AMDKFD_IOC_GET_VERSION", 0x80084b01),
        (0x02, "AMDKFD_IOC_CREATE_QUEUE", 0xc0604b02),
        (0x03, "AMDKFD_IOC_DESTROY_QUEUE", 0xc0084b03),
        (0x04, "AMDKFD_IOC_SET_MEMORY_POLICY", 0x40204b04),
        (0x05, "AMDKFD_IOC_GET_CLOCK_COUNTERS", 0xc0284b05),
        (0x06, "AMDKFD_IOC_GET_PROCESS_APERTURES", 0x81904b06),
        (0x07, "AMDKFD_IOC_UPDATE_QUEUE", 0x40184b07),
        (0x08, "AMDKFD_IOC_CREATE_EVENT", 0xc0204b08),
        (0x09, "AMDKFD_IOC_DESTROY_EVENT", 0x40084b09),
        (0x0a, "AMDKFD_IOC_SET_EVENT", 0x40084b0a),
        (0x0b, "AMDKFD_IOC_RESET_EVENT", 0x40084b0b),
        (0x0c, "AMDKFD_IOC_WAIT_EVENTS", 0xc0184b0c),
        (0x0d, "AMDKFD_IOC_DBG_REGISTER_DEPRECATED", 0x40084b0d),
        (0x0e, "AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED", 0x40084b0e),
        (0x0f, "AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED", 0x40104b0f),
        (0x10, "AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED", 0x40104b10),
        (0x11, "AMDKFD_IOC_SET_SCRATCH_BACKING_VA", 0xc0104b11),
        (0x12, "AMDKFD_IOC_GET_TILE_CONFIG", 0xc0284b12),
        (0x13, "AMDKFD_IOC_SET_TRAP_HANDLER", 0x40184b13),
        (0x14, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", 0xc0104b14),
        (0x15, "AMDKFD_IOC_ACQUIRE_VM", 0x40084b15),
        (0x16, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", 0xc0284b16),
        (0x17, "AMDKFD_IOC_FREE_MEMORY_OF_GPU", 0x40084b17),
        (0x18, "AMDKFD_IOC_MAP_MEMORY_TO_GPU", 0xc0184b18),
        (0x19, "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", 0xc0184b19),
        (0x1a, "AMDKFD_IOC_SET_CU_MASK", 0x40104b1a),
        (0x1b, "AMDKFD_IOC_GET_QUEUE_WAVE_STATE", 0xc0184b1b),
        (0x1c, "AMDKFD_IOC_GET_DMABUF_INFO", 0xc0204b1c),
        (0x1d, "AMDKFD_IOC_IMPORT_DMABUF", 0xc0184b1d),
        (0x1e, "AMDKFD_IOC_ALLOC_QUEUE_GWS", 0xc0104b1e),
        (0x1f, "AMDKFD_IOC_SMI_EVENTS", 0xc0084b1f),
        (0x20, "AMDKFD_IOC_SVM", 0xc0184b20),
        (0x21, "AMDKFD_IOC_SET_XNACK_MODE", 0xc0044b21),
        (0x22, "AMDKFD_IOC_CRIU_OP", 0xc0384b22),
        (0x23, "AMDKFD_IOC_AVAILABLE_MEMORY", 0xc0104b23),
        (0x24, "AMDKFD_IOC_EXPORT_DMABUF", 0xc0104b24),
        (0x25, "AMDKFD_IOC_RUNTIME_ENABLE", 0xc0104b25),
        (0x26, "AMDKFD_IOC_DBG_TRAP", 0xc0204b26),
        (0x27, "AMDKFD_IOC_CREATE_PROCESS", 0x00004b27),
        (0x28, "AMDKFD_IOC_PROFILER", 0xc0104b28),
        (0x80, "AMDKFD_IOC_IPC_IMPORT_HANDLE", 0xc0304b80),
        (0x81, "AMDKFD_IOC_IPC_EXPORT_HANDLE", 0xc0204b81),
        (0x82, "AMDKFD_IOC_DBG_TRAP_DEPRECATED", 0xc0284b82),
        (0x83, "AMDKFD_IOC_CROSS_MEMORY_COPY", 0xc0304b83),
        (0x84, "AMDKFD_IOC_RLC_SPM", 0xc0204b84),
        (0x85, "AMDKFD_IOC_PC_SAMPLE", 0xc0204b85),
        (0x86, "AMDKFD_IOC_PROFILER_ROCM", 0xc0284b86),
        (0x87, "AMDKFD_IOC_AIS_OP", 0xc0284b87),
    ];

    #[test]
    fn kfd_table_gives_the_reference_request_codes() {
        assert_eq!(REF_KFD.len(), KFD.len());
        for &(nr, name, code) in REF_KFD {
            let x = find(KFD, nr).unwrap();
            assert_eq!(x.name, name);
            assert_eq!(ioc(x.dir, TYPE_KFD, nr, x.size), code, "{name}");
            let r = decode_request(code);
            assert_eq!(
                (r.dir, r.type_, r.nr, r.size),
                (x.dir, TYPE_KFD, nr, x.size)
            );
        }
    }

    #[test]
    fn svm_codes_carry_the_attribute_array_in_the_size() {
        // libhsakmt: 0xc0184b20 + ((8 * nattr) << 16); nattr 2044 is the largest
        for (nattr, code) in [
            (1u16, 0xc020_4b20u32),
            (2, 0xc028_4b20),
            (4, 0xc038_4b20),
            (2044, 0xfff8_4b20),
        ] {
            assert_eq!(ioc(3, TYPE_KFD, 0x20, 24 + 8 * nattr), code);
            let r = decode_request(code);
            assert_eq!((r.type_, r.nr), SVM);
            assert_eq!((r.size - 24) / 8, nattr);
        }
        // the size field is 14 bits: more would spill into the direction bits
        assert_eq!(
            ioc(3, TYPE_KFD, 0x20, 24 + 8 * 2045),
            ioc(3, TYPE_KFD, 0x20, 0)
        );
    }

    #[test]
    fn other_tables_give_the_reference_codes() {
        let want: &[(u8, u8, u32, &str)] = &[
            (TYPE_DRM, 0x09, 0x4008_6409, "DRM_IOCTL_GEM_CLOSE"),
            (TYPE_DRM, 0x40, 0xc020_6440, "DRM_IOCTL_AMDGPU_GEM_CREATE"),
            (TYPE_DRM, 0x48, 0x4040_6448, "DRM_IOCTL_AMDGPU_GEM_VA"),
            (TYPE_DRM, 0x51, 0xc018_6451, "DRM_IOCTL_AMDGPU_GEM_USERPTR"),
            (
                TYPE_DMABUF,
                0x02,
                0xc008_6202,
                "DMA_BUF_IOCTL_EXPORT_SYNC_FILE",
            ),
            (
                TYPE_DMABUF,
                0x03,
                0x4008_6203,
                "DMA_BUF_IOCTL_IMPORT_SYNC_FILE",
            ),
            (TYPE_DMAHEAP, 0x00, 0xc018_4800, "DMA_HEAP_IOCTL_ALLOC"),
            (TYPE_UDMABUF, 0x42, 0x4018_7542, "UDMABUF_CREATE"),
            (TYPE_UDMABUF, 0x43, 0x4008_7543, "UDMABUF_CREATE_LIST"),
        ];
        for &(t, nr, code, name) in want {
            let x = ioctl_entry(t, nr, Some(b"/dev/dri/renderD128"), None).unwrap();
            assert_eq!(x.name, name);
            assert_eq!(ioc(x.dir, t, nr, x.size), code, "{name}");
        }
        let xdna: &[(u8, u32)] = &[
            (0x43, 0xc020_6443),
            (0x44, 0xc030_6444),
            (0x49, 0x4010_6449),
            (0x4a, 0xc018_644a),
        ];
        for &(nr, code) in xdna {
            let x = ioctl_entry(TYPE_DRM, nr, Some(b"/dev/accel/accel0"), None).unwrap();
            assert!(x.name.starts_with("DRM_IOCTL_AMDXDNA_"));
            assert_eq!(ioc(x.dir, TYPE_DRM, nr, x.size), code, "{}", x.name);
        }
    }

    #[test]
    fn drm_driver_numbers_follow_the_device() {
        let n = |path: Option<&[u8]>, hint| ioctl_name(TYPE_DRM, 0x43, path, hint);
        assert_eq!(
            n(Some(b"/dev/accel/accel0"), None),
            Some("DRM_IOCTL_AMDXDNA_CREATE_BO")
        );
        assert_eq!(
            n(Some(b"/dev/dri/renderD128"), None),
            Some("DRM_IOCTL_AMDGPU_BO_LIST")
        );
        assert_eq!(n(None, None), Some("DRM_IOCTL_AMDGPU_BO_LIST"));
        // strace's name decides when the device is unknown, not against a render node
        assert_eq!(
            n(None, Some("DRM_IOCTL_AMDXDNA_CREATE_BO")),
            Some("DRM_IOCTL_AMDXDNA_CREATE_BO")
        );
        assert_eq!(
            n(
                Some(b"/dev/dri/renderD128"),
                Some("DRM_IOCTL_AMDXDNA_CREATE_BO")
            ),
            Some("DRM_IOCTL_AMDGPU_BO_LIST")
        );
        // core numbers are the same on every node; unknown numbers have no name
        assert_eq!(
            ioctl_name(TYPE_DRM, 0x2d, Some(b"/dev/accel/accel0"), None),
            Some("DRM_IOCTL_PRIME_HANDLE_TO_FD")
        );
        assert_eq!(ioctl_name(TYPE_DRM, 0x9f, None, None), None);
        assert_eq!(ioctl_name(TYPE_KFD, 0x29, None, None), None);
        assert_eq!(ioctl_name(0x54, 0x01, None, None), None);
        assert_eq!(device_of(Some(b"/dev/kfd")), Some(Device::Kfd));
        assert_eq!(device_of(Some(b"")), None);
        assert_eq!(device_of(Some(b"/dmabuf:")), None);
    }

    #[test]
    fn names_resolve_to_requests() {
        for &(type_, table) in TABLES {
            for x in table {
                let r = request_by_name(x.name).unwrap();
                assert_eq!((r.dir, r.type_, r.nr, r.size), (x.dir, type_, x.nr, x.size));
            }
        }
        let old = request_by_name(CREATE_QUEUE_OLD).unwrap();
        assert_eq!(ioc(old.dir, old.type_, old.nr, old.size), 0xc058_4b02);
        assert_eq!(request_by_name("AMDKFD_IOC_NOPE"), None);
        for &(name, sizes) in STRACE_NAME_SIZES {
            let r = request_by_name(name).unwrap();
            assert_eq!(
                sizes.last(),
                Some(&r.size),
                "{name}: the newest size is the table's"
            );
        }
    }

    #[test]
    fn flag_names_read_like_kfd_py() {
        assert_eq!(flag_names(0, SVM_FLAG_NAMES), "0");
        assert_eq!(
            flag_names(DEFAULT_SVM_FLAGS.into(), SVM_FLAG_NAMES),
            "KFD_IOCTL_SVM_FLAG_HOST_ACCESS|KFD_IOCTL_SVM_FLAG_COHERENT"
        );
        assert_eq!(
            flag_names(0x182, SVM_FLAG_NAMES),
            "KFD_IOCTL_SVM_FLAG_COHERENT|KFD_IOCTL_SVM_FLAG_EXT_COHERENT|0x100"
        );
        assert_eq!(flag_names(0x300, SVM_FLAG_NAMES), "0x300");
        assert_eq!(
            flag_names(0x8000_0004, ALLOC_FLAG_NAMES),
            "KFD_IOC_ALLOC_MEM_FLAGS_USERPTR|KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE"
        );
        // a multi-bit name shows only when all its bits are set
        let names: &[(u64, &str)] = &[(0x3, "BOTH"), (0x1, "ONE")];
        assert_eq!(flag_names(0x1, names), "ONE");
        assert_eq!(flag_names(0x3, names), "BOTH|ONE");
        assert_eq!(flag_names(0o2000002, OPEN_FLAG_NAMES), "O_CLOEXEC|O_RDWR");
    }

    #[test]
    fn attribute_names_and_constants() {
        assert_eq!(
            attr_name(ATTR_NO_ACCESS),
            Some("KFD_IOCTL_SVM_ATTR_NO_ACCESS")
        );
        assert_eq!(attr_name(8), None);
        for &(v, n) in ATTR_NAMES {
            assert_eq!(constant(n), Some(v.into()));
        }
        for &(v, n) in SVM_FLAG_NAMES.iter().chain(ALLOC_FLAG_NAMES) {
            assert_eq!(constant(n), Some(v));
        }
        for &(n, v) in PLAIN_CONSTANTS {
            assert_eq!(constant(n), Some(v));
        }
        for names in ENUMS {
            for (i, n) in names.iter().enumerate() {
                assert_eq!(constant(n), Some(i as u64));
            }
        }
        assert_eq!(constant("KFD_IOCTL_SVM_OP_GET_ATTR"), Some(1));
        assert_eq!(
            constant("KFD_IOCTL_SVM_LOCATION_UNDEFINED"),
            Some(0xFFFF_FFFF)
        );
        assert_eq!(constant("DRM_CLOEXEC"), Some(0o2000000));
        assert_eq!(constant("KFD_IOC_EVENT_MEMORY"), Some(8));
        assert_eq!(constant("KFD_IOC_QUEUE_TYPE_COMPUTE_AQL"), Some(2));
        assert_eq!(constant("KFD_IOC_CACHE_POLICY_NONCOHERENT"), Some(1));
        assert_eq!(constant("AMDXDNA_BO_CMD"), Some(4));
        assert_eq!(constant("KFD_IOCTL_SVM_FLAG_NOPE"), None);
    }

    #[test]
    fn model_keys_name_the_ioctls_they_mean() {
        let want: &[(Key, &str)] = &[
            (SVM, "AMDKFD_IOC_SVM"),
            (SET_XNACK_MODE, "AMDKFD_IOC_SET_XNACK_MODE"),
            (ALLOC_MEMORY_OF_GPU, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU"),
            (EXPORT_DMABUF, "AMDKFD_IOC_EXPORT_DMABUF"),
            (GEM_CLOSE, "DRM_IOCTL_GEM_CLOSE"),
            (SYNCOBJ_HANDLE_TO_FD, "DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD"),
            (AMDGPU_GEM_CREATE, "DRM_IOCTL_AMDGPU_GEM_CREATE"),
            (DMA_HEAP_ALLOC, "DMA_HEAP_IOCTL_ALLOC"),
            (DMABUF_IMPORT_SYNC_FILE, "DMA_BUF_IOCTL_IMPORT_SYNC_FILE"),
            (UDMABUF_CREATE_LIST, "UDMABUF_CREATE_LIST"),
        ];
        for &((t, nr), name) in want {
            assert_eq!(ioctl_name(t, nr, None, None), Some(name));
        }
        assert_eq!(
            ioctl_name(
                XDNA_CREATE_BO.0,
                XDNA_CREATE_BO.1,
                Some(b"/dev/accel/accel0"),
                None
            ),
            Some("DRM_IOCTL_AMDXDNA_CREATE_BO")
        );
    }

    #[test]
    fn names_outside_the_catalogue_are_kept_once_up_to_a_cap() {
        assert_eq!(static_name("AMDKFD_IOC_SVM"), Some("AMDKFD_IOC_SVM"));
        assert_eq!(static_name(CREATE_QUEUE_OLD), Some(CREATE_QUEUE_OLD));
        let a = static_name("FOO_IOCTL_MADE_UP").unwrap();
        assert!(std::ptr::eq(a, static_name("FOO_IOCTL_MADE_UP").unwrap()));
        let mut set = std::collections::HashSet::new();
        let x = keep(&mut set, "X", 2).unwrap();
        assert_eq!(keep(&mut set, "Y", 2), Some("Y"));
        assert_eq!(keep(&mut set, "Z", 2), None);
        assert!(std::ptr::eq(x, keep(&mut set, "X", 2).unwrap()));
    }
}
