//! Kernel user-API facts: ioctl request encoding, the KFD/DRM/dma-buf/XDNA
//! catalogue, and the constants of the SVM and memory ioctls (numbers are
//! for x86_64).  The tables, names and constants are generated from
//! catalogue/ioctls.toml into kfd_catalogue.rs, included here; the code that
//! reads them is below.
//!
//! Kernels dispatch on (type, nr) and read the size field as data, so
//! everything here is keyed by (type, nr); request codes are kept only to
//! resolve the names strace prints.

pub const IOC_NONE: u8 = 0;
pub const IOC_WRITE: u8 = 1;
pub const IOC_READ: u8 = 2;
pub const IOC_READ_WRITE: u8 = IOC_READ | IOC_WRITE;

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

/// How the capture library writes a member of a decoded struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// one number, symbol, `A|B` flags or decorated fd
    Scalar,
    /// `[e, ...]`: the array a pointer member points to, of scalars
    List,
    /// `[{l=v, ...}, ...]`: a flexible array of structs with these labels
    Structs(&'static [&'static str]),
}

/// A member the capture library writes: its label and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogField {
    pub label: &'static str,
    pub shape: Shape,
}

const fn lf(label: &'static str, shape: Shape) -> LogField {
    LogField { label, shape }
}

/// A struct the capture library writes for an ioctl: `{log_in...}` before
/// the call, ` => {log_out...}` after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStruct {
    pub type_: u8,
    pub nr: u8,
    pub name: &'static str,
    pub log_in: &'static [LogField],
    pub log_out: &'static [LogField],
}

const fn ls(
    type_: u8,
    nr: u8,
    name: &'static str,
    log_in: &'static [LogField],
    log_out: &'static [LogField],
) -> LogStruct {
    LogStruct {
        type_,
        nr,
        name,
        log_in,
        log_out,
    }
}

/// The struct the capture library writes for the ioctl (type, nr) the
/// catalogue names `name` (DRM driver numbers are shared between drivers).
pub fn log_struct(type_: u8, nr: u8, name: &str) -> Option<&'static LogStruct> {
    LOG_STRUCTS
        .iter()
        .find(|x| x.nr == nr && x.type_ == type_ && x.name == name)
}

include!("kfd_catalogue.rs");

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
    if let Some(&(n, _)) = ALIASES.iter().find(|x| x.0 == name) {
        return Some(n);
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
    if let Some(&(_, r)) = ALIASES.iter().find(|x| x.0 == name) {
        return Some(r);
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

// --- SVM ---------------------------------------------------------------------

/// The kernel-header name of an SVM attribute type.
pub fn attr_name(t: u32) -> Option<&'static str> {
    ATTR_NAMES.iter().find(|x| x.0 == t).map(|x| x.1)
}

/// The flags of a new range.
pub const DEFAULT_SVM_FLAGS: u32 = FLAG_HOST_ACCESS | FLAG_COHERENT;
/// log2 pages (2 MiB)
pub const DEFAULT_GRANULARITY: u32 = 9;

/// The value of a symbolic constant a decoded struct may show.
pub fn constant(name: &str) -> Option<u64> {
    constant_bytes(name.as_bytes())
}

/// [`constant`] of a name still in the line's bytes (no UTF-8 check first).
pub fn constant_bytes(name: &[u8]) -> Option<u64> {
    CONSTANTS.get(name).copied()
}

/// Every name [`constant`] knows ([`CONSTANT_NAMES`], whose names the
/// catalogue keeps unique), looked up once per scalar of every struct: a
/// hash map, not a walk over the table.
static CONSTANTS: std::sync::LazyLock<
    std::collections::HashMap<&'static [u8], u64, foldhash::fast::RandomState>,
> = std::sync::LazyLock::new(|| {
    CONSTANT_NAMES
        .iter()
        .map(|&(n, v)| (n.as_bytes(), v))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Request codes gcc computed from the headers no installed uapi header
    /// has (Linux 7.2's kfd_ioctl.h, ROCm's own numbers 0x80 on);
    /// tests/test_catalogue.py checks every other one against the installed
    /// header.
    const NEWER_KFD_CODES: &[(&str, u32)] = &[
        ("AMDKFD_IOC_CREATE_QUEUE", 0xc060_4b02),
        ("AMDKFD_IOC_EXPORT_DMABUF", 0xc010_4b24),
        ("AMDKFD_IOC_RUNTIME_ENABLE", 0xc010_4b25),
        ("AMDKFD_IOC_DBG_TRAP", 0xc020_4b26),
        ("AMDKFD_IOC_CREATE_PROCESS", 0x0000_4b27),
        ("AMDKFD_IOC_PROFILER", 0xc010_4b28),
        ("AMDKFD_IOC_IPC_IMPORT_HANDLE", 0xc030_4b80),
        ("AMDKFD_IOC_IPC_EXPORT_HANDLE", 0xc020_4b81),
        ("AMDKFD_IOC_DBG_TRAP_DEPRECATED", 0xc028_4b82),
        ("AMDKFD_IOC_CROSS_MEMORY_COPY", 0xc030_4b83),
        ("AMDKFD_IOC_RLC_SPM", 0xc020_4b84),
        ("AMDKFD_IOC_PC_SAMPLE", 0xc020_4b85),
        ("AMDKFD_IOC_PROFILER_ROCM", 0xc028_4b86),
        ("AMDKFD_IOC_AIS_OP", 0xc028_4b87),
    ];

    #[test]
    fn kfd_table_gives_the_reference_request_codes() {
        for &(name, code) in NEWER_KFD_CODES {
            let r = decode_request(code);
            assert_eq!(r.type_, TYPE_KFD);
            let x = find(KFD, r.nr).unwrap();
            assert_eq!(x.name, name);
            assert_eq!(ioc(x.dir, TYPE_KFD, x.nr, x.size), code, "{name}");
            assert_eq!(request_by_name(name), Some(r));
        }
        // the table is in nr order, one entry per nr
        assert!(KFD.windows(2).all(|w| w[0].nr < w[1].nr));
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
        let old = request_by_name("AMDKFD_IOC_CREATE_QUEUE_OLD").unwrap();
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
        for &(n, v) in CONSTANT_NAMES {
            assert_eq!(constant(n), Some(v));
        }
        for names in [
            EVENT_TYPE_NAMES,
            QUEUE_TYPE_NAMES,
            CACHE_POLICY_NAMES,
            XDNA_BO_NAMES,
        ] {
            for (i, &(v, n)) in names.iter().enumerate() {
                assert_eq!((constant(n), v), (Some(i as u64), i as u32));
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
        let old = "AMDKFD_IOC_CREATE_QUEUE_OLD";
        assert_eq!(static_name(old), Some(old));
        let a = static_name("FOO_IOCTL_MADE_UP").unwrap();
        assert!(std::ptr::eq(a, static_name("FOO_IOCTL_MADE_UP").unwrap()));
        let mut set = std::collections::HashSet::new();
        let x = keep(&mut set, "X", 2).unwrap();
        assert_eq!(keep(&mut set, "Y", 2), Some("Y"));
        assert_eq!(keep(&mut set, "Z", 2), None);
        assert!(std::ptr::eq(x, keep(&mut set, "X", 2).unwrap()));
    }
}
