//! The call catalogue: which syscalls make or take fds and where, the
//! numbers an old strace leaves unnamed, and the Linux flag and signal
//! names needed to turn a flag set into its int.

use crate::parse::values::Names;

/// x86_64 numbers an old strace prints as syscall_0x1b4 / syscall_436.
pub(super) fn x86_64_unknown(n: i128) -> Option<&'static str> {
    Some(match n {
        434 => "pidfd_open",
        435 => "clone3",
        436 => "close_range",
        437 => "openat2",
        438 => "pidfd_getfd",
        439 => "faccessat2",
        440 => "process_madvise",
        441 => "epoll_pwait2",
        442 => "mount_setattr",
        447 => "memfd_secret",
        _ => return None,
    })
}

pub const CLONE_VM: i128 = 0x100;
pub const CLONE_FILES: i128 = 0x400;
pub const CLONE_VFORK: i128 = 0x4000;
pub const CLONE_THREAD: i128 = 0x10000;
pub(super) const SIGCHLD: i128 = 17;
pub(super) const THREAD_GUESS: i128 = 0x3D0F00;

pub(super) const CLONE_FLAGS: &[(&str, i128)] = &[
    ("CSIGNAL", 0xFF),
    ("CLONE_VM", 0x100),
    ("CLONE_FS", 0x200),
    ("CLONE_FILES", 0x400),
    ("CLONE_SIGHAND", 0x800),
    ("CLONE_PIDFD", 0x1000),
    ("CLONE_PTRACE", 0x2000),
    ("CLONE_VFORK", 0x4000),
    ("CLONE_PARENT", 0x8000),
    ("CLONE_THREAD", 0x10000),
    ("CLONE_NEWNS", 0x20000),
    ("CLONE_SYSVSEM", 0x40000),
    ("CLONE_SETTLS", 0x80000),
    ("CLONE_PARENT_SETTID", 0x100000),
    ("CLONE_CHILD_CLEARTID", 0x200000),
    ("CLONE_DETACHED", 0x400000),
    ("CLONE_UNTRACED", 0x800000),
    ("CLONE_CHILD_SETTID", 0x1000000),
    ("CLONE_NEWCGROUP", 0x2000000),
    ("CLONE_NEWUTS", 0x4000000),
    ("CLONE_NEWIPC", 0x8000000),
    ("CLONE_NEWUSER", 0x10000000),
    ("CLONE_NEWPID", 0x20000000),
    ("CLONE_NEWNET", 0x40000000),
    ("CLONE_IO", 0x80000000),
    ("CLONE_CLEAR_SIGHAND", 0x100000000),
    ("CLONE_INTO_CGROUP", 0x200000000),
    ("CLONE_NEWTIME", 0x80),
];
pub(super) const SIGNALS: &[(&str, i128)] = &[
    ("SIGHUP", 1),
    ("SIGINT", 2),
    ("SIGQUIT", 3),
    ("SIGILL", 4),
    ("SIGTRAP", 5),
    ("SIGABRT", 6),
    ("SIGBUS", 7),
    ("SIGFPE", 8),
    ("SIGKILL", 9),
    ("SIGUSR1", 10),
    ("SIGSEGV", 11),
    ("SIGUSR2", 12),
    ("SIGPIPE", 13),
    ("SIGALRM", 14),
    ("SIGTERM", 15),
    ("SIGSTKFLT", 16),
    ("SIGCHLD", 17),
    ("SIGCONT", 18),
    ("SIGSTOP", 19),
];
pub(super) const MMAP_NAMES: Names = &[
    ("PROT_NONE", 0),
    ("PROT_READ", 1),
    ("PROT_WRITE", 2),
    ("PROT_EXEC", 4),
    ("PROT_SEM", 8),
    ("PROT_GROWSDOWN", 0x01000000),
    ("PROT_GROWSUP", 0x02000000),
    ("MAP_SHARED", 1),
    ("MAP_PRIVATE", 2),
    ("MAP_SHARED_VALIDATE", 3),
    ("MAP_FIXED", 0x10),
    ("MAP_ANONYMOUS", 0x20),
    ("MAP_ANON", 0x20),
    ("MAP_32BIT", 0x40),
    ("MAP_GROWSDOWN", 0x100),
    ("MAP_DENYWRITE", 0x800),
    ("MAP_EXECUTABLE", 0x1000),
    ("MAP_LOCKED", 0x2000),
    ("MAP_NORESERVE", 0x4000),
    ("MAP_POPULATE", 0x8000),
    ("MAP_NONBLOCK", 0x10000),
    ("MAP_STACK", 0x20000),
    ("MAP_HUGETLB", 0x40000),
    ("MAP_SYNC", 0x80000),
    ("MAP_FIXED_NOREPLACE", 0x100000),
    ("MAP_UNINITIALIZED", 0x4000000),
    ("MAP_DROPPABLE", 0x8),
    ("MREMAP_MAYMOVE", 1),
    ("MREMAP_FIXED", 2),
    ("MREMAP_DONTUNMAP", 4),
];
pub(super) const CLOSE_RANGE_NAMES: Names =
    &[("CLOSE_RANGE_UNSHARE", 2), ("CLOSE_RANGE_CLOEXEC", 4)];
pub(super) const O_CLOEXEC: i128 = 0o2000000;

/// Syscalls whose result is a new fd, by origin kind.
pub(super) fn fd_result(name: &str) -> Option<&'static str> {
    Some(match name {
        "open" | "openat" | "openat2" | "creat" | "open_by_handle_at" | "open_tree" => "open",
        "fsopen" => "fsopen",
        "fsmount" => "fsmount",
        "fspick" => "fspick",
        "socket" => "socket",
        "accept" | "accept4" => "accept",
        "eventfd" | "eventfd2" => "eventfd",
        "memfd_create" => "memfd_create",
        "memfd_secret" => "memfd_secret",
        "pidfd_open" => "pidfd_open",
        "epoll_create" | "epoll_create1" => "epoll_create",
        "signalfd" | "signalfd4" => "signalfd",
        "timerfd_create" => "timerfd_create",
        "inotify_init" | "inotify_init1" => "inotify_init",
        "fanotify_init" => "fanotify_init",
        "userfaultfd" => "userfaultfd",
        "perf_event_open" => "perf_event_open",
        "io_uring_setup" => "io_uring_setup",
        "mq_open" => "mq_open",
        "landlock_create_ruleset" => "landlock",
        _ => return None,
    })
}

const FD0: &[&str] = &[
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "lseek",
    "_llseek",
    "fstat",
    "fstat64",
    "fstatfs",
    "fstatfs64",
    "fsync",
    "fdatasync",
    "ftruncate",
    "ftruncate64",
    "fchmod",
    "fchown",
    "fchdir",
    "flock",
    "getdents",
    "getdents64",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "shutdown",
    "getsockname",
    "getpeername",
    "setsockopt",
    "getsockopt",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "fadvise64",
    "fallocate",
    "readahead",
    "sync_file_range",
    "syncfs",
    "ioctl",
    "fcntl",
    "fcntl64",
    "inotify_add_watch",
    "inotify_rm_watch",
    "fgetxattr",
    "fsetxattr",
    "flistxattr",
    "fremovexattr",
    "timerfd_settime",
    "timerfd_gettime",
    "pidfd_send_signal",
    "io_uring_enter",
    "io_uring_register",
    "close",
    "dup",
    "dup2",
    "dup3",
    "fanotify_mark",
    "fstatat64",
    "newfstatat",
    "statx",
    "openat",
    "openat2",
    "mkdirat",
    "mknodat",
    "fchownat",
    "futimesat",
    "unlinkat",
    "faccessat",
    "faccessat2",
    "fchmodat",
    "readlinkat",
    "utimensat",
    "name_to_handle_at",
    "execveat",
    "mount_setattr",
    "open_tree",
    "move_mount",
    "fspick",
    "process_madvise",
    "process_mrelease",
    "finit_module",
    "kexec_file_load",
    "vmsplice",
    "copy_file_range",
    "splice",
    "tee",
    "sendfile",
    "sendfile64",
    "linkat",
    "renameat",
    "renameat2",
    "symlinkat",
    "epoll_ctl",
];

/// Whether `name` is in [`FD0`], through a hash set made once: a linear
/// search of its 120 names was a tenth of a line's cost for a call past them
/// (futex, mprotect: every call no model reads).
fn is_fd0(name: &str) -> bool {
    type Set = std::collections::HashSet<&'static str, foldhash::fast::FixedState>;
    static SET: std::sync::LazyLock<Set> =
        std::sync::LazyLock::new(|| FD0.iter().copied().collect());
    SET.contains(name)
}

/// Argument positions that hold fds, for logs without -y decorations.
pub(super) fn fd_positions(name: &str) -> &'static [usize] {
    match name {
        "mmap" | "mmap2" => &[4],
        "epoll_ctl" | "splice" | "copy_file_range" | "linkat" | "renameat" | "renameat2"
        | "move_mount" => &[0, 2],
        "sendfile" | "sendfile64" | "tee" => &[0, 1],
        "symlinkat" => &[1],
        "pidfd_getfd" | "signalfd" | "signalfd4" => &[0],
        "kcmp" => &[],
        "fanotify_mark" => &[0, 3],
        _ if is_fd0(name) => &[0],
        _ => &[],
    }
}

/// Arguments that are pids (decorated by -Y like fds), and pidfd_getfd's
/// fd of another process: never the caller's fds.
pub(super) fn skip_positions(name: &str) -> &'static [usize] {
    match name {
        "wait4"
        | "kill"
        | "tkill"
        | "pidfd_open"
        | "process_vm_readv"
        | "process_vm_writev"
        | "getpgid"
        | "getsid"
        | "sched_setaffinity"
        | "sched_getaffinity"
        | "sched_setscheduler"
        | "sched_getscheduler"
        | "sched_setparam"
        | "sched_getparam"
        | "sched_setattr"
        | "sched_getattr"
        | "prlimit64"
        | "get_robust_list"
        | "migrate_pages"
        | "move_pages"
        | "rt_sigqueueinfo"
        | "sched_rr_get_interval" => &[0],
        "waitid" | "ptrace" | "perf_event_open" | "ioprio_set" | "ioprio_get" | "pidfd_getfd" => {
            &[1]
        }
        "tgkill" | "setpgid" | "kcmp" | "rt_tgsigqueueinfo" => &[0, 1],
        _ => &[],
    }
}
