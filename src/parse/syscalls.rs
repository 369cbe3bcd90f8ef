//! Per-syscall normalization: one
//! parsed call (name, argument tokens, result) becomes one [`Kind`].
//!
//! Which kind a syscall maps to, where its fds are when the log has no `-y`
//! decorations, and the Linux constants needed to turn flag names into ints
//! live here; the line grammar lives in strace.rs.

use crate::events::*;
use crate::kfd;
use crate::parse::values::{
    self, Names, at, comment_start, contains, find, is_ws, matching, parse_fd, parse_flags,
    parse_int, parse_ioc, parse_string, parse_value, skip, split_top, strip, strip_comment,
};
use std::borrow::Cow;

/// x86_64 numbers an old strace prints as syscall_0x1b4 / syscall_436.
fn x86_64_unknown(n: i128) -> Option<&'static str> {
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
const SIGCHLD: i128 = 17;
const THREAD_GUESS: i128 = 0x3D0F00;

const CLONE_FLAGS: &[(&str, i128)] = &[
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
const SIGNALS: &[(&str, i128)] = &[
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
const MMAP_NAMES: Names = &[
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
const CLOSE_RANGE_NAMES: Names = &[("CLOSE_RANGE_UNSHARE", 2), ("CLOSE_RANGE_CLOEXEC", 4)];
const O_CLOEXEC: i128 = 0o2000000;

/// Syscalls whose result is a new fd, by origin kind.
fn fd_result(name: &str) -> Option<&'static str> {
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
fn fd_positions(name: &str) -> &'static [usize] {
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
fn skip_positions(name: &str) -> &'static [usize] {
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

/// One syscall (or intent call) after the line grammar, before
/// normalization (syscalls.Call).
#[derive(Debug)]
pub struct Call<'a> {
    pub name: Cow<'a, str>,
    pub args: Vec<Cow<'a, [u8]>>,
    pub ret: Option<i128>,
    pub err: Option<Name>,
    pub ret_path: Option<Vec<u8>>,
    /// the `-N` names stripped, by position
    pub names: Vec<(usize, Cow<'a, [u8]>)>,
    /// normalization dropped a value of the wrong type
    pub malformed: bool,
    /// a number does not fit its Rust field (never in a real log)
    pub overflow: bool,
}

impl<'a> Call<'a> {
    pub fn new(name: Cow<'a, str>, args: Vec<Cow<'a, [u8]>>) -> Self {
        Call {
            name,
            args,
            ret: None,
            err: None,
            ret_path: None,
            names: Vec::new(),
            malformed: false,
            overflow: false,
        }
    }

    fn arg(&self, i: usize) -> Option<&[u8]> {
        self.args.get(i).map(|a| &a[..])
    }

    /// `_arg(call, i) or ""`
    fn arg_or_empty(&self, i: usize) -> &[u8] {
        self.arg(i).unwrap_or(b"")
    }

    fn ok_fd_result(&self) -> bool {
        self.ret.is_some_and(|r| r >= 0) && self.err.is_none()
    }

    /// An fd number as the kernel's `int` reads it: -e raw prints -1 as
    /// 0xffffffff, which parses as 4294967295.
    fn fd(&mut self, v: i128) -> i32 {
        if (1 << 31..1 << 32).contains(&v) {
            return v as u32 as i32;
        }
        i32::try_from(v).unwrap_or_else(|_| {
            self.overflow = true;
            -1
        })
    }

    fn opt_fd(&mut self, v: Option<i128>) -> Option<i32> {
        v.map(|v| self.fd(v))
    }

    fn u64(&mut self, v: i128) -> u64 {
        u64::try_from(v).unwrap_or_else(|_| {
            self.overflow = true;
            0
        })
    }

    fn ret_fds(&mut self) -> Vec<i32> {
        match self.ret {
            Some(r) if self.ok_fd_result() => vec![self.fd(r)],
            _ => vec![],
        }
    }

    fn ret_paths(&self) -> Vec<Option<Text>> {
        if self.ok_fd_result() {
            vec![self.ret_path.as_deref().map(Text::from)]
        } else {
            vec![]
        }
    }
}

fn fd_of(tok: Option<&[u8]>) -> (Option<i128>, Option<Vec<u8>>) {
    let Some(tok) = tok else {
        return (None, None);
    };
    if comment_start(tok).is_some() {
        let (t, _) = strip_comment(tok);
        return parse_fd(&t);
    }
    parse_fd(tok)
}

fn text(p: Option<Vec<u8>>) -> Option<Text> {
    p.map(|p| Text(p.into()))
}

/// syscalls._int_of
fn int_of(tok: Option<&[u8]>, table: Option<Names>, default: i128) -> i128 {
    let Some(tok) = tok else {
        return default;
    };
    if let Some(v) = parse_int(tok) {
        return v;
    }
    if tok == b"NULL" {
        return 0;
    }
    if let (Some(fd), _) = fd_of(Some(tok)) {
        return fd;
    }
    parse_flags(tok, table).unwrap_or(default)
}

fn is_digit_or_minus(c: u8) -> bool {
    c.is_ascii_digit() || c == b'-'
}

/// Whether `tok` is an fd with its `-y` decoration: strace prints the
/// `<` right after the number (`3</dev/kfd>`).  A `<` further on is no
/// decoration: a shift (`1<<16`) or a `-X verbose` comment holding one
/// (`0xffffffffffffffff /* …|0xffff<<PR_MTE_TAG_SHIFT */`, issue 33).
fn decorated_fd(tok: &[u8]) -> bool {
    let k = skip(tok, usize::from(at(tok, 0) == b'-'), |c| {
        c.is_ascii_alphanumeric()
    });
    at(tok, k) == b'<' && at(tok, k + 1) != b'<'
}

/// syscalls.used_fds
pub fn used_fds(call: &mut Call<'_>) -> (Vec<i32>, Vec<Option<Text>>) {
    let positions = fd_positions(&call.name);
    if positions.is_empty() && !call.args.iter().any(|a| a.contains(&b'<')) {
        return (vec![], vec![]);
    }
    let skip = skip_positions(&call.name);
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    for i in 0..call.args.len() {
        let tok = &call.args[i];
        if skip.contains(&i) || tok.is_empty() || !is_digit_or_minus(tok[0]) {
            continue;
        }
        let decorated = decorated_fd(tok);
        if !decorated && !positions.contains(&i) {
            continue;
        }
        let (fd, path) = fd_text(Some(tok));
        let Some(fd) = fd else { continue };
        if fd < 0 && (decorated || fd < -0x7FFFFFFF) {
            continue;
        }
        let fd = call.fd(fd);
        fds.push(fd);
        paths.push(path);
    }
    (fds, paths)
}

/// The items of the `[…]` whose `[` is at `bracket`, and its end.
fn array_items(tok: &[u8], bracket: usize) -> (Vec<Vec<u8>>, usize) {
    let Some(end) = matching(tok, bracket) else {
        return (vec![], tok.len());
    };
    let items = split_top(&tok[bracket + 1..end])
        .into_iter()
        .filter(|x| !x.is_empty() && x != b"...")
        .collect();
    (items, end)
}

fn cmsg_fds(call: &mut Call<'_>, i: usize) -> (Vec<i32>, Vec<Option<Text>>) {
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    let Some(tok) = call.arg(i).filter(|t| !t.is_empty()).map(<[u8]>::to_vec) else {
        return (fds, paths);
    };
    if !contains(&tok, b"cmsg_data=[") {
        return (fds, paths);
    }
    if !(contains(&tok, b"SCM_RIGHTS") || contains(&tok, b"cmsg_type=0x1")) {
        return (fds, paths);
    }
    let mut pos = 0;
    while let Some(i) = find(&tok[pos.min(tok.len())..], b"cmsg_data=[").map(|q| pos + q) {
        let start = i + 11;
        let (items, close) = array_items(&tok, start - 1);
        for it in items {
            if let (Some(fd), path) = parse_fd(&it)
                && fd >= 0
            {
                let fd = call.fd(fd);
                fds.push(fd);
                paths.push(text(path));
            }
        }
        pos = close.max(start);
    }
    (fds, paths)
}

fn fd_array(call: &mut Call<'_>, tok: Option<&[u8]>) -> (Vec<i32>, Vec<Option<Text>>) {
    let Some(tok) = tok.filter(|t| t.starts_with(b"[")) else {
        return (vec![], vec![]);
    };
    let (items, _) = array_items(tok, 0);
    let mut fds = Vec::new();
    let mut paths = Vec::new();
    for it in items {
        if let (Some(fd), path) = parse_fd(&it) {
            let fd = call.fd(fd);
            fds.push(fd);
            paths.push(text(path));
        }
    }
    (fds, paths)
}

fn cloexec_flag(tok: Option<&[u8]>) -> bool {
    let Some(tok) = tok.filter(|t| !t.is_empty()) else {
        return false;
    };
    if contains(tok, b"CLOEXEC") {
        return true;
    }
    parse_int(&strip_comment(tok).0).is_some_and(|v| v & O_CLOEXEC != 0)
}

/// What normalize makes of a call: the event's name and kind.
pub struct Normalized {
    pub name: Name,
    pub kind: Kind,
}

fn owned_name(name: &str) -> Name {
    syscall(name)
}

/// syscalls.normalize
pub fn normalize(call: &mut Call<'_>) -> Normalized {
    if let Some(rest) = call.name.strip_prefix("syscall_") {
        let num = if rest.starts_with("0x") {
            parse_int(rest.as_bytes())
        } else {
            values::int0(rest.as_bytes())
        };
        if let Some(n) = num.and_then(x86_64_unknown) {
            call.name = Cow::Borrowed(n);
        }
    }
    let kind = match &*call.name {
        "close" => Some(close(call)),
        "close_range" => Some(close_range(call)),
        "ioctl" => Some(ioctl(call)),
        "mmap" | "mmap2" => Some(mmap(call)),
        "munmap" => Some(Kind::Munmap(Munmap {
            addr: {
                let v = int_of(call.arg(0), None, 0);
                call.u64(v)
            },
            length: {
                let v = int_of(call.arg(1), None, 0);
                call.u64(v)
            },
        })),
        "mremap" => Some(mremap(call)),
        "clone" | "clone2" | "clone3" | "fork" | "vfork" => Some(clone(call)),
        "execve" | "execveat" => Some(exec(call)),
        "exit" | "exit_group" => Some(exit(call)),
        "dup" | "dup2" | "dup3" => Some(dup(call)),
        "fcntl" | "fcntl64" => fcntl(call),
        "pipe" | "pipe2" | "socketpair" => Some(pair(call)),
        "recvmsg" | "recvmmsg" => Some(recvmsg(call)),
        "sendmsg" | "sendmmsg" => Some(sendmsg(call)),
        "pidfd_getfd" => Some(pidfd_getfd(call)),
        n if fd_result(n).is_some() => Some(open(call)),
        _ => None,
    };
    if let Some(kind) = kind {
        let name = match &kind {
            // the kinds whose name is their KINDS default (events.py)
            Kind::Close(_) => Cow::Borrowed("close"),
            Kind::CloseRange(_) => Cow::Borrowed("close_range"),
            Kind::Ioctl(_) => Cow::Borrowed("ioctl"),
            Kind::Munmap(_) => Cow::Borrowed("munmap"),
            Kind::Mremap(_) => Cow::Borrowed("mremap"),
            _ => owned_name(&call.name),
        };
        return Normalized { name, kind };
    }
    if call.name.starts_with("hsa_") {
        return Normalized {
            name: Cow::Owned(call.name.to_string()),
            kind: intent(call),
        };
    }
    let (fds, paths) = used_fds(call);
    Normalized {
        name: owned_name(&call.name),
        kind: Kind::Syscall(Syscall { fds, paths }),
    }
}

fn open(call: &mut Call<'_>) -> Kind {
    let name = call.name.to_string();
    let mut path = call.ret_path.clone();
    let (ptok, ftok): (Option<Vec<u8>>, Option<Vec<u8>>) = match &*name {
        "open" | "creat" => (
            call.arg(0).map(<[u8]>::to_vec),
            call.arg(1).map(<[u8]>::to_vec),
        ),
        "openat2" | "openat" | "open_by_handle_at" => (
            call.arg(1).map(<[u8]>::to_vec),
            call.arg(2).map(<[u8]>::to_vec),
        ),
        _ => (None, Some(call.args.join(&b' '))),
    };
    if path.is_none()
        && let Some(p) = ptok.as_deref().filter(|p| p.starts_with(b"\""))
        && matches!(&*name, "open" | "openat" | "openat2" | "creat")
    {
        path = Some(parse_string(p).0);
    }
    let mut cloexec = cloexec_flag(ftok.as_deref())
        || matches!(&*name, "pidfd_open" | "pidfd_getfd" | "memfd_secret");
    if name == "creat" {
        cloexec = false;
    }
    let origin = Cow::Borrowed(fd_result(&name).unwrap_or("open"));
    let ok = call.ok_fd_result();
    let fds = call.ret_fds();
    let paths = if ok { vec![text(path)] } else { vec![] };
    Kind::FdCreate(FdCreate {
        origin,
        fds,
        paths,
        cloexec,
        ..Default::default()
    })
}

fn pair(call: &mut Call<'_>) -> Kind {
    let tok = if call.name.starts_with("pipe") {
        call.arg(0)
    } else {
        call.arg(3)
    }
    .map(<[u8]>::to_vec);
    let ok = call.ret == Some(0) && call.err.is_none();
    let (fds, paths) = if ok {
        fd_array(call, tok.as_deref())
    } else {
        (vec![], vec![])
    };
    let origin: Name = match &*call.name {
        "socketpair" => Cow::Borrowed("socketpair"),
        _ => Cow::Borrowed("pipe"),
    };
    Kind::FdCreate(FdCreate {
        origin,
        fds,
        paths,
        cloexec: cloexec_flag(call.arg(1)),
        ..Default::default()
    })
}

fn dup(call: &mut Call<'_>) -> Kind {
    let (src, _) = fd_of(call.arg(0));
    let mut replace = false;
    let mut cloexec = false;
    let mut new = None;
    if matches!(&*call.name, "dup2" | "dup3") {
        new = fd_of(call.arg(1)).0;
        replace = new.is_some() && new != src;
        cloexec = call.name == "dup3" && cloexec_flag(call.arg(2));
    }
    let fds = call.ret_fds();
    let paths = call.ret_paths();
    Kind::FdCreate(FdCreate {
        origin: Cow::Borrowed("dup"),
        fds,
        paths,
        cloexec,
        src_fd: call.opt_fd(src),
        replace,
        new_fd: call.opt_fd(new),
    })
}

fn fcntl(call: &mut Call<'_>) -> Option<Kind> {
    let (fd, _) = fd_of(call.arg(0));
    let cmd_tok = call.arg_or_empty(1);
    let (c, _) = strip_comment(cmd_tok);
    let cmd = match strip(&c) {
        b"F_DUPFD" => Some(0),
        b"F_GETFD" => Some(1),
        b"F_SETFD" => Some(2),
        b"F_DUPFD_CLOEXEC" => Some(1030),
        _ => parse_int(&c),
    };
    match cmd {
        Some(0) | Some(1030) => {
            let fds = call.ret_fds();
            let paths = call.ret_paths();
            Some(Kind::FdCreate(FdCreate {
                origin: Cow::Borrowed("dup"),
                fds,
                paths,
                cloexec: cmd == Some(1030),
                src_fd: call.opt_fd(fd),
                ..Default::default()
            }))
        }
        Some(2) => {
            let arg = match call.arg(2) {
                Some(a) if !a.is_empty() => a,
                _ => b"0",
            };
            let on = if contains(arg, b"FD_CLOEXEC") {
                true
            } else {
                parse_int(&strip_comment(arg).0).is_some_and(|v| v != 0 && v & 1 != 0)
            };
            let fd = fd.map_or(-1, |f| call.fd(f));
            Some(Kind::SetCloexec(SetCloexec { fd, cloexec: on }))
        }
        _ => None,
    }
}

fn close(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_text(call.arg(0));
    match fd {
        None => Kind::Syscall(Syscall::default()),
        Some(fd) => Kind::Close(Close {
            fd: call.fd(fd),
            path,
        }),
    }
}

fn u32_of(call: &mut Call<'_>, v: i128) -> u32 {
    u32::try_from(v).unwrap_or_else(|_| {
        call.overflow = true;
        0
    })
}

fn close_range(call: &mut Call<'_>) -> Kind {
    let first = int_of(call.arg(0), None, 0) & 0xFFFFFFFF;
    let last = int_of(call.arg(1), None, 0xFFFFFFFF) & 0xFFFFFFFF;
    let flags = int_of(call.arg(2), Some(CLOSE_RANGE_NAMES), 0);
    Kind::CloseRange(CloseRange {
        first: first as u32,
        last: last as u32,
        flags: u32_of(call, flags),
    })
}

/// (request, dir, type, nr, size, hint, name) of a request argument.
type Request = (
    Option<u32>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Option<i128>,
    Option<Vec<u8>>,
    Option<Name>,
);

fn decode_request(req_tok: &[u8], path: Option<&[u8]>) -> Request {
    let (rt, comment) = strip_comment(req_tok);
    let rt = strip(&rt);
    let mut request: Option<u32> = None;
    let (mut d, mut t, mut nr, mut size): (Option<u8>, Option<u8>, Option<u8>, Option<i128>) =
        (None, None, None, None);
    let mut hint: Option<Vec<u8>> = None;
    if let Some(v) = parse_int(rt) {
        request = Some((v & 0xFFFFFFFF) as u32);
        hint = comment.map(<[u8]>::to_vec);
    } else if rt.starts_with(b"_IOC(") {
        request = parse_ioc(rt);
    } else {
        hint = Some(rt.to_vec());
        let dev = kfd::device_of(path);
        for alt in memchr::memmem::find_iter(rt, b" or ")
            .chain(std::iter::once(rt.len()))
            .scan(0usize, |st, e| {
                let a = &rt[*st..e];
                *st = e + 4;
                Some(a)
            })
        {
            let a = strip(alt);
            if let Some(r) = std::str::from_utf8(a).ok().and_then(kfd::request_by_name) {
                d = Some(r.dir);
                t = Some(r.type_);
                nr = Some(r.nr);
                size = Some(r.size.into());
                let xdna = contains(alt, b"AMDXDNA");
                if dev == Some(kfd::Device::Accel) && xdna {
                    break;
                }
                if dev != Some(kfd::Device::Accel) && !xdna {
                    break;
                }
            }
        }
        if let (Some(d), Some(t), Some(nr), Some(size)) = (d, t, nr, size) {
            request = Some(kfd::ioc(d, t, nr, size as u16));
        }
    }
    if let Some(r) = request {
        let x = kfd::decode_request(r);
        d = Some(x.dir);
        t = Some(x.type_);
        nr = Some(x.nr);
        size = Some(x.size.into());
    }
    let hint_s = hint.as_deref().map(String::from_utf8_lossy);
    let mut name: Option<Name> = match (t, nr) {
        (Some(t), Some(nr)) => kfd::ioctl_name(t, nr, path, hint_s.as_deref()).map(Cow::Borrowed),
        _ => None,
    };
    if name.is_none()
        && let Some(h) = hint
            .as_deref()
            .filter(|h| !h.is_empty() && !h.starts_with(b"_IOC"))
    {
        let first = match find(h, b" or ") {
            Some(k) => &h[..k],
            None => h,
        };
        name = Some(Cow::Owned(
            String::from_utf8_lossy(strip(first)).into_owned(),
        ));
    }
    (request, d, t, nr, size, hint, name)
}

const INT_FIELDS: &[&str] = &[
    "start_addr",
    "size",
    "op",
    "nattr",
    "handle",
    "va_addr",
    "gpu_id",
    "flags",
    "dmabuf_fd",
    "fd",
    "fd_flags",
    "mmap_offset",
    "n_devices",
    "n_success",
    "xnack_enabled",
    "metadata_size",
    "offset",
];

fn is_int(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::UInt(_))
}

/// syscalls._ioctl_struct: (fields, malformed).  The decoded struct is
/// kept and trimmed in place (fields dropped, `attrs` entries turned into
/// pairs) rather than copied into a new one.
fn ioctl_struct(val: Option<Value>) -> (Option<Value>, bool) {
    let Some(Value::Struct(mut fields)) = val else {
        return (None, false);
    };
    let mut bad = false;
    fields.retain_mut(|(k, v)| {
        let keep = if k == "attrs" {
            attr_pairs(v)
        } else if k == "device_ids_array" {
            matches!(&*v, Value::List(x) if x.iter().all(is_int))
        } else {
            !INT_FIELDS.contains(&&**k) || is_int(v)
        };
        bad |= !keep;
        keep
    });
    (Some(Value::Struct(fields)), bad)
}

/// An `attrs` list of `{type=…, value=…}` structs with int members as the
/// list of their (type, value) pairs; false (the field is dropped) when it
/// is no list or an entry is not such a struct.
fn attr_pairs(v: &mut Value) -> bool {
    let Value::List(items) = v else {
        return false;
    };
    for a in items.iter_mut() {
        let pair = match (a.get("type"), a.get("value")) {
            // (get finds nothing in what is no struct)
            (Some(ty), Some(va)) if is_int(ty) && is_int(va) => {
                Value::Pair(Box::new((ty.clone(), va.clone())))
            }
            _ => return false,
        };
        *a = pair;
    }
    true
}

fn svm_ok(arg: &Value) -> bool {
    ["start_addr", "size", "op", "nattr"]
        .iter()
        .all(|k| arg.get(k).is_some_and(is_int))
}

/// A decoded request: (request, dir, type, nr, size, named by a hint that
/// is no `_IOC(…)`, canonical name).
type Decoded = (
    Option<u32>,
    Option<u8>,
    Option<u8>,
    Option<u8>,
    Option<i128>,
    bool,
    Option<&'static str>,
);

/// Recent (request text, fd path) -> decoded request: a trace names a
/// handful of requests on a handful of fds millions of times.
type RequestCache = Vec<(Box<[u8]>, Option<Box<[u8]>>, Decoded)>;

thread_local! {
    static REQUESTS: std::cell::RefCell<RequestCache> = const { std::cell::RefCell::new(Vec::new()) };
}
const REQUEST_CACHE: usize = 64;

fn request_of(req_tok: &[u8], path: Option<&[u8]>) -> Decoded {
    if let Some(d) = REQUESTS.with(|c| {
        c.borrow()
            .iter()
            .find(|(r, p, _)| &r[..] == req_tok && p.as_deref() == path)
            .map(|x| x.2)
    }) {
        return d;
    }
    let (request, d, t, nr, size, hint, name) = decode_request(req_tok, path);
    let named = hint
        .as_deref()
        .is_some_and(|h| !h.is_empty() && !h.starts_with(b"_IOC"));
    let name = name.and_then(|n| match n {
        Cow::Borrowed(b) => Some(b),
        Cow::Owned(o) => kfd::static_name(&o),
    });
    let out = (request, d, t, nr, size, named, name);
    REQUESTS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= REQUEST_CACHE {
            c.remove(0);
        }
        c.push((req_tok.into(), path.map(Into::into), out));
    });
    out
}

/// Recent decorated fd tokens (`3</dev/kfd<char 238:0>>`) and their
/// (fd, path), direct-mapped by the token's hash: a trace names the same
/// few fds with their paths on most of its calls, and each of those calls'
/// events shares the one path instead of decoding and copying it again.
type FdCache = Vec<Option<(Box<[u8]>, Option<i128>, Option<Text>)>>;

thread_local! {
    static FDS: std::cell::RefCell<FdCache> = const { std::cell::RefCell::new(Vec::new()) };
}
const FD_CACHE: usize = 64;
/// The longest token the cache keeps: an fd number with a decorated path
/// of up to PATH_MAX, and more.
const FD_TOKEN_MAX: usize = 8192;

/// [`fd_of`] with its path as a [`Text`], shared with earlier calls that
/// named the same decorated token (the answer depends on the token alone).
fn fd_text(tok: Option<&[u8]>) -> (Option<i128>, Option<Text>) {
    let Some(tok) = tok else {
        return (None, None);
    };
    // (a token past FD_TOKEN_MAX is decoded each time: the cache stays small
    // whatever a line holds)
    if tok.len() > FD_TOKEN_MAX || memchr::memchr(b'<', tok).is_none() {
        let (fd, path) = fd_of(Some(tok));
        return (fd, text(path));
    }
    use std::hash::BuildHasher;
    let slot = foldhash::fast::FixedState::default().hash_one(tok) as usize % FD_CACHE;
    let hit = FDS.with(|c| {
        c.borrow()
            .get(slot)
            .and_then(Option::as_ref)
            .filter(|(k, _, _)| **k == *tok)
            .map(|(_, fd, path)| (*fd, path.clone()))
    });
    if let Some(hit) = hit {
        return hit;
    }
    let (fd, path) = fd_of(Some(tok));
    let path = text(path);
    FDS.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_empty() {
            c.resize(FD_CACHE, None);
        }
        c[slot] = Some((tok.into(), fd, path.clone()));
    });
    (fd, path)
}

fn ioctl(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_text(call.arg(0));
    let (mut request, d, t, nr, mut size, named, ioctl) =
        request_of(call.arg_or_empty(1), path.as_ref().map(|p| &p.0[..]));
    let (mut arg, mut out) = (None, None);
    if let Some(atok) = call
        .arg(2)
        .filter(|a| a.starts_with(b"{") || a.starts_with(b"["))
    {
        match parse_value(atok) {
            Value::Pair(p) => {
                let (a, o) = *p;
                arg = Some(a);
                out = Some(o);
            }
            v => arg = Some(v),
        }
        let (a, bad_a) = ioctl_struct(arg);
        let (o, bad_o) = ioctl_struct(out);
        arg = a;
        out = o;
        // a field of another subsystem's struct (GPIO's flags=A|B, a
        // udmabuf's memfd) that is no number where a KFD or DRM field of the
        // same name is one is dropped, not a bad line: the call stays an
        // ioctl on its fd with its result (issue 33)
        let ours = matches!(t, Some(kfd::TYPE_KFD | kfd::TYPE_DRM));
        if (bad_a || bad_o) && ours {
            call.malformed = true;
        }
        let svm = (t, nr) == (Some(kfd::SVM.0), Some(kfd::SVM.1));
        if svm && arg.as_ref().is_some_and(|a| !svm_ok(a)) {
            arg = None;
            out = None;
        }
        if svm
            && let Some(a) = &arg
            && matches!(a, Value::Struct(f) if !f.is_empty())
            && let Some(nattr) = a.get("nattr").and_then(Value::as_i128)
            && named
        {
            let s = 24 + 8 * nattr;
            size = Some(s);
            request = Some(kfd::ioc(
                d.unwrap_or(3),
                t.unwrap_or(0),
                nr.unwrap_or(0),
                (s & 0x3FFF) as u16,
            ));
        }
    }
    let size = size.map(|s| call.u64(s));
    let fd = fd.map_or(-1, |f| call.fd(f));
    Kind::Ioctl(Ioctl {
        fd,
        path,
        request,
        dir: d,
        type_: t,
        nr,
        size,
        ioctl,
        arg,
        out,
    })
}

fn mmap(call: &mut Call<'_>) -> Kind {
    let addr = int_of(call.arg(0), None, 0);
    let (fd, path) = fd_text(call.arg(4));
    let mut off = int_of(call.arg(5), None, 0);
    if call.name == "mmap2" {
        off *= 4096;
    }
    let length = int_of(call.arg(1), None, 0);
    let prot = int_of(call.arg(2), Some(MMAP_NAMES), 0);
    let flags = int_of(call.arg(3), Some(MMAP_NAMES), 0);
    Kind::Mmap(Mmap {
        addr: if addr == 0 {
            None
        } else {
            Some(call.u64(addr))
        },
        length: call.u64(length),
        prot: call.u64(prot),
        flags: call.u64(flags),
        fd: fd.map_or(-1, |f| call.fd(f)),
        path,
        offset: call.u64(off),
    })
}

fn mremap(call: &mut Call<'_>) -> Kind {
    let flags = int_of(call.arg(3), Some(MMAP_NAMES), 0);
    let new = call.arg(4).map(|n| int_of(Some(n), None, 0));
    let old_addr = int_of(call.arg(0), None, 0);
    let old_len = int_of(call.arg(1), None, 0);
    let new_len = int_of(call.arg(2), None, 0);
    Kind::Mremap(Mremap {
        old_addr: call.u64(old_addr),
        old_len: call.u64(old_len),
        new_len: call.u64(new_len),
        flags: call.u64(flags),
        new_addr: new.map(|n| call.u64(n)),
    })
}

fn flag_total(tok: &[u8]) -> i128 {
    let (t, _) = strip_comment(tok);
    let mut total = 0;
    for part in t.split(|&c| c == b'|') {
        let part = strip(part);
        let v = parse_int(part).unwrap_or_else(|| {
            let p = std::str::from_utf8(part).unwrap_or("");
            CLONE_FLAGS
                .iter()
                .chain(SIGNALS)
                .find(|x| x.0 == p)
                .map_or(0, |x| x.1)
        });
        total |= v;
    }
    total
}

/// syscalls.clone_flags: the flags of clone/clone3/fork/vfork.
pub fn clone_flags(call: &Call<'_>) -> i128 {
    match &*call.name {
        "fork" => return SIGCHLD,
        "vfork" => return CLONE_VM | CLONE_VFORK | SIGCHLD,
        _ => {}
    }
    let mut tok: Option<Vec<u8>> = None;
    if call.name == "clone3" {
        let first = call.arg_or_empty(0);
        if first.starts_with(b"{") {
            let part = match find(first, b" => ") {
                Some(k) => &first[..k],
                None => first,
            };
            let mut st = parse_value(part);
            if let Value::Pair(p) = st {
                st = p.0;
            }
            if let Value::Struct(_) = &st {
                match st.get("flags") {
                    None => return 0,
                    Some(Value::Int(i)) => return (*i).into(),
                    Some(Value::UInt(u)) => return (*u).into(),
                    Some(Value::Str(t) | Value::Raw(t)) => tok = Some(t.0.to_vec()),
                    // str() of a list, dict or tuple names no flag
                    Some(_) => return 0,
                }
            }
        }
        if tok.is_none() {
            if let Some(i) = find(first, b"flags=") {
                let rest = &first[i + 6..];
                tok = Some(rest.split(|&c| c == b',').next().unwrap_or(b"").to_vec());
            } else if !first.starts_with(b"{") {
                return THREAD_GUESS;
            }
        }
    } else {
        for (i, k) in &call.names {
            if &k[..] == b"flags" {
                tok = call.arg(*i).map(<[u8]>::to_vec);
            }
        }
        if tok.is_none() {
            for a in &call.args {
                if let Some(r) = a.strip_prefix(b"flags=") {
                    tok = Some(r.to_vec());
                }
            }
            if tok.is_none() && !call.args.is_empty() {
                tok = Some(call.args[0].to_vec());
            }
        }
    }
    match tok {
        None => 0,
        Some(t) => flag_total(&t),
    }
}

fn clone(call: &mut Call<'_>) -> Kind {
    let flags = clone_flags(call);
    let ok = call.ret.is_some_and(|r| r > 0) && call.err.is_none();
    let child = if ok {
        let r = call.ret.unwrap();
        Some(u32::try_from(r).unwrap_or_else(|_| {
            call.overflow = true;
            0
        }))
    } else {
        None
    };
    Kind::Clone(Clone {
        child,
        thread: flags & CLONE_THREAD != 0,
        share_files: flags & CLONE_FILES != 0,
        flags: call.u64(flags),
    })
}

fn exec(call: &mut Call<'_>) -> Kind {
    let tok = call.arg(if call.name == "execve" { 0 } else { 1 });
    let path = tok
        .filter(|t| t.starts_with(b"\""))
        .map(|t| parse_string(t).0);
    if call.err.is_some() {
        let (fds, paths) = used_fds(call);
        return Kind::Syscall(Syscall { fds, paths });
    }
    Kind::Exec(Exec { path: text(path) })
}

fn exit(call: &mut Call<'_>) -> Kind {
    let st = int_of(call.arg(0), None, 0);
    Kind::Exit(Exit {
        whole: call.name == "exit_group",
        status: Some(i64::try_from(st).unwrap_or_else(|_| {
            call.overflow = true;
            0
        })),
        signal: None,
    })
}

fn recvmsg(call: &mut Call<'_>) -> Kind {
    let (fd, path) = fd_of(call.arg(0));
    let ok = call.ok_fd_result();
    let (fds, paths) = if ok {
        cmsg_fds(call, 1)
    } else {
        (vec![], vec![])
    };
    if !fds.is_empty() {
        let cloexec = contains(call.arg_or_empty(2), b"MSG_CMSG_CLOEXEC");
        return Kind::FdCreate(FdCreate {
            origin: Cow::Borrowed("recvmsg"),
            fds,
            paths,
            cloexec,
            src_fd: call.opt_fd(fd),
            ..Default::default()
        });
    }
    match fd {
        None => Kind::Syscall(Syscall::default()),
        Some(f) => Kind::Syscall(Syscall {
            fds: vec![call.fd(f)],
            paths: vec![text(path)],
        }),
    }
}

fn sendmsg(call: &mut Call<'_>) -> Kind {
    let (mut fds, mut paths) = used_fds(call);
    let (more, mpaths) = cmsg_fds(call, 1);
    fds.extend(more);
    paths.extend(mpaths);
    Kind::Syscall(Syscall { fds, paths })
}

fn pidfd_getfd(call: &mut Call<'_>) -> Kind {
    let (target, _) = fd_of(call.arg(1));
    let fds = call.ret_fds();
    let paths = call.ret_paths();
    Kind::FdCreate(FdCreate {
        origin: Cow::Borrowed("pidfd_getfd"),
        fds,
        paths,
        cloexec: true,
        src_fd: call.opt_fd(target),
        ..Default::default()
    })
}

/// Argument names of intent calls (docs/preload-log.md); '*' marks out-params.
fn intent_args(name: &str) -> &'static str {
    match name {
        "hsa_amd_memory_lock" => "host_ptr size agents num_agent agent_ptr*",
        "hsa_amd_memory_lock_to_pool" => "host_ptr size agents num_agent pool flags agent_ptr*",
        "hsa_amd_memory_unlock" => "host_ptr",
        "hsa_amd_svm_attributes_set" => "ptr size attribute_list attribute_count",
        "hsa_amd_portable_export_dmabuf" => "ptr size dmabuf* offset*",
        "hsa_amd_portable_close_dmabuf" => "dmabuf",
        "hsa_amd_vmem_handle_create" => "pool size type flags memory_handle*",
        "hsa_amd_vmem_handle_release" => "memory_handle",
        "hsa_amd_vmem_map" => "va size in_offset memory_handle flags",
        "hsa_amd_vmem_unmap" => "va size",
        "hsa_amd_vmem_set_access" => "va size desc desc_cnt",
        "hsa_amd_vmem_export_shareable_handle" => "dmabuf_fd* handle flags",
        "hsa_amd_vmem_import_shareable_handle" => "dmabuf_fd handle*",
        "hsa_amd_vmem_retain_alloc_handle" => "memory_handle* addr",
        _ => "",
    }
}

/// An enumeration argument printed by its name (`MEMORY_TYPE_NONE`): its
/// value where the header's is known, else kept as printed.
fn intent_enum(key: &str, val: Value) -> Value {
    match (key, &val) {
        ("type", Value::Raw(t)) => match t.as_bytes() {
            b"MEMORY_TYPE_NONE" => Value::Int(0),
            b"MEMORY_TYPE_PINNED" => Value::Int(1),
            _ => val,
        },
        _ => val,
    }
}

fn intent_value_ok(key: &str, val: &Value, out: bool) -> bool {
    if matches!(key, "type" | "flags") && matches!(val, Value::Raw(_)) {
        // an enumeration or flag set by name
        return true;
    }
    if matches!(key, "agents" | "attribute_list" | "desc") {
        return matches!(val, Value::List(_)) || is_int(val);
    }
    if out && let Value::List(x) = val {
        return x.iter().all(is_int);
    }
    is_int(val)
}

/// An HSA handle type passed by value (`hsa_agent_t`,
/// `hsa_amd_memory_pool_t`, `hsa_amd_vmem_alloc_handle_t`: one-field
/// structs) reads the same in strace's struct notation (`{handle=0x5612a0}`)
/// as written as its value (`0x5612a0`), in lists too (SPEC 3.2).
fn unwrap_handle(val: Value) -> Value {
    match val {
        Value::Struct(mut f) if f.len() == 1 && f[0].0 == "handle" && is_int(&f[0].1) => {
            f.pop().unwrap().1
        }
        Value::List(x) => Value::List(x.into_iter().map(unwrap_handle).collect()),
        // hsa_amd_memory_access_desc_t's agent_handle is an hsa_agent_t
        Value::Struct(f) => {
            Value::Struct(f.into_iter().map(|(k, v)| (k, unwrap_handle(v))).collect())
        }
        v => v,
    }
}

/// Dict-style assignment: a repeated key keeps its place, the new value.
fn set_field(fields: &mut Vec<(Name, Value)>, key: Name, val: Value) {
    match fields.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = val,
        None => fields.push((key, val)),
    }
}

fn intent(call: &mut Call<'_>) -> Kind {
    // the spec's names in argument order, read as the arguments are
    let mut spec = intent_args(&call.name).split(' ').filter(|s| !s.is_empty());
    let mut args = Vec::with_capacity(call.args.len());
    let mut outs = Vec::new();
    for i in 0..call.args.len() {
        let named = spec.next();
        let key: Name = if let Some(k) = named {
            Cow::Borrowed(k)
        } else {
            match call.names.iter().rev().find(|(k, _)| *k == i) {
                Some((_, n)) if !n.is_empty() => {
                    Cow::Owned(String::from_utf8_lossy(n).into_owned())
                }
                _ => Cow::Owned(format!("arg{i}")),
            }
        };
        let out = key.ends_with('*');
        let key: Name = match key {
            Cow::Borrowed(k) => Cow::Borrowed(k.trim_end_matches('*')),
            Cow::Owned(k) => Cow::Owned(k.trim_end_matches('*').to_owned()),
        };
        let mut val = intent_enum(&key, unwrap_handle(parse_value(&call.args[i])));
        if named.is_some() && !intent_value_ok(&key, &val, out) {
            call.malformed = true;
            continue;
        }
        if out {
            if let Value::List(mut x) = val {
                // a one-element list is its element; [] stays the empty list
                val = if x.len() == 1 {
                    x.pop().unwrap()
                } else {
                    Value::List(x)
                };
            }
            set_field(&mut outs, key, val);
        } else {
            set_field(&mut args, key, val);
        }
    }
    Kind::Intent(Box::new(Intent { args, outs }))
}

#[allow(dead_code)]
fn _ws(c: u8) -> bool {
    is_ws(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(name: &'a str, args: &[&'a str], ret: Option<i128>) -> Call<'a> {
        let mut c = Call::new(
            Cow::Borrowed(name),
            args.iter().map(|a| Cow::Borrowed(a.as_bytes())).collect(),
        );
        c.ret = ret;
        c
    }

    #[test]
    fn open_dup_close() {
        let mut c = call(
            "openat",
            &["AT_FDCWD", "\"/dev/kfd\"", "O_RDWR|O_CLOEXEC"],
            Some(3),
        );
        let n = normalize(&mut c);
        let Kind::FdCreate(f) = n.kind else { panic!() };
        assert_eq!(f.fds, vec![3]);
        assert_eq!(f.paths, vec![Some(Text::from("/dev/kfd"))]);
        assert!(f.cloexec);
        let mut c = call("dup2", &["3", "10"], Some(10));
        let Kind::FdCreate(f) = normalize(&mut c).kind else {
            panic!()
        };
        assert_eq!((f.src_fd, f.new_fd, f.replace), (Some(3), Some(10), true));
        let mut c = call("close", &["3</dev/kfd>"], Some(0));
        let Kind::Close(f) = normalize(&mut c).kind else {
            panic!()
        };
        assert_eq!((f.fd, f.path), (3, Some(Text::from("/dev/kfd"))));
    }

    #[test]
    fn ioctl_requests_and_svm() {
        let mut c = call(
            "ioctl",
            &[
                "3</dev/kfd>",
                "AMDKFD_IOC_SVM",
                "{start_addr=0x1000, size=0x1000, op=KFD_IOCTL_SVM_OP_SET_ATTR, nattr=2, attrs=[{type=KFD_IOCTL_SVM_ATTR_SET_FLAGS, value=0x1}, {type=1, value=2}]}",
            ],
            Some(0),
        );
        let Kind::Ioctl(i) = normalize(&mut c).kind else {
            panic!()
        };
        assert_eq!(i.ioctl, Some("AMDKFD_IOC_SVM"));
        assert_eq!(i.size, Some(40));
        assert_eq!((i.type_, i.nr), (Some(0x4b), Some(0x20)));
        let attrs = i.arg.as_ref().unwrap().get("attrs").unwrap();
        assert_eq!(attrs.as_list().unwrap().len(), 2);
        let mut c = call("ioctl", &["5", "TCGETS", "0x7ffc"], Some(0));
        let Kind::Ioctl(i) = normalize(&mut c).kind else {
            panic!()
        };
        assert_eq!(i.ioctl, Some("TCGETS"));
        assert_eq!(i.request, None);
    }

    fn intent_of(name: &str, args: &[&str]) -> (Box<Intent>, bool) {
        let mut c = call(name, args, Some(0));
        let n = normalize(&mut c);
        let Kind::Intent(i) = n.kind else { panic!() };
        (i, c.malformed)
    }

    #[test]
    fn intent_handles_read_the_same_in_struct_notation() {
        // SPEC 3.2: an HSA handle type as its value or as {handle=…}
        let plain = intent_of(
            "hsa_amd_vmem_handle_create",
            &["0x5613c0", "0x400000", "0", "0", "[0x7a010]"],
        );
        let structs = intent_of(
            "hsa_amd_vmem_handle_create",
            &[
                "{handle=0x5613c0}",
                "0x400000",
                "MEMORY_TYPE_NONE",
                "0",
                "[{handle=0x7a010}]",
            ],
        );
        assert!(!plain.1 && !structs.1);
        assert_eq!(plain.0.args, structs.0.args);
        assert_eq!(plain.0.outs, structs.0.outs);
        let plain = intent_of(
            "hsa_amd_memory_lock_to_pool",
            &[
                "0x7f00", "0x1000", "[0x1111]", "1", "0x2222", "0", "[0x7f80]",
            ],
        );
        let structs = intent_of(
            "hsa_amd_memory_lock_to_pool",
            &[
                "0x7f00",
                "0x1000",
                "[{handle=0x1111}]",
                "1",
                "{handle=0x2222}",
                "0",
                "[0x7f80]",
            ],
        );
        assert!(!plain.1 && !structs.1);
        assert_eq!(plain.0.args, structs.0.args);
        assert_eq!(plain.0.outs, structs.0.outs);
        let (r, bad) = intent_of("hsa_amd_vmem_handle_release", &["{handle=0x7a010}"]);
        assert!(!bad);
        assert_eq!(
            r.args,
            vec![(Cow::Borrowed("memory_handle"), Value::Int(0x7a010))]
        );
    }

    #[test]
    fn clone_flags_of_forms() {
        let c = call(
            "clone",
            &["child_stack=NULL", "flags=CLONE_VM|CLONE_THREAD|SIGCHLD"],
            None,
        );
        assert_eq!(clone_flags(&c), 0x100 | 0x10000 | 17);
        let c = call(
            "clone3",
            &["{flags=CLONE_VM|CLONE_FILES, exit_signal=SIGCHLD}", "88"],
            None,
        );
        assert_eq!(clone_flags(&c), 0x500);
        let c = call("clone3", &["0x7ffc", "88"], None);
        assert_eq!(clone_flags(&c), THREAD_GUESS);
    }
}
