"""Per-syscall normalization: one parsed call (name, argument tokens, result)
becomes one event of rocrtrace.events.

Which class a syscall maps to, where its fds are when the log has no ``-y``
decorations, and the Linux constants needed to turn flag names into ints
live here; the line grammar lives in strace.py.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .. import kfd
from .pyevents import (Clone, Close, CloseRange, Event, Exec, Exit, FdCreate,
                      Intent, Ioctl, Mmap, Mremap, Munmap, SetCloexec, Syscall)
from .tokens import (parse_fd, parse_flags, parse_int, parse_ioc, parse_value,
                     scan_args, strip_comment, split_top)

# x86_64 numbers an old strace prints as syscall_0x1b4 / syscall_436.
X86_64_UNKNOWN = {434: "pidfd_open", 435: "clone3", 436: "close_range",
                  437: "openat2", 438: "pidfd_getfd", 439: "faccessat2",
                  440: "process_madvise", 441: "epoll_pwait2",
                  442: "mount_setattr", 447: "memfd_secret"}

CLONE_FLAGS = {
    "CSIGNAL": 0xFF, "CLONE_VM": 0x100, "CLONE_FS": 0x200,
    "CLONE_FILES": 0x400, "CLONE_SIGHAND": 0x800, "CLONE_PIDFD": 0x1000,
    "CLONE_PTRACE": 0x2000, "CLONE_VFORK": 0x4000, "CLONE_PARENT": 0x8000,
    "CLONE_THREAD": 0x10000, "CLONE_NEWNS": 0x20000, "CLONE_SYSVSEM": 0x40000,
    "CLONE_SETTLS": 0x80000, "CLONE_PARENT_SETTID": 0x100000,
    "CLONE_CHILD_CLEARTID": 0x200000, "CLONE_DETACHED": 0x400000,
    "CLONE_UNTRACED": 0x800000, "CLONE_CHILD_SETTID": 0x1000000,
    "CLONE_NEWCGROUP": 0x2000000, "CLONE_NEWUTS": 0x4000000,
    "CLONE_NEWIPC": 0x8000000, "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000,
    "CLONE_IO": 0x80000000, "CLONE_CLEAR_SIGHAND": 0x100000000,
    "CLONE_INTO_CGROUP": 0x200000000, "CLONE_NEWTIME": 0x80,
}
THREAD_GUESS = 0x3D0F00   # glibc pthread_create's clone3 flags
SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5,
           "SIGABRT": 6, "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10,
           "SIGSEGV": 11, "SIGUSR2": 12, "SIGPIPE": 13, "SIGALRM": 14,
           "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17, "SIGCONT": 18,
           "SIGSTOP": 19}
MMAP_NAMES = {
    "PROT_NONE": 0, "PROT_READ": 1, "PROT_WRITE": 2, "PROT_EXEC": 4,
    "PROT_SEM": 8, "PROT_GROWSDOWN": 0x01000000, "PROT_GROWSUP": 0x02000000,
    "MAP_SHARED": 1, "MAP_PRIVATE": 2, "MAP_SHARED_VALIDATE": 3,
    "MAP_FIXED": 0x10, "MAP_ANONYMOUS": 0x20, "MAP_ANON": 0x20, "MAP_32BIT": 0x40,
    "MAP_GROWSDOWN": 0x100, "MAP_DENYWRITE": 0x800, "MAP_EXECUTABLE": 0x1000,
    "MAP_LOCKED": 0x2000, "MAP_NORESERVE": 0x4000, "MAP_POPULATE": 0x8000,
    "MAP_NONBLOCK": 0x10000, "MAP_STACK": 0x20000, "MAP_HUGETLB": 0x40000,
    "MAP_SYNC": 0x80000, "MAP_FIXED_NOREPLACE": 0x100000,
    "MAP_UNINITIALIZED": 0x4000000, "MAP_DROPPABLE": 0x8,
    "MREMAP_MAYMOVE": 1, "MREMAP_FIXED": 2, "MREMAP_DONTUNMAP": 4,
}
CLOSE_RANGE_NAMES = {"CLOSE_RANGE_UNSHARE": 2, "CLOSE_RANGE_CLOEXEC": 4}
_NAME_TABLES = {None: None, "mmap": MMAP_NAMES, "close_range": CLOSE_RANGE_NAMES}
FCNTL_CMDS = {"F_DUPFD": 0, "F_GETFD": 1, "F_SETFD": 2, "F_DUPFD_CLOEXEC": 1030}
O_CLOEXEC = 0o2000000

# Syscalls whose result is a new fd, by origin kind.
FD_RESULT = {
    "open": "open", "openat": "open", "openat2": "open", "creat": "open",
    "open_by_handle_at": "open", "open_tree": "open", "fsopen": "fsopen",
    "fsmount": "fsmount", "fspick": "fspick", "socket": "socket",
    "accept": "accept", "accept4": "accept", "eventfd": "eventfd",
    "eventfd2": "eventfd", "memfd_create": "memfd_create",
    "memfd_secret": "memfd_secret", "pidfd_open": "pidfd_open",
    "epoll_create": "epoll_create", "epoll_create1": "epoll_create",
    "signalfd": "signalfd", "signalfd4": "signalfd",
    "timerfd_create": "timerfd_create", "inotify_init": "inotify_init",
    "inotify_init1": "inotify_init", "fanotify_init": "fanotify_init",
    "userfaultfd": "userfaultfd", "perf_event_open": "perf_event_open",
    "io_uring_setup": "io_uring_setup", "mq_open": "mq_open",
    "landlock_create_ruleset": "landlock",
}
# pidfds are always close-on-exec.
ALWAYS_CLOEXEC = {"pidfd_open", "pidfd_getfd", "memfd_secret"}

# Argument positions that hold fds, for logs without -y decorations.
_FD0 = ("read write pread64 pwrite64 readv writev preadv pwritev preadv2 "
        "pwritev2 lseek _llseek fstat fstat64 fstatfs fstatfs64 fsync fdatasync "
        "ftruncate ftruncate64 fchmod fchown fchdir flock getdents getdents64 "
        "sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg connect bind listen "
        "accept accept4 shutdown getsockname getpeername setsockopt getsockopt "
        "epoll_wait epoll_pwait epoll_pwait2 fadvise64 fallocate readahead "
        "sync_file_range syncfs ioctl fcntl fcntl64 inotify_add_watch "
        "inotify_rm_watch fgetxattr fsetxattr flistxattr fremovexattr "
        "timerfd_settime timerfd_gettime pidfd_send_signal io_uring_enter "
        "io_uring_register close dup dup2 dup3 fanotify_mark fstatat64 "
        "newfstatat statx openat openat2 mkdirat mknodat fchownat futimesat "
        "unlinkat faccessat faccessat2 fchmodat readlinkat utimensat "
        "name_to_handle_at execveat mount_setattr open_tree move_mount fspick "
        "process_madvise process_mrelease finit_module kexec_file_load "
        "vmsplice copy_file_range splice tee sendfile sendfile64 linkat "
        "renameat renameat2 symlinkat epoll_ctl").split()
FD_POSITIONS: dict[str, tuple[int, ...]] = {n: (0,) for n in _FD0}
FD_POSITIONS.update({
    "mmap": (4,), "mmap2": (4,), "epoll_ctl": (0, 2), "sendfile": (0, 1),
    "sendfile64": (0, 1), "splice": (0, 2), "tee": (0, 1),
    "copy_file_range": (0, 2), "linkat": (0, 2), "renameat": (0, 2),
    "renameat2": (0, 2), "symlinkat": (1,), "move_mount": (0, 2),
    "pidfd_getfd": (0,), "signalfd": (0,), "signalfd4": (0,),
    "kcmp": (), "fanotify_mark": (0, 3),
})
# Arguments that are pids (decorated by -Y like fds); never fds.
PID_POSITIONS: dict[str, tuple[int, ...]] = {
    "wait4": (0,), "waitid": (1,), "kill": (0,), "tkill": (0,),
    "tgkill": (0, 1), "pidfd_open": (0,), "process_vm_readv": (0,),
    "process_vm_writev": (0,), "ptrace": (1,), "setpgid": (0, 1),
    "getpgid": (0,), "getsid": (0,), "sched_setaffinity": (0,),
    "sched_getaffinity": (0,), "sched_setscheduler": (0,),
    "sched_getscheduler": (0,), "sched_setparam": (0,), "sched_getparam": (0,),
    "sched_setattr": (0,), "sched_getattr": (0,), "prlimit64": (0,),
    "get_robust_list": (0,), "kcmp": (0, 1), "migrate_pages": (0,),
    "move_pages": (0,), "rt_sigqueueinfo": (0,), "rt_tgsigqueueinfo": (0, 1),
    "perf_event_open": (1,), "ioprio_set": (1,), "ioprio_get": (1,),
    "sched_rr_get_interval": (0,), "capget": (), "set_robust_list": (),
}
# Where pidfd_getfd's second argument lives: the other process's table.
_NOT_OWN_FD = {"pidfd_getfd": (1,)}


@dataclass(slots=True)
class Call:
    """One syscall (or intent call) after the line grammar, before
    normalization.  ``args`` are top-level argument tokens with any ``-N``
    name stripped; ``names`` the stripped names by position."""

    name: str
    args: list
    ret: int | None = None
    err: str | None = None
    ret_path: str | None = None
    names: dict = field(default_factory=dict)
    injected: bool = False
    malformed: bool = False     # normalization dropped a value of the wrong type


def _arg(call: Call, i: int, name: str | None = None) -> str | None:
    if name is not None:
        for k, v in call.names.items():
            if v == name and k < len(call.args):
                return call.args[k]
    return call.args[i] if i < len(call.args) else None


def _fd_of(tok: str | None) -> tuple[int | None, str | None]:
    if tok is None:
        return None, None
    if "/*" in tok:
        tok, _ = strip_comment(tok)
    return parse_fd(tok)


def _int_of(tok: str | None, table: str | None = None, default: int = 0) -> int:
    """An integer argument: a number, NULL, an fd, or flag names (from
    ``_NAME_TABLES[table]`` and the KFD constants)."""
    if tok is None:
        return default
    return _int_token(tok, table, default)


# Sizes, protections and flags repeat from line to line.
@functools.lru_cache(maxsize=8192)
def _int_token(tok: str, table: str | None, default: int) -> int:
    v = parse_int(tok)
    if v is not None:
        return v
    if tok == "NULL":
        return 0
    fd, _ = _fd_of(tok)
    if fd is not None:
        return fd
    f = parse_flags(tok, _NAME_TABLES[table])
    return default if f is None else f


def used_fds(call: Call) -> tuple[tuple, tuple]:
    """(fds, paths) an ordinary syscall used: decorated top-level args (not
    pid args) and the known fd positions of undecorated logs.  A negative
    number in an fd position is kept (``read(-1, …)`` is a bad fd argument);
    named ones (AT_FDCWD) are not numbers and are skipped."""
    positions = FD_POSITIONS.get(call.name, ())
    if not positions and "<" not in "".join(call.args):
        return (), ()       # most calls: no fd argument and no decoration
    fds: list[int] = []
    paths: list = []
    skip = PID_POSITIONS.get(call.name, ()) + _NOT_OWN_FD.get(call.name, ())
    for i, tok in enumerate(call.args):
        if i in skip or not tok:
            continue
        c = tok[0]
        if not (c.isdigit() or c == "-"):
            continue
        decorated = "<" in tok
        if not decorated and i not in positions:
            continue
        fd, path = _fd_of(tok)
        if fd is None or (fd < 0 and (decorated or fd < -0x7FFFFFFF)):
            continue
        fds.append(fd)
        paths.append(path)
    return tuple(fds), tuple(paths)


def _cmsg_fds(tok: str | None) -> tuple[list[int], list]:
    """fds in the SCM_RIGHTS ``cmsg_data=[…]`` arrays of a msghdr."""
    fds: list[int] = []
    paths: list = []
    if not tok or "cmsg_data=[" not in tok:
        return fds, paths
    if not ("SCM_RIGHTS" in tok or "cmsg_type=0x1" in tok):
        return fds, paths
    pos = 0
    while True:
        i = tok.find("cmsg_data=[", pos)
        if i < 0:
            break
        start = i + len("cmsg_data=[")
        items, close = _array_items(tok, start - 1)
        for it in items:
            fd, path = parse_fd(it)
            if fd is not None and fd >= 0:
                fds.append(fd)
                paths.append(path)
        pos = max(close, start)
    return fds, paths


def _array_items(tok: str, bracket: int) -> tuple[list[str], int]:
    """Items of the ``[…]`` whose ``[`` is at ``bracket``."""
    from .tokens import _matching
    end = _matching(tok, bracket)
    if end < 0:
        return [], len(tok)
    return [x for x in split_top(tok[bracket + 1:end]) if x and x != "..."], end


def _fd_array(tok: str | None) -> tuple[list[int], list]:
    if not tok or not tok.startswith("["):
        return [], []
    items, _ = _array_items(tok, 0)
    fds, paths = [], []
    for it in items:
        fd, path = parse_fd(it)
        if fd is not None:
            fds.append(fd)
            paths.append(path)
    return fds, paths


def _cloexec_flag(tok: str | None) -> bool:
    if not tok:
        return False
    if "CLOEXEC" in tok:
        return True
    v = parse_int(strip_comment(tok)[0])
    return v is not None and bool(v & O_CLOEXEC)


def normalize(call: Call, base: dict) -> Event:
    """The event for one call; ``base`` holds the common Event fields."""
    name = call.name
    if name.startswith("syscall_"):
        num = parse_int(name[8:]) if name.startswith("syscall_0x") else None
        if num is None:
            try:
                num = int(name[8:], 0) if not name[8:].startswith("0x") else int(name[8:], 16)
            except ValueError:
                num = None
        if num is not None and num in X86_64_UNKNOWN:
            name = call.name = X86_64_UNKNOWN[num]
    fn = _HANDLERS.get(name)
    if fn is not None:
        ev = fn(call, base)
        if ev is not None:
            return ev
    if name.startswith("hsa_"):
        return _intent(call, base)
    fds, paths = used_fds(call)
    return Syscall(name=name, fds=fds, paths=paths, **base)


def _open(call: Call, base: dict) -> Event:
    name = call.name
    ok = call.ret is not None and call.ret >= 0 and call.err is None
    path = call.ret_path
    if name in ("open", "creat"):
        ptok, ftok = _arg(call, 0), _arg(call, 1)
    elif name == "openat2":
        ptok, ftok = _arg(call, 1), _arg(call, 2)
    elif name in ("openat", "open_by_handle_at"):
        ptok, ftok = _arg(call, 1), _arg(call, 2)
    else:
        ptok, ftok = None, " ".join(call.args)
    if path is None and ptok and ptok.startswith('"') and name in ("open", "openat", "openat2", "creat"):
        from .tokens import parse_string
        path = parse_string(ptok)[0]
    cloexec = _cloexec_flag(ftok) or name in ALWAYS_CLOEXEC
    if name == "creat":
        cloexec = False
    origin = FD_RESULT.get(name) or name
    return FdCreate(name=name, origin=origin, fds=(call.ret,) if ok else (),
                    paths=(path,) if ok else (), cloexec=cloexec, **base)


def _pair(call: Call, base: dict) -> Event:
    tok = _arg(call, 0) if call.name.startswith("pipe") else _arg(call, 3)
    ok = call.ret == 0 and call.err is None
    fds, paths = _fd_array(tok) if ok else ([], [])
    ftok = _arg(call, 1) if call.name == "pipe2" else _arg(call, 1)
    return FdCreate(name=call.name, origin=call.name.rstrip("2"), fds=tuple(fds),
                    paths=tuple(paths), cloexec=_cloexec_flag(ftok), **base)


def _dup(call: Call, base: dict) -> Event:
    src, _ = _fd_of(_arg(call, 0))
    ok = call.ret is not None and call.ret >= 0 and call.err is None
    replace = False
    cloexec = False
    new = None
    if call.name in ("dup2", "dup3"):
        new, _ = _fd_of(_arg(call, 1))
        replace = new is not None and new != src
        cloexec = call.name == "dup3" and _cloexec_flag(_arg(call, 2))
    return FdCreate(name=call.name, origin="dup", fds=(call.ret,) if ok else (),
                    paths=(call.ret_path,) if ok else (), cloexec=cloexec,
                    src_fd=src, replace=replace, new_fd=new, **base)


def _fcntl(call: Call, base: dict) -> Event | None:
    fd, path = _fd_of(_arg(call, 0))
    cmd_tok = _arg(call, 1) or ""
    cmd = FCNTL_CMDS.get(strip_comment(cmd_tok)[0].strip())
    if cmd is None:
        cmd = parse_int(strip_comment(cmd_tok)[0])
    if cmd in (0, 1030):
        ok = call.ret is not None and call.ret >= 0 and call.err is None
        return FdCreate(name=call.name, origin="dup", fds=(call.ret,) if ok else (),
                        paths=(call.ret_path,) if ok else (),
                        cloexec=cmd == 1030, src_fd=fd, **base)
    if cmd == 2:
        arg = _arg(call, 2) or "0"
        if "FD_CLOEXEC" in arg:
            on = True
        else:
            v = parse_int(strip_comment(arg)[0])
            on = bool(v and v & 1)
        return SetCloexec(name=call.name, fd=-1 if fd is None else fd, cloexec=on, **base)
    return None


def _close(call: Call, base: dict) -> Event:
    fd, path = _fd_of(_arg(call, 0))
    if fd is None:
        # not a number (a raw or mangled argument): a call, but no fd to judge
        return Syscall(name=call.name, **base)
    return Close(fd=fd, path=path, **base)


def _close_range(call: Call, base: dict) -> Event:
    first = _int_of(_arg(call, 0), default=0)
    last = _int_of(_arg(call, 1), default=0xFFFFFFFF) & 0xFFFFFFFF
    flags = _int_of(_arg(call, 2), "close_range", default=0)
    return CloseRange(first=first & 0xFFFFFFFF, last=last, flags=flags, **base)


_SVM_FIELDS_INT = ("start_addr", "size", "op", "nattr")


def _ioctl(call: Call, base: dict) -> Event:
    fd, path = _fd_of(_arg(call, 0))
    request, d, t, nr, size, hint, name = _request_of(_arg(call, 1) or "", path)
    arg = out = None
    atok = _arg(call, 2)
    if atok and (atok.startswith("{") or atok.startswith("[")):
        val = parse_value(atok)
        if isinstance(val, tuple):
            arg, out = val
        else:
            arg = val
        arg, bad_a = _ioctl_struct(arg)
        out, bad_o = _ioctl_struct(out)
        if bad_a or bad_o:
            call.malformed = True
        if (t, nr) == kfd.SVM and arg is not None and not _svm_ok(arg):
            # an SVM struct without its range and op: no struct at all
            arg = out = None
        if (t, nr) == kfd.SVM and arg and isinstance(arg.get("nattr"), int) \
                and hint and not hint.startswith("_IOC"):
            size = 24 + 8 * arg["nattr"]
            request = kfd.ioc(d if d is not None else 3, t, nr, size & 0x3FFF)
    return Ioctl(fd=-1 if fd is None else fd, path=path, request=request, dir=d,
                 type=t, nr=nr, size=size, ioctl=name, arg=arg, out=out, **base)


# A trace names a handful of requests on a handful of fds millions of times.
@functools.lru_cache(maxsize=4096)
def _request_of(req_tok: str, path: str | None) -> tuple:
    """(request, dir, type, nr, size, hint, canonical name) of a request
    argument as strace printed it, on an fd with this path."""
    return _decode_request(req_tok, path)


def _decode_request(req_tok: str, path: str | None) -> tuple:
    req_tok, comment = strip_comment(req_tok)
    req_tok = req_tok.strip()
    request = d = t = nr = size = None
    hint = None
    v = parse_int(req_tok)
    if v is not None:
        request = v & 0xFFFFFFFF
        hint = comment
    elif req_tok.startswith("_IOC("):
        request = parse_ioc(req_tok)
    else:
        hint = req_tok
        for alt in req_tok.split(" or "):
            ent = kfd.REQUEST_BY_NAME.get(alt.strip())
            if ent is not None:
                d, t, nr, size = ent
                if kfd.device_of(path) == "accel" and "AMDXDNA" in alt:
                    break
                if kfd.device_of(path) != "accel" and "AMDXDNA" not in alt:
                    break
        if t is not None:
            request = kfd.ioc(d, t, nr, size)
    if request is not None:
        d, t, nr, size = kfd.decode_request(request)
    name = kfd.ioctl_name(t, nr, path, hint)
    if name is None and hint and not hint.startswith("_IOC"):
        name = hint.split(" or ")[0].strip()
    return request, d, t, nr, size, hint, name


def _is_int(v) -> bool:
    return type(v) is int


_SVM_NEEDS = ("start_addr", "size", "op", "nattr")


def _svm_ok(arg: dict) -> bool:
    return all(_is_int(arg.get(k)) for k in _SVM_NEEDS)


# Struct fields the models read, and so must be ints when present.
_INT_FIELDS = frozenset((
    "start_addr", "size", "op", "nattr", "handle", "va_addr", "gpu_id", "flags",
    "dmabuf_fd", "fd", "fd_flags", "mmap_offset", "n_devices", "n_success",
    "xnack_enabled", "metadata_size", "offset"))


def _ioctl_struct(val) -> tuple[dict | None, bool]:
    """(fields, malformed) of a decoded ioctl struct.  The fields models read
    must be ints (SVM ``attrs`` a list of (type, value) int pairs,
    ``device_ids_array`` a list of ints): a value of another type is dropped
    and the struct reported malformed, so models never see a wrong type.
    Other fields stay as parsed (models do not read them)."""
    if not isinstance(val, dict):
        # strace's own decoding of a non-KFD argument ([424] of FIONREAD)
        return None, False
    bad = False
    for k in list(val):
        v = val[k]
        if k == "attrs":
            pairs = []
            ok = isinstance(v, list)
            for a in v if ok else ():
                ty = a.get("type") if isinstance(a, dict) else None
                va = a.get("value") if isinstance(a, dict) else None
                if _is_int(ty) and _is_int(va):
                    pairs.append((ty, va))
                else:
                    ok = False
            if ok:
                val[k] = pairs
            else:
                bad = True
                del val[k]
        elif k == "device_ids_array":
            if isinstance(v, list) and all(_is_int(x) for x in v):
                continue
            bad = True
            del val[k]
        elif k in _INT_FIELDS and not _is_int(v):
            bad = True
            del val[k]
    return val, bad


def _mmap(call: Call, base: dict) -> Event:
    addr = _int_of(_arg(call, 0))
    fd, path = _fd_of(_arg(call, 4))
    off = _int_of(_arg(call, 5))
    if call.name == "mmap2":
        off *= 4096
    return Mmap(name=call.name, addr=addr or None, length=_int_of(_arg(call, 1)),
                prot=_int_of(_arg(call, 2), "mmap"), flags=_int_of(_arg(call, 3), "mmap"),
                fd=-1 if fd is None else fd, path=path, offset=off, **base)


def _munmap(call: Call, base: dict) -> Event:
    return Munmap(addr=_int_of(_arg(call, 0)), length=_int_of(_arg(call, 1)), **base)


def _mremap(call: Call, base: dict) -> Event:
    flags = _int_of(_arg(call, 3), "mmap")
    new = _arg(call, 4)
    return Mremap(old_addr=_int_of(_arg(call, 0)), old_len=_int_of(_arg(call, 1)),
                  new_len=_int_of(_arg(call, 2)), flags=flags,
                  new_addr=None if new is None else _int_of(new), **base)


def clone_flags(call: Call) -> int:
    """The flags of clone/clone3/fork/vfork as an int."""
    n = call.name
    if n == "fork":
        return SIGNALS["SIGCHLD"]
    if n == "vfork":
        return CLONE_FLAGS["CLONE_VM"] | CLONE_FLAGS["CLONE_VFORK"] | SIGNALS["SIGCHLD"]
    tok = None
    if n == "clone3":
        first = _arg(call, 0) or ""
        if first.startswith("{"):
            st = parse_value(first.split(" => ")[0] if " => " in first else first)
            if isinstance(st, tuple):
                st = st[0]
            if isinstance(st, dict):
                f = st.get("flags", 0)
                if isinstance(f, int):
                    return f
                tok = str(f)
        if tok is None:
            i = first.find("flags=")
            if i >= 0:
                tok = first[i + 6:].split(",")[0]
            elif not first.startswith("{"):
                # -e raw / old strace: the struct is a bare pointer.  glibc
                # uses clone3 only in pthread_create (fork uses clone), so
                # a thread is the best guess.
                return THREAD_GUESS
    else:
        for i, k in call.names.items():
            if k == "flags":
                tok = call.args[i]
        if tok is None:
            for a in call.args:
                if a.startswith("flags="):
                    tok = a[6:]
            if tok is None and call.args:
                # raw clone: flags is the first argument on x86_64
                tok = call.args[0]
    if tok is None:
        return 0
    total = 0
    for part in strip_comment(tok)[0].split("|"):
        part = part.strip()
        v = parse_int(part)
        if v is None:
            v = CLONE_FLAGS.get(part, SIGNALS.get(part, 0))
        total |= v
    return total


def _clone(call: Call, base: dict) -> Event:
    flags = clone_flags(call)
    ok = call.ret is not None and call.ret > 0 and call.err is None
    return Clone(name=call.name, child=call.ret if ok else None,
                 thread=bool(flags & CLONE_FLAGS["CLONE_THREAD"]),
                 share_files=bool(flags & CLONE_FLAGS["CLONE_FILES"]),
                 flags=flags, **base)


def _exec(call: Call, base: dict) -> Event:
    from .tokens import parse_string
    tok = _arg(call, 0 if call.name == "execve" else 1)
    path = parse_string(tok)[0] if tok and tok.startswith('"') else None
    if call.err is not None:
        fds, paths = used_fds(call)
        return Syscall(name=call.name, fds=fds, paths=paths, **base)
    return Exec(name=call.name, path=path, **base)


def _exit(call: Call, base: dict) -> Event:
    st = _int_of(_arg(call, 0), default=0)
    return Exit(name=call.name, whole=call.name == "exit_group", status=st, **base)


def _recvmsg(call: Call, base: dict) -> Event:
    fd, path = _fd_of(_arg(call, 0))
    ok = call.ret is not None and call.ret >= 0 and call.err is None
    fds, paths = _cmsg_fds(_arg(call, 1)) if ok else ([], [])
    if fds:
        cloexec = "MSG_CMSG_CLOEXEC" in (_arg(call, 2) or "")
        return FdCreate(name=call.name, origin="recvmsg", fds=tuple(fds),
                        paths=tuple(paths), cloexec=cloexec, src_fd=fd, **base)
    return Syscall(name=call.name, fds=() if fd is None else (fd,),
                   paths=() if fd is None else (path,), **base)


def _sendmsg(call: Call, base: dict) -> Event:
    fds, paths = used_fds(call)
    more, mpaths = _cmsg_fds(_arg(call, 1))
    return Syscall(name=call.name, fds=fds + tuple(more), paths=paths + tuple(mpaths), **base)


def _pidfd_getfd(call: Call, base: dict) -> Event:
    pidfd, _ = _fd_of(_arg(call, 0))
    target, _ = _fd_of(_arg(call, 1))
    ok = call.ret is not None and call.ret >= 0 and call.err is None
    return FdCreate(name=call.name, origin="pidfd_getfd", fds=(call.ret,) if ok else (),
                    paths=(call.ret_path,) if ok else (), cloexec=True,
                    src_fd=target, **base)


# Argument names of intent calls (docs/preload-log.md); '*' marks out-params.
INTENT_ARGS = {
    "hsa_amd_memory_lock": "host_ptr size agents num_agent agent_ptr*",
    "hsa_amd_memory_lock_to_pool": "host_ptr size agents num_agent pool flags agent_ptr*",
    "hsa_amd_memory_unlock": "host_ptr",
    "hsa_amd_svm_attributes_set": "ptr size attribute_list attribute_count",
    "hsa_amd_portable_export_dmabuf": "ptr size dmabuf* offset*",
    "hsa_amd_portable_close_dmabuf": "dmabuf",
    "hsa_amd_vmem_handle_create": "pool size type flags memory_handle*",
    "hsa_amd_vmem_handle_release": "memory_handle",
    "hsa_amd_vmem_map": "va size in_offset memory_handle flags",
    "hsa_amd_vmem_unmap": "va size",
    "hsa_amd_vmem_set_access": "va size desc desc_cnt",
    "hsa_amd_vmem_export_shareable_handle": "dmabuf_fd* handle flags",
    "hsa_amd_vmem_import_shareable_handle": "dmabuf_fd handle*",
    "hsa_amd_vmem_retain_alloc_handle": "memory_handle* addr",
}


# Intent arguments that are arrays; every other one is a number.
_INTENT_LISTS = frozenset(("agents", "attribute_list", "desc"))


def _intent_value_ok(key: str, val, out: bool) -> bool:
    if key in _INTENT_LISTS:
        return isinstance(val, list) or _is_int(val)
    if out and isinstance(val, list):
        return all(_is_int(x) for x in val)
    return _is_int(val)


def _intent(call: Call, base: dict) -> Event:
    spec = INTENT_ARGS.get(call.name, "").split()
    args: dict = {}
    outs: dict = {}
    for i, tok in enumerate(call.args):
        if i < len(spec):
            key = spec[i]
        else:
            key = call.names.get(i) or f"arg{i}"
        out = key.endswith("*")
        key = key.rstrip("*")
        val = parse_value(tok)
        if i < len(spec) and not _intent_value_ok(key, val, out):
            # e.g. a struct where the log should show a pointer: dropped
            call.malformed = True
            continue
        if out:
            # strace notation for a value behind a pointer: [value]
            if isinstance(val, list):
                val = val[0] if len(val) == 1 else (val or None)
            outs[key] = val
        else:
            args[key] = val
    return Intent(name=call.name, args=args, outs=outs, **base)


_HANDLERS = {
    "close": _close, "close_range": _close_range, "ioctl": _ioctl,
    "mmap": _mmap, "mmap2": _mmap, "munmap": _munmap, "mremap": _mremap,
    "clone": _clone, "clone2": _clone, "clone3": _clone, "fork": _clone,
    "vfork": _clone, "execve": _exec, "execveat": _exec, "exit": _exit,
    "exit_group": _exit, "dup": _dup, "dup2": _dup, "dup3": _dup,
    "fcntl": _fcntl, "fcntl64": _fcntl, "pipe": _pair, "pipe2": _pair,
    "socketpair": _pair, "recvmsg": _recvmsg, "recvmmsg": _recvmsg,
    "sendmsg": _sendmsg, "sendmmsg": _sendmsg, "pidfd_getfd": _pidfd_getfd,
}
for _n in FD_RESULT:
    _HANDLERS.setdefault(_n, _open)
del _n
