/*
 * librocrtrace: the rocrtrace capture library (LD_PRELOAD).
 *
 * Writes the preload-log dialect (docs/preload-log.md): the lines
 * `strace -f -ttt -T -y -k` would print, with KFD/DRM ioctl structs decoded.
 *
 * Why one file of this size: it is one translation unit on purpose.  Every
 * function but the interposed entry points is static, so nothing of the
 * library's own can bind to, or be bound by, a symbol of the traced program
 * or of the libraries it loads (a preloaded library's globals are looked up
 * first), and `rocrtrace capture` builds it on the user's machine with one
 * cc call from the installed package.  Its sections: the log window and
 * record writer, the stack walker, the catalogue-driven struct decoders
 * (ioctl_table.h, generated), the fd and process bookkeeping (fork,
 * vfork, exec, exit snapshots), and the interposers.
 *
 * Rules this file lives by (what LD_PRELOAD tracers learned the hard way):
 *  - hooks never allocate or lock: records are formatted by hand into a stack
 *    buffer and written as ONE unit (< 4096 bytes): one reservation and copy
 *    into the log window, or one raw write() to an O_APPEND fd in the
 *    fallback, so concurrent threads never tear or merge lines; a record
 *    that does not fit goes out as numbered `#+` continuation records;
 *  - errno is saved right after the real call and restored before returning;
 *  - the library's own work runs under a __thread guard (initial-exec TLS);
 *  - internal calls use raw syscalls (rsys below): a call to close()/fcntl()/
 *    syscall() from here would bind to our own hooks, since a preloaded
 *    library interposes on itself;
 *  - the library holds no fd while the program runs, at any RLIMIT_NOFILE:
 *    the log is a MAP_SHARED window of the log file (see "the log window"),
 *    the fd that mapped it closed at once; exit snapshots find the open
 *    numbers with ppoll and read their paths by /proc/self/fd/N.  So every
 *    number is the program's: EMFILE comes where it would, stdio reopens as
 *    0 1 2, a sweep or a /proc/self/fd listing never meets the library.
 *    Short-lived fds are opened only where no other thread can see them
 *    (start, a fork child's adoption, a vfork child's own table), except a
 *    /proc/self/maps re-read when a stack frame falls in a module loaded
 *    after start (ROCRTRACE_STACK_DEPTH > 0 only).  If the window cannot be
 *    mapped, the library falls back to holding fds placed at or above the
 *    soft limit (the limit raised for the one F_DUPFD and put back), just
 *    below min(limit, 65536) without the right to raise it, and says which
 *    in a `# capture-fds` line; a program call aimed at one of those numbers
 *    (close, dup2 onto it, fcntl, fstat ...) first moves it, so the program
 *    sees what it would see without capture.  Moves are not program events.
 *
 * Decisions beyond docs/preload-log.md:
 *  - exec: `# exec PATH` is written before the real call (the call does not
 *    return on success).  If it fails, the execve line follows with its error.
 *    The new image re-initialises from the inherited LD_PRELOAD/ROCRTRACE_*
 *    environment and appends to the same PREFIX.PID file (same pid): a new
 *    `# pid=` header line (no second `# rocrtrace-log 1`), its `# map` lines and
 *    a new `# fd-snapshot start` block, which is the fd table after the kernel
 *    dropped the CLOEXEC fds.
 *  - children: fork() is logged in the parent as `fork() = CHILD`; the child
 *    (pthread_atfork child handler) writes its own PREFIX.CHILD.  A child made
 *    without atfork handlers (raw clone/clone3, _Fork) is recognised by its
 *    pid at its first hooked call and adopts the same way.  A child sharing
 *    the parent's memory (vfork, posix_spawn, CLONE_VM) must not touch the
 *    library's state: it writes its own PREFIX.CHILD record by record through
 *    a short-lived fd of its own.
 *  - open()/open64() are printed as `openat(AT_FDCWD, ...)`, what strace shows
 *    for them on x86_64; closefrom(N) as `close_range(N, 4294967295, 0)`, the
 *    syscall glibc issues for it.
 *  - exit: glibc's on_exit() gives the status for both `return` from main and
 *    exit(); _exit/_Exit are hooked as well.  Fatal signals whose disposition
 *    is the default get a handler that writes `# exit signal=NAME` and dies by
 *    the same signal with the default action; the program's own sigaction()
 *    and signal() calls are honoured exactly (and see the disposition they
 *    set, never ours).  SIGKILL and raw exit_group leave no `# exit`.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* The ioctl catalogue (generated from catalogue/ioctls.toml): per (type, nr)
 * an rt_ioc; for the ioctls the library decodes, an rt_decode listing the
 * fields it writes before and after the call, which the decoder below walks. */
struct rt_flag { unsigned long long bit; const char *name; };
struct rt_enum { unsigned n; const char *const *names; };
enum rt_show {
  RT_HEX,     /* 0x..., 0 for zero */
  RT_DEC,     /* unsigned decimal */
  RT_SDEC,    /* signed decimal (a 32-bit member) */
  RT_FD,      /* a decimal fd, decorated N<path> */
  RT_ENUM,    /* names[v], else hex */
  RT_FLAGS,   /* flag names joined by |, unknown bits in hex */
  RT_PTR,     /* a pointer to `count` elements, shown [e, ...] */
  RT_TAIL,    /* the struct's flexible array of `count` elements */
};
struct rt_case { unsigned tag; unsigned char show; const struct rt_flag *flags; const struct rt_enum *names; };
struct rt_field {
  const char *label;             /* 0: an array element shown bare */
  unsigned short off;
  unsigned char width, show;     /* width: 4 or 8 bytes */
  const struct rt_flag *flags;   /* RT_FLAGS */
  const struct rt_enum *names;   /* RT_ENUM */
  /* RT_PTR, RT_TAIL: the member holding the count, at most `max` elements */
  unsigned short count_off, max;
  unsigned char count_width, nelem;
  unsigned short elem_size;
  const struct rt_field *elem;   /* the element's members (one bare one for a scalar) */
  /* the show follows the 32-bit member at tag_off: a case per value, else `show` */
  unsigned short tag_off;
  unsigned char ncases;
  const struct rt_case *cases;
};
struct rt_decode {
  unsigned short fixed;          /* bytes read: up to the flexible array, else every decoded size */
  unsigned char nin, nout;
  const struct rt_field *in, *out;
  const struct rt_field *tail;   /* the flexible array: the size follows its count, any is taken */
  short out_if_off;              /* >= 0: the `=>` half only when the u32 there is out_if_val */
  unsigned out_if_val;
};
struct rt_ioc {
  const char *name;
  unsigned short size;           /* the newest header's */
  unsigned short old_sizes[2];   /* older headers' sizes a decoded ioctl is decoded at too */
  unsigned char nold;
  const struct rt_decode *dec;
};
#include "ioctl_table.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __attribute__((tls_model("initial-exec")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Raw system calls.  The library exports its own syscall() (raw clone3,
 * openat2, close ... issued through it are program events), so its internal
 * calls must not bind to that symbol: every `syscall(...)` below is rsys6. */
#if defined(__x86_64__)
#define RT_HOOK_SYSCALL 1
static long rsys6(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  if ((unsigned long)ret > -4096UL) { errno = (int)-ret; return -1; }
  return ret;
}
#elif defined(__aarch64__)
#define RT_HOOK_SYSCALL 1
static long rsys6(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
  if ((unsigned long)x0 > -4096UL) { errno = (int)-x0; return -1; }
  return x0;
}
#else
#define RT_HOOK_SYSCALL 0
static long rsys6(long n, long a, long b, long c, long d, long e, long f) {
  return syscall(n, a, b, c, d, e, f);
}
#endif
#define RSYS_(n, a, b, c, d, e, f, ...) \
  rsys6((long)(n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define syscall(...) RSYS_(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)

#define REC_SIZE 4096          /* one write: prefix, text, frames, newline: < 4096 */
#define PREFIX_ROOM 64
#define MAX_ATTRS 256
#define MAX_FRAMES 64

/* ------------------------------------------------------------------ state */

static __thread int t_busy TLS;      /* inside the library's own work */
static __thread int t_tid TLS;       /* cached gettid(); reset in the fork child */
static __thread int t_fdwork TLS;    /* this thread is using a library fd */
/* an fd's path for its decoration: whole (readlink of /proc/self/fd/N gives
 * at most PATH_MAX - 1 bytes), never cut.  Per thread, not on the stack (a
 * hook may run on a small signal stack); only used under t_busy, so a
 * signal handler's hook on the same thread (untraced) never overwrites it. */
static __thread char t_path[PATH_MAX + 1] TLS;

static int g_state;                  /* 0 untouched, 1 initialising, 2 on, 3 off */
/* the library's own fds: the log, /proc/self/fd (snapshots), /proc/self/maps */
enum { LF_LOG, LF_DIR, LF_MAPS, LF_N };
static int g_lf[LF_N] = {-1, -1, -1};
static int g_lf_inuse;               /* threads inside a use of a library fd */
static int g_pid;
static int g_depth;
static int g_exit_done;
static int g_adopting;
static unsigned long g_lost;
static char g_prefix[PATH_MAX];
static uintptr_t g_self_lo, g_self_hi;  /* our own text: frames there are skipped */
static long g_page;
static uint64_t g_lf_dev[LF_N], g_lf_ino[LF_N];   /* what our fds refer to */

typedef int (*ioctl_fn)(int, unsigned long, void *);
typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*int1_fn)(int);
typedef int (*int2_fn)(int, int);
typedef int (*int3_fn)(int, int, int);
typedef int (*fcntl_fn)(int, int, ...);
typedef int (*crange_fn)(unsigned, unsigned, int);
typedef void (*cfrom_fn)(int);
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef pid_t (*fork_fn)(void);
typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef void (*exit_fn)(int);
typedef ssize_t (*rw_fn)(int, void *, size_t);
typedef ssize_t (*prw_fn)(int, void *, size_t, off_t);
typedef ssize_t (*rwv_fn)(int, const struct iovec *, int);
typedef off_t (*lseek_fn)(int, off_t, int);
typedef int (*fstat_fn)(int, struct stat *);
typedef ssize_t (*msg_fn)(int, void *, int);
typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*setrlimit_fn)(int, const struct rlimit *);
typedef int (*prlimit_fn)(pid_t, int, const struct rlimit *, struct rlimit *);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);
typedef int (*join_fn)(pthread_t, void **);

static struct {
  ioctl_fn ioctl;
  open_fn open, open64;
  openat_fn openat, openat64;
  int1_fn close, dup;
  int2_fn dup2;
  int3_fn dup3;
  fcntl_fn fcntl, fcntl64;
  crange_fn close_range;
  cfrom_fn closefrom;
  mmap_fn mmap, mmap64;
  munmap_fn munmap;
  mremap_fn mremap;
  fork_fn fork;
  execve_fn execve, execvpe;
  execv_fn execv, execvp;
  fexecve_fn fexecve;
  exit_fn _exit, _Exit;
  rw_fn read, write;
  prw_fn pread64, pwrite64;
  rwv_fn readv, writev;
  lseek_fn lseek, lseek64;
  fstat_fn fstat, fstat64;
  msg_fn sendmsg, recvmsg;
  sigaction_fn sigaction;
  setrlimit_fn setrlimit, setrlimit64;
  prlimit_fn prlimit, prlimit64;
  spawn_fn posix_spawn, posix_spawnp;
  join_fn pthread_join;
} R;

#define RESOLVE(f) do { if (!R.f) R.f = dlsym(RTLD_NEXT, #f); } while (0)

static void resolve_all(void) {
  RESOLVE(ioctl); RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64);
  RESOLVE(close); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl);
  RESOLVE(fcntl64); RESOLVE(close_range); RESOLVE(closefrom); RESOLVE(mmap);
  RESOLVE(mmap64); RESOLVE(munmap); RESOLVE(mremap); RESOLVE(fork); RESOLVE(execve);
  RESOLVE(execvpe); RESOLVE(execv); RESOLVE(execvp); RESOLVE(fexecve); RESOLVE(_exit);
  RESOLVE(_Exit); RESOLVE(read); RESOLVE(write); RESOLVE(pread64); RESOLVE(pwrite64);
  RESOLVE(readv); RESOLVE(writev); RESOLVE(lseek); RESOLVE(lseek64); RESOLVE(fstat);
  RESOLVE(fstat64); RESOLVE(sendmsg); RESOLVE(recvmsg); RESOLVE(sigaction);
  RESOLVE(setrlimit); RESOLVE(setrlimit64); RESOLVE(prlimit); RESOLVE(prlimit64);
  RESOLVE(posix_spawn); RESOLVE(posix_spawnp); RESOLVE(pthread_join);
}

static void lib_init(void);
static int child_mode(void);

/* Tracing on?  0 no, 1 yes.  Initialises lazily: another library's
 * constructor may call us before our own constructor has run.  The hot
 * hooks (ioctl, mmap, HSA calls) use this: fork-like children adopt at once
 * (atfork handler; syscall(2) clone/clone3 and _Fork hooks), and a vfork
 * child issues none of these in practice. */
static inline int tracing(void) {
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (UNLIKELY(s == 0)) { lib_init(); s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE); }
  return s == 2 && !t_busy;
}

/* The fd-table, exec and exit hooks, which children on our memory (vfork,
 * posix_spawn) do call, pay one getpid(): 1 for our own process, 2 for a
 * child sharing our memory (see child_mode), 0 for off.  A child's cached
 * pid, tid and log fd are the parent's. */
static inline int tracing_own(void) {
  if (!tracing()) return 0;
  if (UNLIKELY(syscall(SYS_getpid) != __atomic_load_n(&g_pid, __ATOMIC_RELAXED))) return child_mode();
  return 1;
}

static inline int logfd(void) { return __atomic_load_n(&g_lf[LF_LOG], __ATOMIC_RELAXED); }
static inline int is_libfd(long fd) {
  if (fd < 0) return 0;
  for (int i = 0; i < LF_N; i++)
    if (fd == __atomic_load_n(&g_lf[i], __ATOMIC_RELAXED)) return 1;
  return 0;
}

static void lib_evict(long fd);
/* the program is about to use fd number `fd`: if it is ours, move ours away */
static inline void guard(long fd) { if (UNLIKELY(is_libfd(fd))) lib_evict(fd); }

static inline int tid(void) {
  if (UNLIKELY(!t_tid)) t_tid = (int)syscall(SYS_gettid);
  return t_tid;
}

/* -------------------------------------------------------------- formatter */

/* An output buffer.  Bounded buffers (meta lines) cut; a record's buffer has
 * `spill`, which writes what is there as a `#+` continuation record and makes
 * room, so a record is never cut. */
struct ob { char *p; int n, lim, cap, cut; void (*spill)(struct ob *); };

static void ob_raw(struct ob *b, const char *s, int len) {
  if (b->cut) return;
  while (b->n + len > b->lim) {
    if (!b->spill) { b->cut = 1; return; }
    int room = b->lim - b->n;
    if (room > 0) { memcpy(b->p + b->n, s, room); b->n += room; s += room; len -= room; }
    int before = b->n;
    b->spill(b);
    if (b->n >= before) { b->cut = 1; return; }  /* nothing written: give up, never loop */
  }
  memcpy(b->p + b->n, s, len);
  b->n += len;
}
static void ob_s(struct ob *b, const char *s) { ob_raw(b, s, (int)strlen(s)); }
static void ob_c(struct ob *b, char c) { ob_raw(b, &c, 1); }

static void ob_u(struct ob *b, unsigned long long v) {
  char t[24]; int i = 24;
  do { t[--i] = (char)('0' + v % 10); v /= 10; } while (v);
  ob_raw(b, t + i, 24 - i);
}
static void ob_d(struct ob *b, long long v) {
  if (v < 0) { ob_c(b, '-'); ob_u(b, 0ULL - (unsigned long long)v); } else ob_u(b, (unsigned long long)v);
}
static void ob_hexdigits(struct ob *b, unsigned long long v, int minw) {
  char t[20]; int i = 20;
  do { t[--i] = "0123456789abcdef"[v & 15]; v >>= 4; minw--; } while (v || minw > 0);
  ob_raw(b, t + i, 20 - i);
}
/* addresses, sizes, handles: hex, zero as `0` */
static void ob_x(struct ob *b, unsigned long long v) {
  if (!v) { ob_c(b, '0'); return; }
  ob_s(b, "0x"); ob_hexdigits(b, v, 1);
}
static void ob_ptr(struct ob *b, const void *p) {
  if (!p) ob_s(b, "NULL"); else ob_x(b, (uintptr_t)p);
}

/* flag names joined by '|', unknown bits as hex; `taken`: each entry is
 * matched against the bits earlier entries left (strace's table order),
 * else against the whole value */
static void ob_flagbits(struct ob *b, unsigned long long v, const struct rt_flag *t, int taken) {
  if (!v) { ob_c(b, '0'); return; }
  unsigned long long rest = v; int first = 1;
  for (; t->name; t++) {
    if (t->bit && ((taken ? rest : v) & t->bit) == t->bit) {
      if (!first) ob_c(b, '|');
      ob_s(b, t->name); rest &= ~t->bit; first = 0;
    }
  }
  if (rest) { if (!first) ob_c(b, '|'); ob_x(b, rest); }
}
static void ob_flags(struct ob *b, unsigned long long v, const struct rt_flag *t) {
  ob_flagbits(b, v, t, 0);
}

/* strace's escaping: C escapes, octal for control/non-ASCII bytes (minimal
 * digits unless a digit follows); `<` `>` too inside fd decorations. */
static void ob_esc(struct ob *b, const char *s, int len, int angle) {
  for (int i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '\\': ob_s(b, "\\\\"); continue;
      case '"': ob_s(b, "\\\""); continue;
      case '\n': ob_s(b, "\\n"); continue;
      case '\t': ob_s(b, "\\t"); continue;
      case '\r': ob_s(b, "\\r"); continue;
      case '\f': ob_s(b, "\\f"); continue;
      case '\v': ob_s(b, "\\v"); continue;
      default: break;
    }
    if (c < 0x20 || c >= 0x7f || (angle && (c == '<' || c == '>'))) {
      int next_digit = i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '7';
      char t[5]; int k = 0; t[k++] = '\\';
      if (next_digit || c >= 64) t[k++] = (char)('0' + (c >> 6));
      if (next_digit || c >= 8) t[k++] = (char)('0' + ((c >> 3) & 7));
      t[k++] = (char)('0' + (c & 7));
      ob_raw(b, t, k);
    } else {
      ob_c(b, (char)c);
    }
  }
}

/* a string argument as strace -s 256 prints it */
static void ob_str(struct ob *b, const char *s) {
  if (!s) { ob_s(b, "NULL"); return; }
  int len = (int)strnlen(s, 257);
  ob_c(b, '"'); ob_esc(b, s, len > 256 ? 256 : len, 0); ob_c(b, '"');
  if (len > 256) ob_s(b, "...");
}

static int fd_readlink(long fd, char *buf, int size) {
  char p[40]; struct ob o = {p, 0, 39, 40, 0, 0};
  ob_s(&o, "/proc/self/fd/"); ob_u(&o, (unsigned long long)fd); p[o.n] = 0;
  long n = syscall(SYS_readlinkat, AT_FDCWD, p, buf, size - 1);
  if (n < 0) return -1;
  buf[n] = 0;
  return (int)n;
}

/* readlink of /proc/self/fd/N costs several microseconds (most of a hooked
 * call), so paths are cached per fd number and revalidated by fstat: the
 * entry is used only while the fd still names the same (dev, inode).  That
 * stays right across closes and reuses the hooks never see (raw syscalls,
 * fclose, fds made inside ioctls).  Slots are seqlocked, so threads never
 * read a half-written path and never wait: a writer that loses the race
 * simply does not cache. */
#define FDC_N 4096
struct fdc { unsigned seq; int len; uint64_t dev, ino; char path[232]; };
static struct fdc g_fdc[FDC_N];

static int fd_path(long fd, char *buf, int size) {
  if (fd < 0 || fd >= FDC_N || size < (int)sizeof g_fdc[0].path) return fd_readlink(fd, buf, size);
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return -1;
  struct fdc *c = &g_fdc[fd];
  unsigned s1 = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
  if (s1 && !(s1 & 1) && c->dev == (uint64_t)st.st_dev && c->ino == (uint64_t)st.st_ino) {
    int len = c->len;
    if (len >= 0 && len < (int)sizeof c->path) {
      memcpy(buf, c->path, len);
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&c->seq, __ATOMIC_RELAXED) == s1) { buf[len] = 0; return len; }
    }
  }
  int n = fd_readlink(fd, buf, size);
  /* anon_inode files (eventfd, timerfd, signalfd, epoll, inotify, sync_file
   * ...) all share one inode: their names are never cached */
  if (n >= 0 && n < (int)sizeof c->path && !(s1 & 1) && !(n >= 11 && memcmp(buf, "anon_inode:", 11) == 0) &&
      __atomic_compare_exchange_n(&c->seq, &s1, s1 + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    c->dev = (uint64_t)st.st_dev; c->ino = (uint64_t)st.st_ino; c->len = n;
    memcpy(c->path, buf, n);
    __atomic_store_n(&c->seq, s1 + 2, __ATOMIC_RELEASE);
  }
  return n;
}

/* `N<path>` like strace -y; strace 5.19+ puts `(deleted)` after the bracket */
static void ob_fdpath(struct ob *b, long fd, const char *path, int plen) {
  ob_d(b, fd);
  if (plen < 0) return;
  static const char del[] = " (deleted)";
  int deleted = plen >= 10 && memcmp(path + plen - 10, del, 10) == 0;
  ob_c(b, '<'); ob_esc(b, path, deleted ? plen - 10 : plen, 1); ob_c(b, '>');
  if (deleted) ob_s(b, "(deleted)");
}
static void ob_fd(struct ob *b, long fd) {
  char *path = t_path; int n = -1;
  if (fd >= 0 && fd <= INT_MAX) n = fd_path(fd, path, sizeof t_path);
  ob_fdpath(b, fd, path, n);
}

static void ob_err(struct ob *b, int e) {
  const char *name = strerrorname_np(e), *desc = strerrordesc_np(e);
  ob_s(b, "-1 ");
  if (name) ob_s(b, name); else { ob_s(b, "errno "); ob_d(b, e); }
  if (desc) { ob_s(b, " ("); ob_s(b, desc); ob_c(b, ')'); }
}

static void ob_time(struct ob *b, const struct timespec *t) {
  ob_u(b, (unsigned long long)t->tv_sec); ob_c(b, '.');
  unsigned long us = (unsigned long)t->tv_nsec / 1000;
  char d[6]; for (int i = 5; i >= 0; i--) { d[i] = (char)('0' + us % 10); us /= 10; }
  ob_raw(b, d, 6);
}

/* ---------------------------------------------------------------- records */

struct rec {
  struct timespec rt, m0;
  struct ob b;
  int mode;      /* tracing()'s answer: 1 our log, 2 a child sharing our memory */
  int tid;
  int piece;     /* `#+` continuation records written so far */
  char buf[REC_SIZE];
};

static void rec_spill(struct ob *b);
static int child_logfd(void);
static int child_open(int *transient);
static void child_done(int fd, int transient);

static int frame_reserve(void) { return g_depth > 0 ? (g_depth > 12 ? 12 : g_depth) * 160 : 0; }

static void rec_begin(struct rec *r, int mode) {
  r->mode = mode; r->piece = 0;
  r->tid = mode == 2 ? (int)syscall(SYS_gettid) : tid();  /* a vfork child shares our TLS */
  if (mode == 2) { int tr, fd = child_open(&tr); child_done(fd, tr); }   /* a new file's start snapshot comes before the call */
  r->b.p = r->buf + PREFIX_ROOM;
  r->b.n = 0; r->b.cut = 0;
  r->b.cap = REC_SIZE - PREFIX_ROOM - 2;  /* + newline + prefix < 4096 */
  r->b.lim = r->b.cap - (mode == 1 ? frame_reserve() : 0);  /* frames go on the last piece */
  r->b.spill = rec_spill;
  clock_gettime(CLOCK_REALTIME, &r->rt);
  clock_gettime(CLOCK_MONOTONIC, &r->m0);
}

static void rec_args_done(struct rec *r) { ob_c(&r->b, ')'); }

static void rec_dur(struct rec *r) {
  struct timespec m1; clock_gettime(CLOCK_MONOTONIC, &m1);
  long long ns = (long long)(m1.tv_sec - r->m0.tv_sec) * 1000000000LL + (m1.tv_nsec - r->m0.tv_nsec);
  if (ns < 0) ns = 0;
  struct timespec d = {ns / 1000000000LL, ns % 1000000000LL};
  ob_s(&r->b, " <"); ob_time(&r->b, &d); ob_c(&r->b, '>');
}

static void log_write(const char *p, int len);
static void child_write(const char *p, int len);
static void add_frames(struct ob *b);

static void rec_write(struct rec *r, const char *p, int len) {
  if (r->mode == 2) child_write(p, len); else log_write(p, len);
}

/* the line's prefix: `TID   TIME ` for a whole record; `#+ TID K+ TID   TIME `
 * for the first continuation piece, `#+ TID K+ ` for the next ones and
 * `#+ TID K ` for the last (K counts from 1; `+` means more follows) */
static int rec_prefix(struct rec *r, char *pre, int last) {
  struct ob o = {pre, 0, PREFIX_ROOM, PREFIX_ROOM, 0, 0};
  if (r->piece || !last) {
    ob_s(&o, "#+ "); ob_u(&o, (unsigned)r->tid); ob_c(&o, ' ');
    ob_u(&o, (unsigned)r->piece + 1); if (!last) ob_c(&o, '+'); ob_c(&o, ' ');
  }
  if (!r->piece) {
    int w = o.n;
    ob_u(&o, (unsigned)r->tid);
    while (o.n - w < 5) ob_c(&o, ' ');
    ob_c(&o, ' ');
    ob_time(&o, &r->rt); ob_c(&o, ' ');
  }
  return o.n;
}

static void rec_out(struct rec *r, int len, int last) {
  char pre[PREFIX_ROOM];
  int pl = rec_prefix(r, pre, last);
  char *start = r->b.p - pl;
  memcpy(start, pre, pl);
  rec_write(r, start, pl + len);
}

/* The record does not fit: write what there is as a continuation piece.  The
 * piece never ends in a space (readers may strip it): trailing spaces move
 * to the next piece. */
static void rec_spill(struct ob *b) {
  struct rec *r = (struct rec *)((char *)b - offsetof(struct rec, b));
  int cut = b->n;
  while (cut > 0 && b->p[cut - 1] == ' ') cut--;
  if (cut == 0) cut = b->n;
  int carry = b->n - cut;
  b->p[cut] = '\n';
  rec_out(r, cut + 1, 0);
  r->piece++;
  memset(b->p, ' ', carry);
  b->n = carry;
}

static void rec_emit(struct rec *r) {
  r->b.spill = 0;  /* frames are never split from their line */
  if (g_depth > 0 && r->mode == 1) add_frames(&r->b);
  r->b.lim = r->b.cap + 1;
  r->b.cut = 0;
  ob_c(&r->b, '\n');
  rec_out(r, r->b.n, 1);
}

/* `= RESULT <DUR>` for int-returning calls */
static void rec_res_int(struct rec *r, long ret, int err, int is_fd) {
  rec_args_done(r);
  ob_s(&r->b, " = ");
  if (ret == -1) ob_err(&r->b, err);
  else if (is_fd) ob_fd(&r->b, ret);
  else ob_d(&r->b, ret);
  rec_dur(r);
}

/* -------------------------------------------------------- library fds */

#define HIGH_CAP 65536         /* above: the fd table would cost MBs per process and fork */

/* The soft RLIMIT_NOFILE as last seen (init, fork child, the program's
 * setrlimit/prlimit through libc or syscall(2)).  Our fds at or above it
 * cannot have been handed to the program, so only below it does a write
 * first check that the number still holds our file. */
static long g_nofile = 1024;

static long nofile_now(void) {
  struct rlimit rl;
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &rl) != 0) return 1024;
  return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (long)rl.rlim_cur;
}

/* A copy of `fd` at the lowest free number >= max(soft limit, lo): a number
 * open() and dup2() never hand the program.  The soft limit is raised for
 * the F_DUPFD only (and the hard one with it when we may).  If that cannot
 * be done, the copy goes just under min(limit, HIGH_CAP), which only a
 * program holding nearly that many fds reaches.  -1 if neither works. */
static int dup_high(int fd, long lo) {
  int save = errno;
  struct rlimit old, tmp;
  long cur = 1024;
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &old) == 0) {
    cur = old.rlim_cur == RLIM_INFINITY || old.rlim_cur > (rlim_t)INT_MAX ? INT_MAX : (long)old.rlim_cur;
    long base = cur > lo ? cur : lo;
    if (base <= HIGH_CAP) {
      tmp = old;
      tmp.rlim_cur = (rlim_t)base + 4 * LF_N;
      if (tmp.rlim_max != RLIM_INFINITY && tmp.rlim_max < tmp.rlim_cur) tmp.rlim_max = tmp.rlim_cur;
      if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &tmp, 0) == 0) {
        long h = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base);
        syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &old, 0);
        if (h >= 0) { errno = save; return (int)h; }
      }
    }
  }
  long t = (cur < HIGH_CAP ? cur : HIGH_CAP) - 4 * LF_N;
  if (t < lo) t = lo;
  if (t < 3) t = 3;
  long h = t < cur ? syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, t) : -1;
  errno = save;
  return (int)h;
}

/* a fresh library fd `fd` (transient, low): its high copy, the low one closed */
static int keep_high(int fd) {
  if (fd < 0) return fd;
  int h = dup_high(fd, 0);
  if (h < 0) return fd;
  syscall(SYS_close, fd);
  return h;
}

static inline int lf_use(int i) {
  t_fdwork++;
  __atomic_add_fetch(&g_lf_inuse, 1, __ATOMIC_ACQ_REL);
  return __atomic_load_n(&g_lf[i], __ATOMIC_ACQUIRE);
}
static inline void lf_done(void) {
  __atomic_sub_fetch(&g_lf_inuse, 1, __ATOMIC_ACQ_REL);
  t_fdwork--;
}

/* before closing a library fd that was just replaced: let uses that may
 * still hold the old number finish (bounded: a use interrupted by a signal
 * on this very thread is not waited for) */
static void lf_drain(void) {
  for (int k = 0; k < 100000 && __atomic_load_n(&g_lf_inuse, __ATOMIC_ACQUIRE) > t_fdwork; k++)
    syscall(SYS_sched_yield);
}

static int child_evict(long fd);
static void log_reopen(int stale);

/* Move every library fd in [first, last] to a number >= lo outside it.
 * Returns 0, or -1 when one of them could not be moved (it stays). */
static int lib_evict_range(unsigned long first, unsigned long last, long lo) {
  int save = errno, ret = 0;
  if (syscall(SYS_getpid) != __atomic_load_n(&g_pid, __ATOMIC_RELAXED)) {
    int m = child_mode();
    if (m != 1) {   /* a child on our memory: it must not touch our state */
      for (int i = 0; i < LF_N; i++) {
        int cur = __atomic_load_n(&g_lf[i], __ATOMIC_RELAXED);
        if (cur >= 0 && (unsigned long)cur >= first && (unsigned long)cur <= last) child_evict(cur);
      }
      errno = save;
      return 0;
    }
  }
  for (int i = 0; i < LF_N; i++) {
    int cur = __atomic_load_n(&g_lf[i], __ATOMIC_ACQUIRE);
    if (cur < 0 || (unsigned long)cur < first || (unsigned long)cur > last) continue;
    if (syscall(SYS_fcntl, cur, F_GETFD) < 0 && errno == EBADF) {
      /* already closed behind our back (a raw syscall): the number is free */
      if (i == LF_LOG) log_reopen(cur);
      else __atomic_compare_exchange_n(&g_lf[i], &cur, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
      continue;
    }
    int h = dup_high(cur, lo);
    if (h < 0 || ((unsigned long)h >= first && (unsigned long)h <= last)) {
      if (h >= 0) syscall(SYS_close, h);
      ret = -1;
      continue;
    }
    if (!__atomic_compare_exchange_n(&g_lf[i], &cur, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      syscall(SYS_close, h);   /* another thread moved it meanwhile */
      continue;
    }
    lf_drain();
    syscall(SYS_close, cur);
  }
  errno = save;
  return ret;
}

static void lib_evict(long fd) { if (fd >= 0) lib_evict_range((unsigned long)fd, (unsigned long)fd, 0); }

/* ------------------------------------------------------------- log file */

static int log_path(char *path, int size, int pid) {
  struct ob o = {path, 0, size - 1, size, 0, 0};
  ob_s(&o, g_prefix); ob_c(&o, '.'); ob_u(&o, (unsigned)pid);
  if (o.cut) return -1;
  path[o.n] = 0;
  return 0;
}

/* Create PREFIX.PID, or open the one there is, never through a symlink
 * (O_NOFOLLOW) and only if it is a plain file of ours with one link: the
 * prefix's directory may be shared (/tmp).  *existed says which. */
static int open_log_file(int pid, int acc, int *existed) {
  char path[PATH_MAX + 24];
  if (log_path(path, sizeof path, pid)) return -1;
  int base = acc | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  *existed = 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, base | O_CREAT | O_EXCL, 0644);
  if (fd >= 0 || errno != EEXIST) return fd;
  fd = (int)syscall(SYS_openat, AT_FDCWD, path, base | O_NONBLOCK);
  if (fd < 0) return -1;   /* ELOOP: a symlink sits at the name */
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      st.st_uid != (uid_t)syscall(SYS_geteuid)) {
    syscall(SYS_close, fd);
    errno = EPERM;
    return -1;
  }
  syscall(SYS_fcntl, fd, F_SETFL, O_APPEND);  /* drop O_NONBLOCK (it guarded a FIFO open) */
  *existed = 1;
  return fd;
}

static void note_identity(int i, int fd) {
  struct stat st;
  if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0) { g_lf_dev[i] = st.st_dev; g_lf_ino[i] = st.st_ino; }
}

/* A raw close (inline syscall, no hook) can free one of our numbers, and
 * the program can then put its own file there if the number is below its
 * limit: a use first checks the number still holds what we opened. */
static int lf_is_ours(int i, int fd) {
  struct stat st;
  return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == g_lf_dev[i] && st.st_ino == g_lf_ino[i];
}

/* our log at `fd` (RDWR: init reads the tail), moved high */
static int open_log_fd(int *existed) {
  int fd = open_log_file(g_pid, O_RDWR, existed);
  if (fd < 0) return -1;
  note_identity(LF_LOG, fd);
  return keep_high(fd);
}

/* our log fd is gone (a raw close) or its number is now someone else's file */
static void log_reopen(int stale) {
  int existed;
  int fd = open_log_fd(&existed);
  if (fd < 0) return;
  int expect = stale;
  if (!__atomic_compare_exchange_n(&g_lf[LF_LOG], &expect, fd, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    syscall(SYS_close, fd);  /* another thread won */
}

/* ---- the log window: the log written with no fd held
 *
 * The log file is mapped MAP_SHARED once (at start, or in a fork child),
 * and the fd that mapped it is closed at once: while the program runs the
 * library holds no fd at all, at any RLIMIT_NOFILE, so every number is the
 * program's (EMFILE comes where it would, a loop over every number or a
 * /proc/self/fd listing never meets the library).  A record reserves its
 * bytes with one atomic add on the file offset and is copied into the
 * mapping (process_vm_writev, so that a full disk or a log truncated from
 * outside costs the record, never a SIGBUS in the program); records never
 * tear or interleave, as with one O_APPEND write each.  The file grows by
 * truncate(2) on its path in GROW_CHUNK steps (one thread at a time, after
 * checking the name is still our file: same device and inode, no symlink),
 * and at exit and before an exec it is cut to the bytes written, once no
 * thread is inside a write.  A grown part is filled with newlines first,
 * so a process killed outright (SIGKILL) leaves up to GROW_CHUNK empty
 * lines at the end, which readers skip and `rocrtrace capture` removes.  If the window cannot be mapped (a file system
 * without shared mappings, a tight RLIMIT_AS), the library falls back to a
 * log fd placed as the section "library fds" says and says so in the log
 * (`# capture-fds ...`). */
#define GROW_CHUNK (256 * 1024)
static char *g_win;                  /* the mapping; 0: no window (fd mode) */
static uint64_t g_wbase, g_wlen;     /* file offset of its first byte, its length */
static uint64_t g_off;               /* next free file offset */
static uint64_t g_fsize;             /* the file's length as we set it */
static int g_wclosed = 1;            /* exit or exec under way: no more copies */
static int g_winflight;              /* threads between reserving and copying */
static int g_grow;                   /* a thread is growing the file */
static __thread int t_growing TLS;
static __thread int t_winw TLS;      /* this thread's copies under way (a signal handler's exit) */
static __thread int t_sealer TLS;    /* this thread sealed the window: its last lines still go in */
/* the copy this thread has reserved and not finished: a fatal signal's
 * handler on the same thread finishes it (same bytes, same place) before
 * the process dies, so no hole is left before the exit lines */
static __thread const char *t_pend_p TLS;
static __thread uint64_t t_pend_off TLS;
static __thread int t_pend_len TLS;
static char g_lpath[PATH_MAX + 24];
static uint64_t g_ldev, g_lino;
static int g_pvw = 1;                /* process_vm_writev usable */
static uint64_t g_dropped;           /* window bytes whose pages were let go */
static int g_wabandoned;             /* the program unmapped or mapped over it */
#define DROP_STEP (4ULL << 20)

static int win_ours(void) {
  struct stat st;
  return syscall(SYS_newfstatat, AT_FDCWD, g_lpath, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode) && (uint64_t)st.st_dev == g_ldev && (uint64_t)st.st_ino == g_lino;
}

/* map the log `fd` (its content ends at `end`) and start writing at `end` */
static int win_map(int fd, uint64_t end) {
  static const uint64_t sizes[] = {16ULL << 30, 1ULL << 30, 64ULL << 20};
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return -1;
  if (syscall(SYS_ftruncate, fd, (long)end) != 0) return -1;
  uint64_t base = end & ~((uint64_t)g_page - 1);
  for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    long p = syscall(SYS_mmap, 0, (long)sizes[i], PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, (long)base);
    if (p == -1) continue;
    g_win = (char *)p; g_wbase = base; g_wlen = sizes[i];
    g_off = end; g_fsize = end; g_ldev = st.st_dev; g_lino = st.st_ino;
    __atomic_store_n(&g_wclosed, 0, __ATOMIC_SEQ_CST);
    return 0;
  }
  return -1;
}

static void win_unmap(void) {
  if (g_win) syscall(SYS_munmap, (long)g_win, (long)g_wlen);
  g_win = 0; g_wlen = 0; g_dropped = 0; g_wabandoned = 0;
  __atomic_store_n(&g_wclosed, 1, __ATOMIC_SEQ_CST);
}

static void win_finish(void);
static void win_seal(void);
static int win_write(const char *p, int len);
/* The program unmaps, or maps over with MAP_FIXED, part of the window (it
 * has no business there, but a blind munmap of a range happens): never copy
 * into what may become its memory.  The records that follow are lost and
 * counted. */
static void win_abandon_if(uintptr_t lo, uintptr_t len) {
  uintptr_t w = (uintptr_t)__atomic_load_n(&g_win, __ATOMIC_ACQUIRE);
  if (!w || lo >= w + g_wlen || lo + len <= w) return;
  if (syscall(SYS_getpid) != __atomic_load_n(&g_pid, __ATOMIC_RELAXED)) {
    /* a child on our memory (vfork) unmapping it unmaps it for us too: stop
     * copying, silently (its record cannot go into our log) */
    __atomic_store_n(&g_wabandoned, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&g_wclosed, 1, __ATOMIC_SEQ_CST);
    return;
  }
  static int abandoning;
  if (__atomic_exchange_n(&abandoning, 1, __ATOMIC_ACQ_REL)) return;
  static const char note[] = "# capture-window-lost the program unmapped or mapped over the log's "
                             "mapping: no record after this line\n";
  win_seal();
  win_write(note, sizeof note - 1);
  win_finish();   /* the file ends after the note; nothing more is copied */
  __atomic_store_n(&g_wabandoned, 1, __ATOMIC_SEQ_CST);   /* not even the exit lines */
}

/* A grown part is filled with newlines before any record goes there: a
 * writer killed outright (SIGKILL: nothing cuts the file) leaves empty
 * lines after its last record, which readers skip, never NUL bytes. */
static const char g_nl[4096] = {[0 ... 4095] = '\n'};
static void win_fill(uint64_t from, uint64_t to) {
  char *dst = g_win + (from - g_wbase);
  uint64_t left = to - from;
  while (left > 0) {
    struct iovec l[64], r;
    int k = 0;
    uint64_t batch = 0;
    while (k < 64 && batch < left) {
      uint64_t n = left - batch < sizeof g_nl ? left - batch : sizeof g_nl;
      l[k].iov_base = (void *)g_nl; l[k].iov_len = n; k++; batch += n;
    }
    r.iov_base = dst; r.iov_len = batch;
    if (__atomic_load_n(&g_pvw, __ATOMIC_RELAXED)) {
      long w = syscall(SYS_process_vm_writev, g_pid, l, k, &r, 1, 0);
      if (w != (long)batch) return;   /* a full disk: the records fail the same way */
    } else {
      memset(dst, '\n', batch);
    }
    dst += batch; left -= batch;
  }
}

/* the file must reach `need` bytes: one thread grows it, others wait for it */
static int win_grow(uint64_t need) {
  for (long k = 0; k < 2000000; k++) {
    if (__atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE) >= need) return 0;
    if (t_growing) return -1;   /* a signal handler on the growing thread */
    if (!__atomic_exchange_n(&g_grow, 1, __ATOMIC_ACQUIRE)) {
      t_growing = 1;
      int ok = 1;
      uint64_t have = __atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE);
      if (have < need) {
        uint64_t want = (need + GROW_CHUNK - 1) / GROW_CHUNK * GROW_CHUNK;
        if (want > g_wbase + g_wlen) want = g_wbase + g_wlen;
        ok = win_ours() && syscall(SYS_truncate, g_lpath, (long)want) == 0;
        if (ok) {
          int save = errno;
          win_fill(have, want);
          errno = save;
          __atomic_store_n(&g_fsize, want, __ATOMIC_RELEASE);
        }
        /* written pages stay in the page cache (and reach the file), but
         * need not stay mapped: let go of all but the last DROP_STEP, so
         * the program's resident size does not grow with the log */
        if (ok && want > g_dropped + 2 * DROP_STEP) {
          uint64_t upto = (want - DROP_STEP) & ~((uint64_t)g_page - 1);
          if (upto > g_wbase && syscall(SYS_madvise, (long)(g_win + (g_dropped > g_wbase ? g_dropped - g_wbase : 0)),
                                        (long)(upto - (g_dropped > g_wbase ? g_dropped : g_wbase)), MADV_DONTNEED) == 0)
            g_dropped = upto;
        }
      }
      t_growing = 0;
      __atomic_store_n(&g_grow, 0, __ATOMIC_RELEASE);
      if (!ok) return -1;
    } else {
      syscall(SYS_sched_yield);
    }
  }
  return -1;
}

static int win_copy(uint64_t off, const char *p, int len) {
  char *dst = g_win + (off - g_wbase);
  if (__atomic_load_n(&g_pvw, __ATOMIC_RELAXED)) {
    struct iovec l = {(void *)p, (size_t)len}, r = {dst, (size_t)len};
    long n = syscall(SYS_process_vm_writev, g_pid, &l, 1, &r, 1, 0);
    if (n == len) return 0;
    if (!(n < 0 && (errno == ENOSYS || errno == EPERM))) return -1;
    __atomic_store_n(&g_pvw, 0, __ATOMIC_RELAXED);
  }
  memcpy(dst, p, len);
  return 0;
}

/* 0 written, -1 lost; 1: no window (write through the fd) */
static int win_write(const char *p, int len) {
  if (!g_win) return 1;
  int save = errno, ret = -1;
  t_winw++;
  __atomic_add_fetch(&g_winflight, 1, __ATOMIC_SEQ_CST);
  if ((!__atomic_load_n(&g_wclosed, __ATOMIC_SEQ_CST) || t_sealer) &&
      !__atomic_load_n(&g_wabandoned, __ATOMIC_SEQ_CST)) {
    uint64_t off = __atomic_fetch_add(&g_off, (uint64_t)len, __ATOMIC_SEQ_CST);
    int outer = t_winw == 1;
    if (outer) { t_pend_p = p; t_pend_off = off; __atomic_signal_fence(__ATOMIC_SEQ_CST); t_pend_len = len; }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (off + len <= g_wbase + g_wlen &&
        (off + len <= __atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE) || win_grow(off + len) == 0))
      ret = win_copy(off, p, len);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (outer) t_pend_len = 0;
  }
  __atomic_sub_fetch(&g_winflight, 1, __ATOMIC_SEQ_CST);
  t_winw--;
  errno = save;
  return ret;
}

/* exit or exec begins: other threads' records stop here (they would land
 * after the `# exit` or `# exec` line); this thread's last lines still go
 * in, then win_finish cuts the file after them */
static void win_seal(void) {
  if (!g_win) return;
  if (t_winw > 0 && t_pend_len > 0 && !t_growing && !__atomic_load_n(&g_wabandoned, __ATOMIC_SEQ_CST) &&
      t_pend_off + t_pend_len <= __atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE))
    win_copy(t_pend_off, t_pend_p, t_pend_len);   /* the copy this handler interrupted */
  __atomic_store_n(&g_wclosed, 1, __ATOMIC_SEQ_CST);
  for (long k = 0; k < 200000 && __atomic_load_n(&g_winflight, __ATOMIC_SEQ_CST) > t_winw; k++)
    syscall(SYS_sched_yield);
  t_sealer = 1;
}

/* exit or exec: no more copies; once no thread is inside one, the file is
 * cut to what was written (a thread that never leaves, or a signal handler
 * on a writing thread, leaves the empty-line tail instead) */
static void win_finish(void) {
  if (!g_win) return;
  int save = errno;
  if (!t_sealer && t_winw > 0 && t_pend_len > 0 && !t_growing && !__atomic_load_n(&g_wabandoned, __ATOMIC_SEQ_CST) &&
      t_pend_off + t_pend_len <= __atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE))
    win_copy(t_pend_off, t_pend_p, t_pend_len);   /* the copy this handler interrupted */
  __atomic_store_n(&g_wclosed, 1, __ATOMIC_SEQ_CST);
  t_sealer = 0;
  long k = 0;
  while (__atomic_load_n(&g_winflight, __ATOMIC_SEQ_CST) > t_winw && k++ < 200000) syscall(SYS_sched_yield);
  if (__atomic_load_n(&g_winflight, __ATOMIC_SEQ_CST) == t_winw && !t_growing) {
    uint64_t end = __atomic_load_n(&g_off, __ATOMIC_SEQ_CST), have = __atomic_load_n(&g_fsize, __ATOMIC_ACQUIRE);
    if (end > have) end = have;
    if (win_ours() && syscall(SYS_truncate, g_lpath, (long)end) == 0) {
      __atomic_store_n(&g_fsize, end, __ATOMIC_RELEASE);
      __atomic_store_n(&g_off, end, __ATOMIC_SEQ_CST);
    }
  }
  errno = save;
}

/* an exec failed: go on writing (unless the window was abandoned) */
static void win_resume(void) {
  if (g_win && !__atomic_load_n(&g_wabandoned, __ATOMIC_ACQUIRE)) __atomic_store_n(&g_wclosed, 0, __ATOMIC_SEQ_CST);
}

/* where the content of an existing log ends: after the newline of its last
 * line, before the empty lines (or NUL bytes) of a growth step its writer
 * did not cut (read backwards from the end) */
static uint64_t content_end(int fd) {
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) != 0) return 0;
  uint64_t size = (uint64_t)st.st_size, end = size;
  char buf[4096];
  while (end > 0) {
    long want = end < sizeof buf ? (long)end : (long)sizeof buf;
    long n = syscall(SYS_pread64, fd, buf, want, (long)(end - want));
    if (n != want) return size;
    long i = n;
    while (i > 0 && (buf[i - 1] == 0 || buf[i - 1] == '\n')) i--;
    end -= (uint64_t)(n - i);
    if (i > 0) break;
  }
  char c = 0;   /* the last line's own newline */
  if (end > 0 && end < size && syscall(SYS_pread64, fd, &c, 1, (long)end) == 1 && c == '\n') end++;
  return end;
}

static void log_write(const char *p, int len) {
  /* a copy of us made without atfork handlers (raw clone, _Fork) must not
   * write into its parent's window before it has its own */
  if (g_win && UNLIKELY(syscall(SYS_getpid) != __atomic_load_n(&g_pid, __ATOMIC_RELAXED))) {
    int m = child_mode();
    if (m == 2) { child_write(p, len); return; }
    if (m != 1) return;
  }
  int w = win_write(p, len);
  if (w == 0) return;
  if (w < 0) { __atomic_add_fetch(&g_lost, 1, __ATOMIC_RELAXED); return; }
  for (int tries = 0; tries < 3; tries++) {
    int fd = lf_use(LF_LOG);
    if (fd < 0) { lf_done(); break; }
    if (UNLIKELY(fd < __atomic_load_n(&g_nofile, __ATOMIC_RELAXED)) && !lf_is_ours(LF_LOG, fd)) {
      lf_done();
      log_reopen(fd);
      continue;
    }
    long n = syscall(SYS_write, fd, p, len);
    int e = errno;
    lf_done();
    if (n == len) return;
    if (n < 0 && e == EINTR) continue;
    if (n < 0 && e == EBADF) { log_reopen(fd); continue; }
    break;
  }
  __atomic_add_fetch(&g_lost, 1, __ATOMIC_RELAXED);
}

static void meta_line(struct ob *b) { ob_c(b, '\n'); log_write(b->p, b->n); }

/* ------------------------------------------------------------ mappings */

#define MAXMAPS 2048
#define POOL 262144
struct mapent { uintptr_t lo, hi, off, base, blen; int path; char perms[5]; };
static struct mapent g_maps[MAXMAPS];
static int g_nmaps;            /* published with release */
static char g_pool[POOL];
static int g_pool_used;
static int g_maps_lock;

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
static const char *parse_hex(const char *s, uintptr_t *v) {
  uintptr_t x = 0; int d;
  while ((d = hexval(*s)) >= 0) { x = (x << 4) | (uintptr_t)d; s++; }
  *v = x; return s;
}

static int safe_copy(void *dst, const void *src, size_t len);
static int g_may_open;   /* init or fork child: no other thread can see a transient fd */

/* NT_GNU_BUILD_ID from the notes of a list of phdrs: `rd(off, buf, len)`
 * reads the ELF file at a file offset */
typedef int (*elf_rd)(void *ctx, uint64_t off, void *buf, long len);

static int build_id_from(elf_rd rd, void *ctx, char *hex, int hexsize) {
  Elf64_Ehdr eh;
  if (rd(ctx, 0, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
    return -1;
  for (int i = 0; i < eh.e_phnum && i < 128; i++) {
    Elf64_Phdr ph;
    if (rd(ctx, eh.e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph)) break;
    if (ph.p_type != PT_NOTE) continue;
    unsigned char note[2048];
    long len = ph.p_filesz < sizeof note ? (long)ph.p_filesz : (long)sizeof note;
    if (rd(ctx, ph.p_offset, note, len)) continue;
    long pos = 0;
    while (len > 0 && pos + 12 <= len) {
      uint32_t namesz, descsz, type;
      memcpy(&namesz, note + pos, 4); memcpy(&descsz, note + pos + 4, 4); memcpy(&type, note + pos + 8, 4);
      long name = pos + 12, desc = name + ((namesz + 3) & ~3u);
      long next = desc + ((descsz + 3) & ~3u);
      if (next > len) break;
      if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(note + name, "GNU", 4) == 0 &&
          (int)descsz * 2 < hexsize) {
        for (uint32_t k = 0; k < descsz; k++) {
          hex[2 * k] = "0123456789abcdef"[note[desc + k] >> 4];
          hex[2 * k + 1] = "0123456789abcdef"[note[desc + k] & 15];
        }
        hex[2 * descsz] = 0;
        return 0;
      }
      pos = next;
    }
  }
  return -1;
}

struct memctx { uintptr_t base, len; };
static int rd_mem(void *ctx, uint64_t off, void *buf, long len) {
  struct memctx *m = ctx;
  if (off + (uint64_t)len > m->len) return -1;
  return safe_copy(buf, (const void *)(m->base + off), (size_t)len);
}
static int rd_file(void *ctx, uint64_t off, void *buf, long len) {
  return syscall(SYS_pread64, *(int *)ctx, buf, len, off) == len ? 0 : -1;
}

/* The build-id of a mapped file.  Read from memory, from the mapping of its
 * first page (the notes follow the headers), so no fd is opened while the
 * program runs; the file itself is read only while no other thread can see
 * the transient fd (init, fork child). */
static int build_id(const char *path, uintptr_t base, uintptr_t blen, char *hex, int hexsize) {
  if (base) {
    struct memctx m = {base, blen};
    if (build_id_from(rd_mem, &m, hex, hexsize) == 0) return 0;
  }
  if (!g_may_open) return -1;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int found = build_id_from(rd_file, &fd, hex, hexsize);
  syscall(SYS_close, fd);
  return found;
}

static char g_map_line[4 * PATH_MAX + 256];   /* under g_maps_lock, or in a one-thread child */
static void print_map(const struct mapent *m, const char *perms) {
  char *buf = g_map_line; struct ob b = {buf, 0, sizeof g_map_line - 1, sizeof g_map_line, 0, 0};
  ob_s(&b, "# map "); ob_hexdigits(&b, m->lo, 1); ob_c(&b, '-'); ob_hexdigits(&b, m->hi, 1);
  ob_c(&b, ' '); ob_s(&b, perms); ob_c(&b, ' '); ob_hexdigits(&b, m->off, 8); ob_c(&b, ' ');
  const char *path = g_pool + m->path;
  ob_esc(&b, path, (int)strlen(path), 0);
  char hex[128];
  if (build_id(path, m->base, m->blen, hex, sizeof hex) == 0) { ob_s(&b, " build-id="); ob_s(&b, hex); }
  b.cut = 0; b.lim = b.cap;
  meta_line(&b);
}

static int map_known(uintptr_t lo, uintptr_t hi, uintptr_t off, const char *path) {
  int n = __atomic_load_n(&g_nmaps, __ATOMIC_ACQUIRE);
  for (int i = n - 1; i >= 0; i--)
    if (g_maps[i].lo == lo && g_maps[i].hi == hi && g_maps[i].off == off &&
        strcmp(g_pool + g_maps[i].path, path) == 0)
      return 1;
  return 0;
}

/* Read /proc/self/maps and add (and print) executable file mappings not seen
 * before.  Entries are only appended, newest last, so lookups search backwards
 * and never need a lock; writers serialise on a try-lock. */
static void maps_scan(int print) {
  if (__atomic_exchange_n(&g_maps_lock, 1, __ATOMIC_ACQUIRE)) return;
  /* the kept /proc/self/maps fd, re-read from the start; a transient one only
   * when no other thread can see it */
  int own = 0;
  int fd = lf_use(LF_MAPS);
  if (fd >= 0 && (!lf_is_ours(LF_MAPS, fd) || syscall(SYS_lseek, fd, 0, SEEK_SET) != 0)) fd = -1;
  if (fd < 0 && (g_may_open || g_win)) {   /* window mode: a frame in a new module (see docs) */
    fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    own = 1;
  }
  if (fd >= 0) {
    char buf[8192]; int have = 0;
    char bpath[512]; uintptr_t blo = 0, bhi = 0;   /* the last file mapping at offset 0 */
    bpath[0] = 0;
    for (;;) {
      long n = syscall(SYS_read, fd, buf + have, sizeof buf - 1 - have);
      if (n <= 0 && have == 0) break;
      if (n > 0) have += (int)n;
      buf[have] = 0;
      char *nl = memchr(buf, '\n', have);
      if (!nl) {
        if (n > 0 && have < (int)sizeof buf - 1) continue;
        nl = buf + have;  /* overlong or last line without newline */
      }
      *nl = 0;
      /* lo-hi perms off dev inode path */
      uintptr_t lo, hi, off; const char *s = buf;
      s = parse_hex(s, &lo); if (*s == '-') s++;
      s = parse_hex(s, &hi); while (*s == ' ') s++;
      char perms[5] = {0}; for (int i = 0; i < 4 && *s && *s != ' '; i++) perms[i] = *s++;
      while (*s == ' ') s++;
      s = parse_hex(s, &off);
      for (int f = 0; f < 2; f++) { while (*s == ' ') s++; while (*s && *s != ' ') s++; }
      while (*s == ' ') s++;
      int plen = (int)strlen(s);
      if (*s == '/' && off == 0 && perms[0] == 'r' && plen < (int)sizeof bpath) {
        memcpy(bpath, s, plen + 1); blo = lo; bhi = hi;
      }
      if (perms[2] == 'x' && *s == '/' && !map_known(lo, hi, off, s)) {
        int len = plen + 1, n0 = g_nmaps;
        if (n0 < MAXMAPS && g_pool_used + len <= POOL) {
          memcpy(g_pool + g_pool_used, s, len);
          int same = bpath[0] && strcmp(bpath, s) == 0;
          g_maps[n0] = (struct mapent){lo, hi, off, same ? blo : 0, same ? bhi - blo : 0, g_pool_used,
                                       {perms[0], perms[1], perms[2], perms[3], 0}};
          g_pool_used += len;
          __atomic_store_n(&g_nmaps, n0 + 1, __ATOMIC_RELEASE);
          if (print) print_map(&g_maps[n0], perms);
        }
      }
      int used = (int)(nl - buf) + (nl < buf + have ? 1 : 0);
      memmove(buf, buf + used, have - used);
      have -= used;
      if (n <= 0 && have == 0) break;
    }
    if (own) syscall(SYS_close, fd);
  }
  lf_done();
  __atomic_store_n(&g_maps_lock, 0, __ATOMIC_RELEASE);
}

static const struct mapent *map_find(uintptr_t pc) {
  int n = __atomic_load_n(&g_nmaps, __ATOMIC_ACQUIRE);
  for (int i = n - 1; i >= 0; i--)
    if (pc >= g_maps[i].lo && pc < g_maps[i].hi) return &g_maps[i];
  return 0;
}

/* ` > MODULE() [0xFILEOFF]` frames, from backtrace() (pre-warmed at init:
 * its first call dlopens libgcc_s) */
static void add_frames(struct ob *b) {
  void *pcs[MAX_FRAMES];
  int want = g_depth, n = backtrace(pcs, MAX_FRAMES);
  int rescanned = 0;
  b->lim = b->cap; b->cut = 0;
  for (int i = 0; i < n && want > 0; i++) {
    uintptr_t pc = (uintptr_t)pcs[i];
    if (pc >= g_self_lo && pc < g_self_hi) continue;
    const struct mapent *m = map_find(pc);
    if (!m && !rescanned) { rescanned = 1; maps_scan(1); m = map_find(pc); }
    int save = b->n;
    ob_s(b, "\n > ");
    if (m) {
      const char *path = g_pool + m->path;
      ob_esc(b, path, (int)strlen(path), 0);
      ob_s(b, "() [0x"); ob_hexdigits(b, pc - m->lo + m->off, 1); ob_c(b, ']');
    } else {
      ob_s(b, "unexpected_backtracing_error [0x"); ob_hexdigits(b, pc, 1); ob_c(b, ']');
    }
    if (b->cut) { b->n = save; b->cut = 0; break; }
    want--;
  }
}

static int self_range_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size; uintptr_t me = (uintptr_t)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (me >= lo && me < hi) { g_self_lo = lo; g_self_hi = hi; return 1; }
  }
  return 0;
}

/* ------------------------------------------------------------ fd snapshot */

struct ldirent { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; };

/* a metadata line to our log (out < 0) or straight to fd `out` */
static void meta_to(int out, struct ob *b) {
  ob_c(b, '\n');
  if (out < 0) log_write(b->p, b->n);
  else syscall(SYS_write, out, b->p, b->n);
}

/* `# fd N PATH` for every open fd but the library's own.  The kept
 * /proc/self/fd fd is re-read from the start; a transient one is opened only
 * when no other thread can see it (a child writing its own file, init). */
/* whole paths: a `# fd` line is one write of up to 4 escaped bytes per path
 * byte, built in a static buffer (a snapshot may run on a small signal
 * stack); a second snapshot at the same moment (a vfork child's exit while
 * the parent exits) uses a stack line and marks a cut path with `...` */
static char g_snap_line[4 * PATH_MAX + 64];
static char g_snap_path[PATH_MAX + 1];
static int g_snap_busy;

static void snap_line(struct ob *b, long fd, int out, char *path, int psize, int lsize) {
  int plen = fd_path(fd, path, psize);
  b->n = 0; b->cut = 0; b->lim = lsize - 1;
  ob_s(b, "# fd "); ob_d(b, fd); ob_c(b, ' ');
  b->lim = lsize - 5;
  if (plen >= 0) ob_esc(b, path, plen, 1);
  if (b->cut || plen >= psize - 1) { b->cut = 0; b->lim = lsize - 1; ob_s(b, "..."); }
  b->cut = 0; b->lim = lsize - 1;
  meta_to(out, b);
}

static void fd_snapshot(const char *title, int out) {
  char small[600], spath[512];
  int mine = !__atomic_exchange_n(&g_snap_busy, 1, __ATOMIC_ACQUIRE);
  char *line = mine ? g_snap_line : small, *path = mine ? g_snap_path : spath;
  int lsize = mine ? (int)sizeof g_snap_line : (int)sizeof small;
  int psize = mine ? (int)sizeof g_snap_path : (int)sizeof spath;
  struct ob b = {line, 0, lsize - 1, lsize, 0, 0};
  ob_s(&b, title); meta_to(out, &b);
  int own = 0;
  int dfd = out < 0 ? lf_use(LF_DIR) : (t_fdwork++, -1);
  if (dfd >= 0 && (!lf_is_ours(LF_DIR, dfd) || syscall(SYS_lseek, dfd, 0, SEEK_SET) != 0)) dfd = -1;
  if (dfd < 0 && (out >= 0 || g_may_open)) {
    dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    own = 1;
  }
  if (dfd < 0 && out < 0) {
    /* no fd to list /proc/self/fd with (exit, other threads running): ask
     * the kernel which numbers are open, 256 at a time (ppoll answers
     * POLLNVAL for a closed one), no fd opened */
    long limit = nofile_now();
    if (limit > (1L << 20)) limit = 1L << 20;
    struct pollfd pf[256];
    struct timespec zero = {0, 0};
    for (long base = 0; base < limit;) {
      int n = limit - base < 256 ? (int)(limit - base) : 256;
      for (int i = 0; i < n; i++) { pf[i].fd = (int)(base + i); pf[i].events = 0; pf[i].revents = 0; }
      if (syscall(SYS_ppoll, pf, n, &zero, 0, 8) < 0) break;
      for (int i = 0; i < n; i++)
        if (!(pf[i].revents & POLLNVAL) && !is_libfd(base + i)) snap_line(&b, base + i, out, path, psize, lsize);
      base += n;
    }
  }
  char dbuf[4096];
  for (;;) {
    long n = dfd < 0 ? -1 : syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf);
    if (n <= 0) break;
    for (long pos = 0; pos < n;) {
      struct ldirent *d = (struct ldirent *)(dbuf + pos);
      pos += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      long fd = 0; for (const char *c = d->name; *c; c++) fd = fd * 10 + (*c - '0');
      if (fd == dfd || fd == out || is_libfd(fd)) continue;
      snap_line(&b, fd, out, path, psize, lsize);
    }
  }
  if (own && dfd >= 0) syscall(SYS_close, dfd);
  if (out < 0) lf_done(); else t_fdwork--;
  if (mine) __atomic_store_n(&g_snap_busy, 0, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ lifecycle */

static void write_header(int first, int out) {
  char line[PATH_MAX + 200]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0, 0};
  if (first) { ob_s(&b, "# rocrtrace-log 1"); meta_to(out, &b); }
  b.n = 0;
  char exe[PATH_MAX]; long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) n = 0;
  struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
  ob_s(&b, "# pid="); ob_u(&b, (unsigned long)syscall(SYS_getpid));
  ob_s(&b, " ppid="); ob_u(&b, (unsigned long)syscall(SYS_getppid));
  ob_s(&b, " exe="); ob_esc(&b, exe, (int)n, 0);
  ob_s(&b, " page_size="); ob_u(&b, (unsigned long)g_page);
  ob_s(&b, " start="); ob_time(&b, &now);
  b.cut = 0; meta_to(out, &b);
}

/* fd mode (no log window): where the library's fds are, so the report can
 * say whether the program could meet them */
static void fds_note(void) {
  char line[160]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0, 0};
  long lim = nofile_now(), lo = LONG_MAX;
  ob_s(&b, "# capture-fds fds=");
  for (int i = 0; i < LF_N; i++) {
    int fd = __atomic_load_n(&g_lf[i], __ATOMIC_ACQUIRE);
    if (i) ob_c(&b, ',');
    ob_d(&b, fd);
    if (fd >= 0 && fd < lo) lo = fd;
  }
  ob_s(&b, " limit="); ob_d(&b, lim);
  ob_s(&b, lo >= lim ? " placement=above-limit" : " placement=below-limit");
  meta_to(-1, &b);
}

/* ---- children that share our memory (vfork, posix_spawn, CLONE_VM)
 *
 * Such a child runs on the parent's memory and TLS: it must not change any
 * of the library's state, which the parent reads on resuming.  Its own fd
 * table is private, though, and that is where it keeps its log: at the
 * number of the parent's log fd (a number its program cannot be handed),
 * replacing its inherited copy of the parent's log.  That number holding
 * the parent's file means "no record yet": the file is created (or a stale
 * one of a reused pid truncated) and gets its header. */

/* dup3 onto a number that may be at or above the soft limit */
static int dup_at(int fd, int num) {
  struct rlimit old, tmp;
  int raised = 0;
  if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, &old) == 0 && old.rlim_cur <= (rlim_t)num) {
    tmp = old; tmp.rlim_cur = (rlim_t)num + 1;
    if (tmp.rlim_max < tmp.rlim_cur) tmp.rlim_max = tmp.rlim_cur;
    raised = syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &tmp, 0) == 0;
  }
  long r = syscall(SYS_dup3, fd, num, O_CLOEXEC);
  if (raised) syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &old, 0);
  return r < 0 ? -1 : num;
}

/* With the log window (no parent log fd to stand in for ours) the child
 * opens its file for each record: its fd table is its own and no other
 * thread uses it, so the short-lived fd is never seen.  Whether it has
 * started its file is remembered in a slot of our memory keyed by its pid
 * (the only library state such a child writes; nothing the parent reads
 * for itself). */
static int g_vkids[64];

static int child_open_transient(void) {
  int me = (int)syscall(SYS_getpid);
  int *slot = &g_vkids[(unsigned)me % 64];
  int started = __atomic_load_n(slot, __ATOMIC_ACQUIRE) == me;
  int existed;
  int fd = open_log_file(me, O_WRONLY, &existed);
  if (fd < 0) return -1;
  if (!started) {
    __atomic_store_n(slot, me, __ATOMIC_RELEASE);
    if (existed) syscall(SYS_ftruncate, fd, 0);   /* a stale log of a reused pid */
    write_header(1, fd);
    fd_snapshot("# fd-snapshot start", fd);
  }
  return fd;
}

/* the child's log fd for a record; *transient: close it after */
static int child_open(int *transient) {
  *transient = 0;
  if (logfd() < 0) { *transient = 1; return child_open_transient(); }
  return child_logfd();
}
static void child_done(int fd, int transient) { if (transient && fd >= 0) syscall(SYS_close, fd); }

static int child_logfd(void) {
  int num = logfd();
  if (num < 0) return -1;
  int me = (int)syscall(SYS_getpid);
  char path[PATH_MAX + 24];
  if (log_path(path, sizeof path, me)) return -1;
  struct stat at, mine;
  int open_now = syscall(SYS_fstat, num, &at) == 0;
  if (open_now && !(at.st_dev == g_lf_dev[LF_LOG] && at.st_ino == g_lf_ino[LF_LOG])) {
    if (syscall(SYS_newfstatat, AT_FDCWD, path, &mine, AT_SYMLINK_NOFOLLOW) == 0 &&
        mine.st_dev == at.st_dev && mine.st_ino == at.st_ino)
      return num;   /* our own file already */
    return -1;      /* something else: leave it alone */
  }
  int first = open_now;  /* still the parent's log: our first record */
  int existed;
  int fd = open_log_file(me, O_WRONLY, &existed);
  if (fd < 0) return -1;
  if (first && existed) { syscall(SYS_ftruncate, fd, 0); existed = 0; }
  if (dup_at(fd, num) < 0) { syscall(SYS_close, fd); return -1; }
  syscall(SYS_close, fd);
  if (!existed) {
    write_header(1, num);
    fd_snapshot("# fd-snapshot start", num);
  }
  return num;
}

static void child_write(const char *p, int len) {
  int tr, fd = child_open(&tr);
  if (fd >= 0) syscall(SYS_write, fd, p, len);
  child_done(fd, tr);
}

/* the child's program aims a call at one of our numbers: that is its own
 * copy (or its own log); close it so the call sees a free number */
static int child_evict(long fd) { return (int)syscall(SYS_close, fd); }

static void exit_record(int status);

/* A process (not a thread) whose pid is not ours, in a hook.  Returns what
 * tracing() returns for it: 2 when it shares our memory (kcmp KCMP_VM), 0
 * when it shares our fd table too (nothing safe to do), else it is a copy
 * of us made without atfork handlers (raw clone/clone3, _Fork): it adopts
 * (own pid, file, header), and gets 1. */
static void adopt_child(void);
static int child_mode(void) {
  int me = (int)syscall(SYS_getpid);
  int parent = __atomic_load_n(&g_pid, __ATOMIC_RELAXED);
  int save = errno;
  long vm = syscall(SYS_kcmp, parent, me, 1 /* KCMP_VM */, 0, 0);
  int verr = errno;
  errno = save;
  if (vm == 0) {
    long files = syscall(SYS_kcmp, parent, me, 2 /* KCMP_FILES */, 0, 0);
    errno = save;
    return files == 0 ? 0 : 2;
  }
  if (vm < 0 && verr != ESRCH) return 2;   /* cannot tell: never touch shared state */
  if (__atomic_exchange_n(&g_adopting, 1, __ATOMIC_ACQ_REL)) return 0;
  adopt_child();
  __atomic_store_n(&g_adopting, 0, __ATOMIC_RELEASE);
  return 1;
}

static void exit_record(int status) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  int save = errno;
  int mode = syscall(SYS_getpid) == g_pid ? 1 : child_mode();
  if (mode == 0) { errno = save; return; }
  if (mode == 1 && __atomic_exchange_n(&g_exit_done, 1, __ATOMIC_ACQ_REL)) { errno = save; return; }
  t_busy++;
  int tr = 0, out = mode == 2 ? child_open(&tr) : -1;
  if (mode == 2 && out < 0) { t_busy--; errno = save; return; }
  if (mode == 1) win_seal();
  fd_snapshot("# fd-snapshot exit", out);
  char line[80]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0, 0};
  unsigned long lost = mode == 1 ? __atomic_load_n(&g_lost, __ATOMIC_RELAXED) : 0;
  if (lost) { ob_s(&b, "# lost "); ob_u(&b, lost); meta_to(out, &b); b.n = 0; }
  ob_s(&b, "# exit status="); ob_d(&b, status & 0xff); meta_to(out, &b);
  if (mode == 1) win_finish();
  child_done(out, tr);
  t_busy--; errno = save;
}

static void on_exit_handler(int status, void *arg) { (void)arg; exit_record(status); }

static int open_proc_high(int i, const char *path, int flags) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_RDONLY | O_CLOEXEC);
  note_identity(i, fd);
  return keep_high(fd);
}

/* Our own pid, file, header and /proc fds in a child that has its own copy
 * of our memory (fork: atfork child handler; raw clone3/_Fork: first hook).
 * Only the forking thread exists in the child, so transient fds are fine. */
static void adopt_child(void) {
  t_tid = 0;
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  int save = errno; t_busy++;
  g_may_open = 1;
  __atomic_store_n(&g_maps_lock, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g_lf_inuse, t_fdwork, __ATOMIC_RELEASE);  /* the parent's other threads are not here */
  int old[LF_N];
  for (int i = 0; i < LF_N; i++) old[i] = g_lf[i];
  __atomic_store_n(&g_pid, (int)syscall(SYS_getpid), __ATOMIC_RELEASE);
  g_nofile = nofile_now();
  g_lost = 0; g_exit_done = 0;
  /* the parent's window maps the parent's file: never write into it */
  win_unmap();
  g_off = g_fsize = 0; g_winflight = 0; g_grow = 0; t_growing = 0;
  __atomic_store_n(&g_lf[LF_LOG], -1, __ATOMIC_RELEASE);
  __atomic_store_n(&g_lf[LF_DIR], -1, __ATOMIC_RELEASE);
  __atomic_store_n(&g_lf[LF_MAPS], -1, __ATOMIC_RELEASE);
  for (int i = 0; i < LF_N; i++) if (old[i] >= 0) syscall(SYS_close, old[i]);
  int existed, fd_mode = 0;
  int fd = open_log_file(g_pid, O_RDWR, &existed);   /* a stale log of a reused pid is cut */
  log_path(g_lpath, sizeof g_lpath, g_pid);
  if (fd >= 0 && win_map(fd, 0) == 0) {
    syscall(SYS_close, fd);
  } else if (fd >= 0) {
    fd_mode = 1;
    syscall(SYS_ftruncate, fd, 0);
    note_identity(LF_LOG, fd);
    __atomic_store_n(&g_lf[LF_LOG], keep_high(fd), __ATOMIC_RELEASE);
    __atomic_store_n(&g_lf[LF_DIR], open_proc_high(LF_DIR, "/proc/self/fd", O_DIRECTORY), __ATOMIC_RELEASE);
    __atomic_store_n(&g_lf[LF_MAPS], open_proc_high(LF_MAPS, "/proc/self/maps", 0), __ATOMIC_RELEASE);
  }
  write_header(1, -1);
  if (fd_mode) fds_note();
  int n = __atomic_load_n(&g_nmaps, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) print_map(&g_maps[i], g_maps[i].perms);
  maps_scan(1);
  fd_snapshot("# fd-snapshot start", -1);
  g_may_open = 0;
  t_busy--; errno = save;
}

static void atfork_child(void) { adopt_child(); }

/* ---- fatal signals
 *
 * A signal whose action is the default (death) gets our handler instead,
 * which writes `# fd-snapshot exit` and `# exit signal=NAME`, puts the
 * default back and raises the signal again: on return from the handler the
 * process dies of it exactly as it would have (same signal, same core).
 * sigaction()/signal() show the program the disposition it set; a handler
 * the program installs replaces ours outright, and SIG_DFL brings ours back.
 */
static const int FATAL_SIGS[] = {SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE,
                                 SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU,
                                 SIGXFSZ, SIGSYS};
#define NSIGS 65
static unsigned char g_sig_watch[NSIGS];
static struct sigaction g_sig_prog[NSIGS];   /* what the program set, while ours is installed */

static void on_fatal(int sig, siginfo_t *si, void *uc);

static int is_ours(const struct sigaction *sa) {
  return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fatal;
}

static int install_ours(int sig, struct sigaction *prev) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fatal;
  /* the alternate stack only for SIGSEGV (a stack overflow has no other
   * place to run): a small one the program set up for its own use must not
   * turn another signal's death into a SIGSEGV */
  sa.sa_flags = SA_SIGINFO | (sig == SIGSEGV ? SA_ONSTACK : 0);
  sigfillset(&sa.sa_mask);
  return R.sigaction(sig, &sa, prev);
}

static void exit_signal(int sig) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  if (syscall(SYS_getpid) != g_pid) return;   /* a child not (yet) on its own state */
  if (__atomic_exchange_n(&g_exit_done, 1, __ATOMIC_ACQ_REL)) return;
  t_busy++;
  win_seal();
  fd_snapshot("# fd-snapshot exit", -1);
  char line[80]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0, 0};
  unsigned long lost = __atomic_load_n(&g_lost, __ATOMIC_RELAXED);
  if (lost) { ob_s(&b, "# lost "); ob_u(&b, lost); meta_to(-1, &b); b.n = 0; }
  ob_s(&b, "# exit signal=");
  const char *abbr = sigabbrev_np(sig);
  if (abbr) { ob_s(&b, "SIG"); ob_s(&b, abbr); } else ob_d(&b, sig);
  meta_to(-1, &b);
  win_finish();
  t_busy--;
}

static void on_fatal(int sig, siginfo_t *si, void *uc) {
  (void)si; (void)uc;
  int save = errno;
  exit_signal(sig);
  /* the kernel's sigaction: SIG_DFL needs no restorer */
  struct { void *handler; unsigned long flags; void *restorer; unsigned long mask; } k = {SIG_DFL, 0, 0, 0};
  syscall(SYS_rt_sigaction, sig, &k, 0, 8);
  /* blocked while we run: delivered, with the default action, as we return
   * (before a faulting instruction could run again) */
  syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), sig);
  errno = save;
}

static void signals_init(void) {
  if (!R.sigaction) return;
  for (unsigned i = 0; i < sizeof FATAL_SIGS / sizeof FATAL_SIGS[0]; i++) {
    int sig = FATAL_SIGS[i];
    struct sigaction cur;
    if (R.sigaction(sig, 0, &cur) != 0) continue;
    g_sig_watch[sig] = 1;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL && install_ours(sig, 0) == 0)
      g_sig_prog[sig] = cur;
  }
}

static void lib_init(void) {
  int expect = 0;
  if (!__atomic_compare_exchange_n(&g_state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return;  /* done, or in progress on another thread: that thread's calls go untraced meanwhile */
  int save = errno; t_busy++;
  resolve_all();
  const char *prefix = getenv("ROCRTRACE_LOG");
  if (!prefix || !*prefix) prefix = "rocrtrace.log";
  size_t pl = strlen(prefix);
  const char *d = getenv("ROCRTRACE_STACK_DEPTH");
  g_depth = d ? atoi(d) : 0;
  if (g_depth < 0) g_depth = 0;
  if (g_depth > MAX_FRAMES - 8) g_depth = MAX_FRAMES - 8;
  g_page = (long)getauxval(AT_PAGESZ);
  if (!g_page) g_page = 4096;
  const char *off = getenv("ROCRTRACE_DISABLE");
  if (pl >= sizeof g_prefix || (off && *off && *off != '0')) goto disabled;
  memcpy(g_prefix, prefix, pl + 1);
  g_pid = (int)syscall(SYS_getpid);
  g_nofile = nofile_now();
  g_may_open = 1;
  int existed;
  int fd = open_log_file(g_pid, O_RDWR, &existed);
  if (fd < 0) goto disabled;
  /* A file for our pid ending in `# exec`: we are the image after an execve
   * and continue it.  Any other content is a stale log of a reused pid. */
  int after_exec = 0;
  uint64_t end = existed ? content_end(fd) : 0;
  if (end > 0) {
    char tail[PATH_MAX + 16];
    long want = end < sizeof tail ? (long)end : (long)sizeof tail;
    long n = syscall(SYS_pread64, fd, tail, want, (long)end - want);
    if (n > 1 && tail[n - 1] == '\n') {
      long i = n - 2;
      while (i >= 0 && tail[i] != '\n') i--;
      after_exec = n - (i + 1) > 7 && memcmp(tail + i + 1, "# exec ", 7) == 0;
    }
    if (!after_exec) end = 0;
  }
  log_path(g_lpath, sizeof g_lpath, g_pid);
  int fd_mode = win_map(fd, end) != 0;
  if (fd_mode) {
    if (!after_exec) syscall(SYS_ftruncate, fd, 0);
    note_identity(LF_LOG, fd);
    __atomic_store_n(&g_lf[LF_LOG], keep_high(fd), __ATOMIC_RELEASE);
    __atomic_store_n(&g_lf[LF_DIR], open_proc_high(LF_DIR, "/proc/self/fd", O_DIRECTORY), __ATOMIC_RELEASE);
    __atomic_store_n(&g_lf[LF_MAPS], open_proc_high(LF_MAPS, "/proc/self/maps", 0), __ATOMIC_RELEASE);
  } else {
    syscall(SYS_close, fd);   /* the window holds the file: no fd while the program runs */
  }
  dl_iterate_phdr(self_range_cb, (void *)(uintptr_t)&lib_init);
  if (g_depth > 0) { void *pcs[4]; backtrace(pcs, 4); }
  pthread_atfork(0, 0, atfork_child);
  on_exit(on_exit_handler, 0);
  write_header(!after_exec, -1);
  if (fd_mode) fds_note();
  maps_scan(1);
  fd_snapshot("# fd-snapshot start", -1);
  signals_init();
  g_may_open = 0;
  t_busy--; errno = save;
  __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
  return;
disabled:
  g_may_open = 0;
  t_busy--; errno = save;
  __atomic_store_n(&g_state, 3, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void rt_ctor(void) { lib_init(); }

/* ------------------------------------------------------------ ioctl decode */

/* Copy from the program's memory without faulting on a bad pointer (the
 * kernel would answer EFAULT; we must not crash the program instead). */
static int safe_copy(void *dst, const void *src, size_t len) {
  if (!src) return -1;
  struct iovec l = {dst, len}, r = {(void *)src, len};
  long n = syscall(SYS_process_vm_readv, g_pid, &l, 1, &r, 1, 0);
  if (n == (long)len) return 0;
  if (n < 0 && (errno == ENOSYS || errno == EPERM)) { memcpy(dst, src, len); return 0; }
  return -1;
}

/* The catalogue's name for a request, and in *dec how to decode it: only at
 * its size (or, decoded, an older header's), at any size with a flexible array. */
static const char *ioc_lookup(unsigned type, unsigned nr, unsigned size, int accel,
                              const struct rt_decode **dec) {
  const struct rt_ioc *t = 0;
  *dec = 0;
  switch (type) {
    case 0x4b: t = RT_KFD; break;
    case 0x64:
      if (nr >= 0x40 && nr < 0xa0) t = accel ? RT_AMDXDNA : RT_AMDGPU;
      else t = RT_DRM_CORE;
      break;
    case 0x62: t = RT_DMABUF; break;
    case 0x48: t = RT_DMAHEAP; break;
    case 0x75: t = RT_UDMABUF; break;
    default: return 0;
  }
  const struct rt_ioc *e = &t[nr];
  if (!e->name) return 0;
  int ok = size == e->size || (e->dec && e->dec->tail);
  for (unsigned i = 0; i < e->nold && e->dec; i++) ok |= size == e->old_sizes[i];
  if (!ok) return 0;
  *dec = e->dec;
  return e->name;
}

/* the legacy (not _IOC-encoded) requests strace names most often */
static const char *legacy_ioc(unsigned req) {
  switch (req) {
    case 0x5401: return "TCGETS"; case 0x5402: return "TCSETS"; case 0x5403: return "TCSETSW";
    case 0x5404: return "TCSETSF"; case 0x540b: return "TCFLSH"; case 0x540e: return "TIOCSCTTY";
    case 0x540f: return "TIOCGPGRP"; case 0x5410: return "TIOCSPGRP"; case 0x5413: return "TIOCGWINSZ";
    case 0x5414: return "TIOCSWINSZ"; case 0x541b: return "FIONREAD"; case 0x5421: return "FIONBIO";
    case 0x5450: return "FIONCLEX"; case 0x5451: return "FIOCLEX"; case 0x5452: return "FIOASYNC";
    default: return 0;
  }
}

static void ob_ioc(struct ob *b, unsigned req) {
  static const char *const dirs[4] = {"_IOC_NONE", "_IOC_WRITE", "_IOC_READ", "_IOC_READ|_IOC_WRITE"};
  ob_s(b, "_IOC("); ob_s(b, dirs[req >> 30]); ob_s(b, ", ");
  ob_x(b, (req >> 8) & 0xff); ob_s(b, ", "); ob_x(b, req & 0xff); ob_s(b, ", ");
  ob_x(b, (req >> 16) & 0x3fff); ob_c(b, ')');
}

static unsigned long long rt_get(const unsigned char *p, unsigned off, unsigned width) {
  if (width == 8) { uint64_t v; memcpy(&v, p + off, 8); return v; }
  uint32_t v; memcpy(&v, p + off, 4); return v;
}

static void ob_show(struct ob *b, unsigned long long v, unsigned show, const struct rt_flag *flags,
                    const struct rt_enum *names) {
  switch (show) {
    case RT_DEC: ob_u(b, v); break;
    case RT_SDEC: ob_d(b, (int32_t)v); break;
    case RT_FD: ob_fd(b, (int32_t)v); break;
    case RT_ENUM: if (v < names->n && names->names[v]) ob_s(b, names->names[v]); else ob_x(b, v); break;
    case RT_FLAGS: ob_flags(b, v, flags); break;
    default: ob_x(b, v); break;
  }
}

/* a scalar member of the struct at p */
static void ob_scalar(struct ob *b, const struct rt_field *f, const unsigned char *p) {
  unsigned show = f->show;
  const struct rt_flag *flags = f->flags;
  const struct rt_enum *names = f->names;
  if (f->ncases) {
    unsigned long long tag = rt_get(p, f->tag_off, 4);
    for (unsigned i = 0; i < f->ncases; i++)
      if (f->cases[i].tag == tag) { show = f->cases[i].show; flags = f->cases[i].flags; names = f->cases[i].names; }
  }
  ob_show(b, rt_get(p, f->off, f->width), show, flags, names);
}

/* How many elements of the flexible array are read: `count` from the input
 * copy, at most `max`, and no more than the request's size holds (the kernel
 * copies only that much). */
static unsigned tail_n(const struct rt_decode *d, const unsigned char *in, unsigned size) {
  const struct rt_field *t = d->tail;
  unsigned long long count = rt_get(in, t->count_off, t->count_width);
  unsigned n = count < t->max ? (unsigned)count : t->max;
  if (size >= d->fixed && n > (size - d->fixed) / t->elem_size) n = (size - d->fixed) / t->elem_size;
  return n;
}

static void ob_fields(struct ob *b, const struct rt_field *f, unsigned nf, const unsigned char *p,
                      const struct rt_decode *d, const unsigned char *in, unsigned size);

/* [e, e, ...]: n of the array's `total` elements at base, `...` for the rest */
static void ob_elems(struct ob *b, const struct rt_field *f, const unsigned char *base, unsigned n,
                     unsigned long long total) {
  ob_c(b, '[');
  for (unsigned i = 0; i < n; i++) {
    const unsigned char *e = base + (size_t)i * f->elem_size;
    if (i) ob_s(b, ", ");
    if (f->elem[0].label) { ob_c(b, '{'); ob_fields(b, f->elem, f->nelem, e, 0, 0, 0); ob_c(b, '}'); }
    else ob_scalar(b, &f->elem[0], e);
  }
  if (n < total) { if (n) ob_s(b, ", "); ob_s(b, "..."); }
  ob_c(b, ']');
}

/* `label=value, ...` of the struct copy at p; a flexible array's count and
 * length come from the input copy `in` */
static void ob_fields(struct ob *b, const struct rt_field *f, unsigned nf, const unsigned char *p,
                      const struct rt_decode *d, const unsigned char *in, unsigned size) {
  for (unsigned i = 0; i < nf; i++, f++) {
    if (i) ob_s(b, ", ");
    ob_s(b, f->label); ob_c(b, '=');
    if (f->show == RT_TAIL) {
      ob_elems(b, f, p + f->off, tail_n(d, in, size), rt_get(in, f->count_off, f->count_width));
    } else if (f->show == RT_PTR) {
      /* the array the program's pointer points to, copied now */
      unsigned long long ptr = rt_get(p, f->off, 8), count = rt_get(p, f->count_off, f->count_width);
      if (!ptr) { ob_s(b, "NULL"); continue; }
      unsigned char arr[RT_PTR_COPY_MAX];
      unsigned m = count < f->max ? (unsigned)count : f->max;
      if (m && safe_copy(arr, (void *)(uintptr_t)ptr, (size_t)m * f->elem_size)) { ob_x(b, ptr); continue; }
      ob_elems(b, f, arr, m, count);
    } else {
      ob_scalar(b, f, p);
    }
  }
}

/* Copy the struct (and as many elements of its flexible array as the input
 * copy `in` says) from the program; `in` 0: this is the input copy. */
static int ioc_copy(const struct rt_decode *d, void *arg, unsigned size, const unsigned char *in,
                    unsigned char *c) {
  if (safe_copy(c, arg, d->fixed)) return -1;
  if (!d->tail) return 0;
  unsigned n = tail_n(d, in ? in : c, size);
  if (n && safe_copy(c + d->fixed, (char *)arg + d->fixed, (size_t)n * d->tail->elem_size)) return -1;
  return 0;
}

static void ioc_in(struct ob *b, const struct rt_decode *d, const unsigned char *in, unsigned size) {
  ob_c(b, '{');
  ob_fields(b, d->in, d->nin, in, d, in, size);
  ob_c(b, '}');
}

/* the `=> {...}` half: fields the kernel wrote, only after success */
static void ioc_out(struct ob *b, const struct rt_decode *d, void *arg, unsigned size,
                    const unsigned char *in) {
  if (!d->nout) return;
  if (d->out_if_off >= 0 && rt_get(in, (unsigned)d->out_if_off, 4) != d->out_if_val) return;
  unsigned char c[RT_COPY_MAX] __attribute__((aligned(8)));
  if (ioc_copy(d, arg, size, in, c)) return;
  ob_s(b, " => {");
  ob_fields(b, d->out, d->nout, c, d, in, size);
  ob_c(b, '}');
}

/* ------------------------------------------------------------------ hooks */

EXPORT int ioctl(int fd, unsigned long request, ...) {
  va_list ap; va_start(ap, request); void *arg = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.ioctl)) resolve_all();
  guard(fd);
  int on = tracing();
  if (!on) return R.ioctl(fd, request, arg);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  struct ob *b = &r.b;
  unsigned req = (unsigned)request;
  char *path = t_path; int plen = fd_path(fd, path, sizeof t_path);
  int accel = plen >= 11 && memcmp(path, "/dev/accel/", 11) == 0;
  const struct rt_decode *dec;
  const char *name = ioc_lookup((req >> 8) & 0xff, req & 0xff, (req >> 16) & 0x3fff, accel, &dec);
  ob_s(b, "ioctl("); ob_fdpath(b, fd, path, plen); ob_s(b, ", ");
  if (!name) name = legacy_ioc(req);
  if (name) ob_s(b, name); else ob_ioc(b, req);
  ob_s(b, ", ");
  unsigned char in[RT_COPY_MAX] __attribute__((aligned(8)));
  unsigned size = (req >> 16) & 0x3fff;
  if (dec && ioc_copy(dec, arg, size, 0, in) == 0) ioc_in(b, dec, in, size);
  else { dec = 0; ob_x(b, (uintptr_t)arg); }
  int ret = R.ioctl(fd, request, arg);
  int e = errno;
  if (ret != -1 && dec) ioc_out(b, dec, arg, size, in);
  rec_res_int(&r, ret, e, 0);
  rec_emit(&r);
  t_busy--;
  errno = e;
  return ret;
}

static const struct rt_flag OPEN_OTHER[] = {
  {O_CREAT, "O_CREAT"}, {O_EXCL, "O_EXCL"}, {O_NOCTTY, "O_NOCTTY"}, {O_TRUNC, "O_TRUNC"},
  {O_APPEND, "O_APPEND"}, {O_NONBLOCK, "O_NONBLOCK"}, {O_DSYNC, "O_DSYNC"},
  {O_DIRECT, "O_DIRECT"}, {O_LARGEFILE, "O_LARGEFILE"}, {O_DIRECTORY, "O_DIRECTORY"},
  {O_NOFOLLOW, "O_NOFOLLOW"}, {O_NOATIME, "O_NOATIME"}, {O_CLOEXEC, "O_CLOEXEC"},
  {04000000, "O_SYNC"}, {O_PATH, "O_PATH"}, {020000000, "O_TMPFILE"}, {0, 0}};

static void ob_openflags(struct ob *b, int flags) {
  static const char *const acc[4] = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE"};
  ob_s(b, acc[flags & 3]);
  unsigned rest = (unsigned)flags & ~3u;
  if (rest) { ob_c(b, '|'); ob_flags(b, rest, OPEN_OTHER); }
}

static void ob_mode(struct ob *b, unsigned mode) {
  char t[8]; int i = 8;
  do { t[--i] = (char)('0' + (mode & 7)); mode >>= 3; } while (mode);
  t[--i] = '0';
  ob_raw(b, t + i, 8 - i);
}

static int needs_mode(int flags) { return (flags & O_CREAT) || (flags & 020000000) == 020000000; }

static void ob_dirfd(struct ob *b, int dirfd) {
  if (dirfd == AT_FDCWD) ob_s(b, "AT_FDCWD"); else ob_fd(b, dirfd);
}

static int log_openat(int dirfd, const char *path, int flags, unsigned mode, int ret, int e, struct rec *r) {
  struct ob *b = &r->b;
  ob_s(b, "openat("); ob_dirfd(b, dirfd);
  ob_s(b, ", "); ob_str(b, path); ob_s(b, ", "); ob_openflags(b, flags);
  if (needs_mode(flags)) { ob_s(b, ", "); ob_mode(b, mode); }
  rec_res_int(r, ret, e, 1);
  rec_emit(r);
  return ret;
}

#define OPEN_BODY(realfn, dirfd, ...)                                        \
  unsigned mode = 0;                                                         \
  if (needs_mode(flags)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, unsigned); va_end(ap); } \
  if (UNLIKELY(!R.realfn)) resolve_all();                                    \
  int on = tracing_own();                                                      \
  if (!on) return R.realfn(__VA_ARGS__, flags, mode);                        \
  t_busy++;                                                                  \
  struct rec r; rec_begin(&r, on);                                           \
  int ret = R.realfn(__VA_ARGS__, flags, mode);                              \
  int e = errno;                                                             \
  log_openat(dirfd, path, flags, mode, ret, e, &r);                          \
  t_busy--; errno = e; return ret;

EXPORT int open(const char *path, int flags, ...) { OPEN_BODY(open, AT_FDCWD, path) }
EXPORT int open64(const char *path, int flags, ...) { OPEN_BODY(open64, AT_FDCWD, path) }
EXPORT int openat(int dirfd, const char *path, int flags, ...) { OPEN_BODY(openat, dirfd, dirfd, path) }
EXPORT int openat64(int dirfd, const char *path, int flags, ...) { OPEN_BODY(openat64, dirfd, dirfd, path) }

/* one-argument fd calls: decoration is taken before the call (close) */
EXPORT int close(int fd) {
  if (UNLIKELY(!R.close)) resolve_all();
  guard(fd);
  int on = tracing_own();
  if (!on) return R.close(fd);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "close("); ob_fd(&r.b, fd);
  int ret = R.close(fd); int e = errno;
  rec_res_int(&r, ret, e, 0);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

EXPORT int dup(int fd) {
  if (UNLIKELY(!R.dup)) resolve_all();
  guard(fd);
  int on = tracing_own();
  if (!on) return R.dup(fd);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "dup("); ob_fd(&r.b, fd);
  int ret = R.dup(fd); int e = errno;
  rec_res_int(&r, ret, e, 1);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

static int dup23(int use3, int oldfd, int newfd, int flags) {
  guard(oldfd); guard(newfd);
  int on = tracing_own();
  if (!on) return use3 ? R.dup3(oldfd, newfd, flags) : R.dup2(oldfd, newfd);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, use3 ? "dup3(" : "dup2(");
  ob_fd(&r.b, oldfd);
  ob_s(&r.b, ", "); ob_d(&r.b, newfd);
  if (use3) { ob_s(&r.b, ", "); ob_flags(&r.b, (unsigned)flags, RT_OPEN_FLAG); }
  int ret = use3 ? R.dup3(oldfd, newfd, flags) : R.dup2(oldfd, newfd); int e = errno;
  rec_res_int(&r, ret, e, 1);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}
EXPORT int dup2(int oldfd, int newfd) { if (UNLIKELY(!R.dup2)) resolve_all(); return dup23(0, oldfd, newfd, 0); }
EXPORT int dup3(int oldfd, int newfd, int flags) { if (UNLIKELY(!R.dup3)) resolve_all(); return dup23(1, oldfd, newfd, flags); }

static int do_fcntl(fcntl_fn fn, int fd, int cmd, void *arg) {
  guard(fd);  /* any command on our number: the program sees a free one */
  if (!(cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC || cmd == F_SETFD)) return fn(fd, cmd, arg);
  int on = tracing_own();
  if (!on) return fn(fd, cmd, arg);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "fcntl("); ob_fd(&r.b, fd);
  if (cmd == F_SETFD) {
    ob_s(&r.b, ", F_SETFD, ");
    long v = (long)arg;
    if (v == FD_CLOEXEC) ob_s(&r.b, "FD_CLOEXEC"); else if (v == 0) ob_c(&r.b, '0'); else ob_x(&r.b, (unsigned long)v);
  } else {
    ob_s(&r.b, cmd == F_DUPFD ? ", F_DUPFD, " : ", F_DUPFD_CLOEXEC, ");
    ob_d(&r.b, (int)(long)arg);
  }
  int ret = fn(fd, cmd, arg); int e = errno;
  rec_res_int(&r, ret, e, cmd != F_SETFD);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}
EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap; va_start(ap, cmd); void *arg = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.fcntl)) resolve_all();
  return do_fcntl(R.fcntl, fd, cmd, arg);
}
EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap; va_start(ap, cmd); void *arg = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.fcntl64)) resolve_all();
  return do_fcntl(R.fcntl64 ? R.fcntl64 : R.fcntl, fd, cmd, arg);
}

/* close_range over our fds: they move above `last` first.  Only when no
 * number is left there (close_range(3, ~0U), closefrom: Onload#111,
 * mirrord#3911) is the call split around them, which leaves the program's
 * fds exactly as the whole call would (ours are at numbers it cannot use). */
static long crange_protected(unsigned first, unsigned last, int flags) {
  if (flags & CLOSE_RANGE_CLOEXEC)   /* ours are close-on-exec already */
    return syscall(SYS_close_range, first, last, flags);
  if (first <= last) lib_evict_range(first, last, (long)last + 1 > INT_MAX ? INT_MAX : (long)last + 1);
  int mine[LF_N], n = 0;
  for (int i = 0; i < LF_N; i++) {
    int l = __atomic_load_n(&g_lf[i], __ATOMIC_ACQUIRE);
    if (l >= 0 && (unsigned)l >= first && (unsigned)l <= last) mine[n++] = l;
  }
  if (!n) return syscall(SYS_close_range, first, last, flags);
  for (int i = 1; i < n; i++)   /* ascending */
    for (int j = i; j > 0 && mine[j - 1] > mine[j]; j--) { int t = mine[j]; mine[j] = mine[j - 1]; mine[j - 1] = t; }
  unsigned lo = first;
  long ret = 0;
  for (int i = 0; i < n && ret == 0; i++) {
    if ((unsigned)mine[i] > lo) ret = syscall(SYS_close_range, lo, (unsigned)mine[i] - 1, flags);
    lo = (unsigned)mine[i] + 1;
  }
  if (ret == 0 && (unsigned)mine[n - 1] < last) ret = syscall(SYS_close_range, lo, last, flags);
  return ret;
}

static void log_crange(struct rec *r, unsigned first, unsigned last, int flags, long ret, int e) {
  ob_s(&r->b, "close_range("); ob_u(&r->b, first); ob_s(&r->b, ", "); ob_u(&r->b, last);
  ob_s(&r->b, ", ");
  static const struct rt_flag cr[] = {{CLOSE_RANGE_UNSHARE, "CLOSE_RANGE_UNSHARE"},
                                      {CLOSE_RANGE_CLOEXEC, "CLOSE_RANGE_CLOEXEC"}, {0, 0}};
  ob_flags(&r->b, (unsigned)flags, cr);
  rec_res_int(r, ret, e, 0);
  rec_emit(r);
}

EXPORT int close_range(unsigned first, unsigned last, int flags) {
  int on = tracing_own();
  if (!on) return (int)crange_protected(first, last, flags);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  long ret = crange_protected(first, last, flags); int e = errno;
  log_crange(&r, first, last, flags, ret, e);
  t_busy--; errno = e; return (int)ret;
}

static void closefrom_protected(int low) {
  if (crange_protected((unsigned)low, ~0U, 0) == 0 || errno != ENOSYS) return;
  /* kernel without close_range: close what /proc lists, sparing our fds */
  int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  char dbuf[4096]; long n;
  while ((n = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf)) > 0)
    for (long pos = 0; pos < n;) {
      struct ldirent *d = (struct ldirent *)(dbuf + pos); pos += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      long fd = atol(d->name);
      if (fd >= low && fd != dfd && !is_libfd(fd)) syscall(SYS_close, fd);
    }
  syscall(SYS_close, dfd);
}

EXPORT void closefrom(int low) {
  int on = tracing_own();
  if (!on) { closefrom_protected(low); return; }
  int save = errno;
  t_busy++;
  struct rec r; rec_begin(&r, on);
  closefrom_protected(low);
  log_crange(&r, (unsigned)low, ~0U, 0, 0, 0);
  t_busy--; errno = save;
}

/* ---- calls that matter only when they fail on a bad fd
 *
 * read, write, ... are logged only when they return EBADF (a use after
 * close, as strace shows it); the hot success path costs a compare.  The
 * record is stamped at return with the duration unknown (<0.000000>).
 * Arguments are printed as strace prints them for a failed call: read
 * buffers as pointers, written data as strings (-s 32), iovec arrays and
 * sendmsg's msghdr decoded, fstat as the newfstatat(fd, "", ...,
 * AT_EMPTY_PATH) glibc >= 2.33 issues for it.  Every libc name a program
 * can link to is hooked (read/__read/__read_chk, pread/pread64/__pread64/
 * __pread_chk/__pread64_chk, fstat/fstat64/__fxstat/__fxstat64, fstatat/
 * fstatat64/__fxstatat/__fxstatat64, statx, lseek/lseek64/__lseek ...). */

#define STR_MAX 32     /* strace's default -s: string bytes and array elements */

static int badfd_begin(struct rec *r, const char *name, long fd) {
  int on = tracing_own();
  if (!on) return 0;
  t_busy++;
  rec_begin(r, on);
  ob_s(&r->b, name); ob_c(&r->b, '('); ob_fd(&r->b, fd);
  return 1;
}
static void badfd_end(struct rec *r) {
  rec_res_int(r, -1, EBADF, 0);
  rec_emit(r);
  t_busy--;
  errno = EBADF;
}

/* data the program passed, as strace prints it: "..." after STR_MAX bytes */
static void ob_data(struct ob *b, const void *p, size_t len) {
  char t[STR_MAX]; size_t m = len < sizeof t ? len : sizeof t;
  if (!p || (m && safe_copy(t, p, m))) { ob_ptr(b, p); return; }
  ob_c(b, '"'); ob_esc(b, t, (int)m, 0); ob_c(b, '"');
  if (m < len) ob_s(b, "...");
}

/* an iovec array: [{iov_base="..", iov_len=N}, ...]; bases as data when
 * `data` (writev, sendmsg), else as pointers (readv, recvmsg) */
static void ob_iov(struct ob *b, const struct iovec *iov, long cnt, int data) {
  if (!iov || cnt < 0 || cnt > 1024) { ob_ptr(b, iov); return; }
  ob_c(b, '[');
  for (long i = 0; i < cnt; i++) {
    if (i) ob_s(b, ", ");
    if (i >= STR_MAX) { ob_s(b, "..."); break; }
    struct iovec v;
    if (safe_copy(&v, iov + i, sizeof v)) { if (i == 0) { b->n--; ob_ptr(b, iov); return; } ob_s(b, "..."); break; }
    ob_s(b, "{iov_base=");
    if (data) ob_data(b, v.iov_base, v.iov_len); else ob_ptr(b, v.iov_base);
    ob_s(b, ", iov_len="); ob_u(b, v.iov_len); ob_c(b, '}');
  }
  ob_c(b, ']');
}

/* flags in strace's table order, each matched against what is left */
static void ob_flagset(struct ob *b, unsigned long long v, const struct rt_flag *t) {
  ob_flagbits(b, v, t, 1);
}

static const struct rt_flag MSG_NAMES[] = {
  {0x1, "MSG_OOB"}, {0x2, "MSG_PEEK"}, {0x4, "MSG_DONTROUTE"}, {0x8, "MSG_CTRUNC"},
  {0x10, "MSG_PROXY"}, {0x20, "MSG_TRUNC"}, {0x40, "MSG_DONTWAIT"}, {0x80, "MSG_EOR"},
  {0x100, "MSG_WAITALL"}, {0x200, "MSG_FIN"}, {0x400, "MSG_SYN"}, {0x800, "MSG_CONFIRM"},
  {0x1000, "MSG_RST"}, {0x2000, "MSG_ERRQUEUE"}, {0x4000, "MSG_NOSIGNAL"}, {0x8000, "MSG_MORE"},
  {0x10000, "MSG_WAITFORONE"}, {0x40000, "MSG_BATCH"}, {0x4000000, "MSG_ZEROCOPY"},
  {0x20000000, "MSG_FASTOPEN"}, {0x40000000, "MSG_CMSG_CLOEXEC"}, {0, 0}};

static void ob_msghdr(struct ob *b, const struct msghdr *mp, int send) {
  struct msghdr m;
  if (!mp || safe_copy(&m, mp, sizeof m)) { ob_ptr(b, mp); return; }
  if (!send) { ob_s(b, "{msg_namelen="); ob_u(b, m.msg_namelen); ob_c(b, '}'); return; }
  ob_s(b, "{msg_name="); ob_ptr(b, m.msg_name);
  ob_s(b, ", msg_namelen="); ob_u(b, m.msg_namelen);
  ob_s(b, ", msg_iov="); ob_iov(b, m.msg_iov, (long)m.msg_iovlen, 1);
  ob_s(b, ", msg_iovlen="); ob_u(b, m.msg_iovlen);
  if (m.msg_control && m.msg_controllen) { ob_s(b, ", msg_control="); ob_ptr(b, m.msg_control); }
  ob_s(b, ", msg_controllen="); ob_u(b, m.msg_controllen);
  ob_s(b, ", msg_flags="); ob_flagset(b, (unsigned)m.msg_flags, MSG_NAMES); ob_c(b, '}');
}

static void ob_whence(struct ob *b, int w) {
  static const char *const names[5] = {"SEEK_SET", "SEEK_CUR", "SEEK_END", "SEEK_DATA", "SEEK_HOLE"};
  if (w >= 0 && w < 5) { ob_s(b, names[w]); return; }
  ob_x(b, (unsigned)w); ob_s(b, " /* SEEK_??? */");
}

static const struct rt_flag AT_NAMES[] = {
  {0x100, "AT_SYMLINK_NOFOLLOW"}, {0x200, "AT_REMOVEDIR"}, {0x400, "AT_SYMLINK_FOLLOW"},
  {0x800, "AT_NO_AUTOMOUNT"}, {0x1000, "AT_EMPTY_PATH"}, {0, 0}};
static const struct rt_flag STATX_NAMES[] = {
  {0xfff, "STATX_ALL"}, {0x7ff, "STATX_BASIC_STATS"}, {0x1, "STATX_TYPE"}, {0x2, "STATX_MODE"},
  {0x4, "STATX_NLINK"}, {0x8, "STATX_UID"}, {0x10, "STATX_GID"}, {0x20, "STATX_ATIME"},
  {0x40, "STATX_MTIME"}, {0x80, "STATX_CTIME"}, {0x100, "STATX_INO"}, {0x200, "STATX_SIZE"},
  {0x400, "STATX_BLOCKS"}, {0x800, "STATX_BTIME"}, {0x1000, "STATX_MNT_ID"},
  {0x2000, "STATX_DIOALIGN"}, {0x4000, "STATX_MNT_ID_UNIQUE"}, {0, 0}};

/* read buffers: the pointer */
#define BADFD(call, fmt_args) do {                                            \
  if (UNLIKELY(ret < 0) && errno == EBADF) {                                  \
    struct rec r; if (badfd_begin(&r, call, fd)) { struct ob *b = &r.b; (void)b; fmt_args; badfd_end(&r); } \
  } } while (0)

static ssize_t do_read(rw_fn fn, int fd, void *buf, size_t n) {
  guard(fd);
  ssize_t ret = fn(fd, buf, n);
  BADFD("read", (ob_s(b, ", "), ob_ptr(b, buf), ob_s(b, ", "), ob_u(b, n)));
  return ret;
}
EXPORT ssize_t read(int fd, void *buf, size_t n) {
  if (UNLIKELY(!R.read)) resolve_all();
  return do_read(R.read, fd, buf, n);
}
EXPORT ssize_t __read(int fd, void *buf, size_t n) {
  if (UNLIKELY(!R.read)) resolve_all();
  return do_read(R.read, fd, buf, n);
}
/* _FORTIFY_SOURCE: the object-size check stays glibc's */
typedef ssize_t (*readchk_fn)(int, void *, size_t, size_t);
EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
  static readchk_fn real;
  if (!real) real = (readchk_fn)dlsym(RTLD_NEXT, "__read_chk");
  if (UNLIKELY(!R.read)) resolve_all();
  if (!real) return do_read(R.read, fd, buf, n);
  guard(fd);
  ssize_t ret = real(fd, buf, n, buflen);
  BADFD("read", (ob_s(b, ", "), ob_ptr(b, buf), ob_s(b, ", "), ob_u(b, n)));
  return ret;
}
static ssize_t do_write(int fd, const void *buf, size_t n) {
  if (UNLIKELY(!R.write)) resolve_all();
  guard(fd);
  ssize_t ret = R.write(fd, (void *)buf, n);
  BADFD("write", (ob_s(b, ", "), ob_data(b, buf, n), ob_s(b, ", "), ob_u(b, n)));
  return ret;
}
EXPORT ssize_t write(int fd, const void *buf, size_t n) { return do_write(fd, buf, n); }
EXPORT ssize_t __write(int fd, const void *buf, size_t n) { return do_write(fd, buf, n); }

static ssize_t do_pread(int fd, void *buf, size_t n, off_t off) {
  if (UNLIKELY(!R.pread64)) resolve_all();
  guard(fd);
  ssize_t ret = R.pread64(fd, buf, n, off);
  BADFD("pread64", (ob_s(b, ", "), ob_ptr(b, buf), ob_s(b, ", "), ob_u(b, n), ob_s(b, ", "), ob_d(b, off)));
  return ret;
}
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off) { return do_pread(fd, buf, n, off); }
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) { return do_pread(fd, buf, n, off); }
EXPORT ssize_t __pread64(int fd, void *buf, size_t n, off_t off) { return do_pread(fd, buf, n, off); }
typedef ssize_t (*preadchk_fn)(int, void *, size_t, off_t, size_t);
static ssize_t do_pread_chk(void **slot, const char *name, int fd, void *buf, size_t n, off_t off, size_t buflen) {
  preadchk_fn real = (preadchk_fn)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!real) { real = (preadchk_fn)dlsym(RTLD_NEXT, name); __atomic_store_n(slot, (void *)real, __ATOMIC_RELEASE); }
  if (!real) return do_pread(fd, buf, n, off);
  guard(fd);
  ssize_t ret = real(fd, buf, n, off, buflen);
  BADFD("pread64", (ob_s(b, ", "), ob_ptr(b, buf), ob_s(b, ", "), ob_u(b, n), ob_s(b, ", "), ob_d(b, off)));
  return ret;
}
EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
  static void *slot; return do_pread_chk(&slot, "__pread_chk", fd, buf, n, off, buflen);
}
EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
  static void *slot; return do_pread_chk(&slot, "__pread64_chk", fd, buf, n, off, buflen);
}
static ssize_t do_pwrite(int fd, const void *buf, size_t n, off_t off) {
  if (UNLIKELY(!R.pwrite64)) resolve_all();
  guard(fd);
  ssize_t ret = R.pwrite64(fd, (void *)buf, n, off);
  BADFD("pwrite64", (ob_s(b, ", "), ob_data(b, buf, n), ob_s(b, ", "), ob_u(b, n), ob_s(b, ", "), ob_d(b, off)));
  return ret;
}
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) { return do_pwrite(fd, buf, n, off); }
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) { return do_pwrite(fd, buf, n, off); }
EXPORT ssize_t __pwrite64(int fd, const void *buf, size_t n, off_t off) { return do_pwrite(fd, buf, n, off); }

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  if (UNLIKELY(!R.readv)) resolve_all();
  guard(fd);
  ssize_t ret = R.readv(fd, iov, cnt);
  BADFD("readv", (ob_s(b, ", "), ob_iov(b, iov, cnt, 0), ob_s(b, ", "), ob_d(b, cnt)));
  return ret;
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  if (UNLIKELY(!R.writev)) resolve_all();
  guard(fd);
  ssize_t ret = R.writev(fd, iov, cnt);
  BADFD("writev", (ob_s(b, ", "), ob_iov(b, iov, cnt, 1), ob_s(b, ", "), ob_d(b, cnt)));
  return ret;
}
static off_t do_lseek(lseek_fn fn, int fd, off_t off, int whence) {
  guard(fd);
  off_t ret = fn(fd, off, whence);
  BADFD("lseek", (ob_s(b, ", "), ob_d(b, off), ob_s(b, ", "), ob_whence(b, whence)));
  return ret;
}
EXPORT off_t lseek(int fd, off_t off, int whence) {
  if (UNLIKELY(!R.lseek)) resolve_all();
  return do_lseek(R.lseek, fd, off, whence);
}
EXPORT off_t lseek64(int fd, off_t off, int whence) {
  if (UNLIKELY(!R.lseek64)) resolve_all();
  return do_lseek(R.lseek64 ? R.lseek64 : R.lseek, fd, off, whence);
}
EXPORT off_t __lseek(int fd, off_t off, int whence) {
  if (UNLIKELY(!R.lseek)) resolve_all();
  return do_lseek(R.lseek, fd, off, whence);
}

/* fstat: glibc >= 2.33 issues newfstatat(fd, "", buf, AT_EMPTY_PATH) for it
 * (what strace shows); older ones the fstat system call */
#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)
#define FSTAT_ARGS(st) (ob_s(b, ", \"\", "), ob_ptr(b, st), ob_s(b, ", AT_EMPTY_PATH"))
#define FSTAT_NAME "newfstatat"
#define FSTAT_NEG_NO_SYSCALL 1
#else
#define FSTAT_ARGS(st) (ob_s(b, ", "), ob_ptr(b, st))
#define FSTAT_NAME "fstat"
#define FSTAT_NEG_NO_SYSCALL 0
#endif
static int do_fstat(fstat_fn fn, int fd, struct stat *st) {
  guard(fd);
  int ret = fn(fd, st);
  /* glibc >= 2.33 answers a negative fd itself, without a system call
   * (strace shows nothing): so does the log */
  if (FSTAT_NEG_NO_SYSCALL && fd < 0) return ret;
  BADFD(FSTAT_NAME, FSTAT_ARGS(st));
  return ret;
}
EXPORT int fstat(int fd, struct stat *st) {
  if (UNLIKELY(!R.fstat)) resolve_all();
  return do_fstat(R.fstat, fd, st);
}
EXPORT int fstat64(int fd, struct stat64 *st) {
  if (UNLIKELY(!R.fstat64)) resolve_all();
  return do_fstat(R.fstat64 ? R.fstat64 : R.fstat, fd, (struct stat *)st);
}
/* binaries built against glibc < 2.33 call __fxstat(_STAT_VER, fd, buf),
 * which issues the fstat system call */
typedef int (*fxstat_fn)(int, int, void *);
static int do_fxstat(void **slot, const char *name, int ver, int fd, void *st) {
  fxstat_fn real = (fxstat_fn)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!real) { real = (fxstat_fn)dlsym(RTLD_NEXT, name); __atomic_store_n(slot, (void *)real, __ATOMIC_RELEASE); }
  if (!real) { errno = ENOSYS; return -1; }
  guard(fd);
  int ret = real(ver, fd, st);
  BADFD("fstat", (ob_s(b, ", "), ob_ptr(b, st)));   /* glibc's compat __fxstat: the fstat system call */
  return ret;
}
EXPORT int __fxstat(int ver, int fd, struct stat *st) { static void *s; return do_fxstat(&s, "__fxstat", ver, fd, st); }
EXPORT int __fxstat64(int ver, int fd, struct stat64 *st) { static void *s; return do_fxstat(&s, "__fxstat64", ver, fd, st); }

/* fstatat and friends: EBADF means a bad dirfd (or fd with AT_EMPTY_PATH) */
static void ob_statpath(struct ob *b, const char *path) {
  char t[260]; int plen = -1;
  if (path && safe_copy(t, path, 1) == 0) {
    plen = 0;
    while (plen < 257 && safe_copy(t + plen, path + plen, 1) == 0 && t[plen]) plen++;
  }
  if (plen < 0) { ob_ptr(b, path); return; }
  ob_c(b, '"'); ob_esc(b, t, plen > 256 ? 256 : plen, 0); ob_c(b, '"'); if (plen > 256) ob_s(b, "...");
}
typedef int (*fstatat_fn)(int, const char *, void *, int);
static int do_fstatat(void **slot, const char *name, int fd, const char *path, void *st, int flags) {
  fstatat_fn real = (fstatat_fn)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!real) { real = (fstatat_fn)dlsym(RTLD_NEXT, name); __atomic_store_n(slot, (void *)real, __ATOMIC_RELEASE); }
  if (!real) { errno = ENOSYS; return -1; }
  if (fd != AT_FDCWD) guard(fd);
  int ret = real(fd, path, st, flags);
  BADFD("newfstatat", (ob_s(b, ", "), ob_statpath(b, path), ob_s(b, ", "), ob_ptr(b, st), ob_s(b, ", "),
                       ob_flagset(b, (unsigned)flags, AT_NAMES)));
  return ret;
}
EXPORT int fstatat(int fd, const char *path, struct stat *st, int flags) {
  static void *s; return do_fstatat(&s, "fstatat", fd, path, st, flags);
}
EXPORT int fstatat64(int fd, const char *path, struct stat64 *st, int flags) {
  static void *s; return do_fstatat(&s, "fstatat64", fd, path, st, flags);
}
typedef int (*fxstatat_fn)(int, int, const char *, void *, int);
static int do_fxstatat(void **slot, const char *name, int ver, int fd, const char *path, void *st, int flags) {
  fxstatat_fn real = (fxstatat_fn)__atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!real) { real = (fxstatat_fn)dlsym(RTLD_NEXT, name); __atomic_store_n(slot, (void *)real, __ATOMIC_RELEASE); }
  if (!real) { errno = ENOSYS; return -1; }
  if (fd != AT_FDCWD) guard(fd);
  int ret = real(ver, fd, path, st, flags);
  BADFD("newfstatat", (ob_s(b, ", "), ob_statpath(b, path), ob_s(b, ", "), ob_ptr(b, st), ob_s(b, ", "),
                       ob_flagset(b, (unsigned)flags, AT_NAMES)));
  return ret;
}
EXPORT int __fxstatat(int ver, int fd, const char *path, struct stat *st, int flags) {
  static void *s; return do_fxstatat(&s, "__fxstatat", ver, fd, path, st, flags);
}
EXPORT int __fxstatat64(int ver, int fd, const char *path, struct stat64 *st, int flags) {
  static void *s; return do_fxstatat(&s, "__fxstatat64", ver, fd, path, st, flags);
}
typedef int (*statx_fn)(int, const char *, int, unsigned, void *);
EXPORT int statx(int fd, const char *path, int flags, unsigned mask, struct statx *sx) {
  static void *slot;
  statx_fn real = (statx_fn)__atomic_load_n(&slot, __ATOMIC_ACQUIRE);
  if (!real) { real = (statx_fn)dlsym(RTLD_NEXT, "statx"); __atomic_store_n(&slot, (void *)real, __ATOMIC_RELEASE); }
  if (!real) { errno = ENOSYS; return -1; }
  if (fd != AT_FDCWD) guard(fd);
  int ret = real(fd, path, flags, mask, sx);
  BADFD("statx", (ob_s(b, ", "), ob_statpath(b, path), ob_s(b, ", "),
                  ob_s(b, (flags & 0x6000) == 0x2000 ? "AT_STATX_FORCE_SYNC" :
                          (flags & 0x6000) == 0x4000 ? "AT_STATX_DONT_SYNC" : "AT_STATX_SYNC_AS_STAT"),
                  (flags & ~0x6000) ? (ob_c(b, '|'), ob_flagset(b, (unsigned)flags & ~0x6000u, AT_NAMES)) : (void)0,
                  ob_s(b, ", "), ob_flagset(b, mask, STATX_NAMES), ob_s(b, ", "), ob_ptr(b, sx)));
  return ret;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags) {
  if (UNLIKELY(!R.sendmsg)) resolve_all();
  guard(fd);
  ssize_t ret = R.sendmsg(fd, (void *)m, flags);
  BADFD("sendmsg", (ob_s(b, ", "), ob_msghdr(b, m, 1), ob_s(b, ", "), ob_flagset(b, (unsigned)flags, MSG_NAMES)));
  return ret;
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags) {
  if (UNLIKELY(!R.recvmsg)) resolve_all();
  guard(fd);
  ssize_t ret = R.recvmsg(fd, m, flags);
  BADFD("recvmsg", (ob_s(b, ", "), ob_msghdr(b, m, 0), ob_s(b, ", "), ob_flagset(b, (unsigned)flags, MSG_NAMES)));
  return ret;
}

/* ---- calls that make fds without open()
 *
 * Logged whatever they return, as strace prints them (pipe() as the
 * pipe2(..., 0) glibc issues, eventfd() as eventfd2, signalfd() as
 * signalfd4); the new fds decorated.  Arguments are taken before the call,
 * results after it. */

static void *real_sym(void **slot, const char *name) {
  void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!p) {
    int save = errno;
    p = dlsym(RTLD_NEXT, name);
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    errno = save;
  }
  return p;
}

static const struct rt_flag PIPE_NAMES[] = {
  {O_NONBLOCK, "O_NONBLOCK"}, {O_DIRECT, "O_DIRECT"}, {O_CLOEXEC, "O_CLOEXEC"},
  {0x200000 /* O_NOTIFICATION_PIPE (= O_EXCL on x86) */, "O_NOTIFICATION_PIPE"}, {0, 0}};

static void ob_fdpair(struct ob *b, const int *fds, int ok) {
  if (!ok || !fds) { ob_ptr(b, fds); return; }
  ob_c(b, '['); ob_fd(b, fds[0]); ob_s(b, ", "); ob_fd(b, fds[1]); ob_c(b, ']');
}

#define FDMAKE_BEGIN(type, realname, ...)                        \
  static void *slot;                                              \
  type real = (type)real_sym(&slot, realname);                    \
  if (!real) { errno = ENOSYS; return -1; }                       \
  int on = tracing_own();                                         \
  if (!on) return real(__VA_ARGS__);                              \
  t_busy++;                                                       \
  struct rec r; rec_begin(&r, on);                                \
  struct ob *b = &r.b;                                            \
  t_busy--;                                                       \
  int ret = real(__VA_ARGS__);                                    \
  int e = errno;                                                  \
  t_busy++;
#define FDMAKE_END(is_fd)                                         \
  rec_res_int(&r, ret, e, is_fd); rec_emit(&r);                   \
  t_busy--; errno = e; return ret;

typedef int (*pipe_fn)(int *);
typedef int (*pipe2_fn)(int *, int);
static int do_pipe2(int *fds, int flags, int plain) {
  FDMAKE_BEGIN(pipe2_fn, "pipe2", fds, flags)
  (void)plain;
  ob_s(b, "pipe2("); ob_fdpair(b, fds, ret == 0); ob_s(b, ", "); ob_flagset(b, (unsigned)flags, PIPE_NAMES);
  FDMAKE_END(0)
}
EXPORT int pipe(int fds[2]) { return do_pipe2(fds, 0, 1); }
EXPORT int __pipe(int fds[2]) { return do_pipe2(fds, 0, 1); }
EXPORT int pipe2(int fds[2], int flags) { return do_pipe2(fds, flags, 0); }

/* opendir/closedir: glibc opens and closes a directory's fd inside libc
 * (the _nocancel calls), which no hook sees; strace shows those calls, and
 * a close-all sweep over a /proc/self/fd listing is told by them,
 * so they are logged as strace prints them.  dirfd() only reads the DIR. */
typedef DIR *(*opendir_fn)(const char *);
typedef int (*closedir_fn)(DIR *);
EXPORT DIR *opendir(const char *path) {
  static void *slot;
  opendir_fn real = (opendir_fn)real_sym(&slot, "opendir");
  if (!real) { errno = ENOSYS; return 0; }
  int on = tracing_own();
  if (!on) return real(path);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  DIR *d = real(path);
  int e = errno;
  log_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_DIRECTORY, 0,
             d ? dirfd(d) : -1, e, &r);
  t_busy--; errno = e; return d;
}
EXPORT int closedir(DIR *d) {
  static void *slot;
  closedir_fn real = (closedir_fn)real_sym(&slot, "closedir");
  if (!real) { errno = ENOSYS; return -1; }
  int on = d ? tracing_own() : 0;
  if (!on) return real(d);
  int fd = dirfd(d);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "close("); ob_fd(&r.b, fd);
  int ret = real(d); int e = errno;
  rec_res_int(&r, ret, e, 0);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* unshare: CLONE_FILES gives the calling thread a table of its own (the fd
 * model follows it) */
static const struct rt_flag UNSHARE_NAMES[] = {
  {CLONE_FILES, "CLONE_FILES"}, {CLONE_FS, "CLONE_FS"}, {CLONE_NEWNS, "CLONE_NEWNS"},
  {CLONE_SYSVSEM, "CLONE_SYSVSEM"}, {CLONE_NEWUTS, "CLONE_NEWUTS"},
  {CLONE_NEWIPC, "CLONE_NEWIPC"}, {CLONE_NEWUSER, "CLONE_NEWUSER"},
  {CLONE_NEWPID, "CLONE_NEWPID"}, {CLONE_NEWNET, "CLONE_NEWNET"},
  {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {0, 0}};
typedef int (*unshare_fn)(int);
EXPORT int unshare(int flags) {
  static void *slot;
  unshare_fn real = (unshare_fn)real_sym(&slot, "unshare");
  if (!real) { errno = ENOSYS; return -1; }
  int on = tracing_own();
  if (!on) return real(flags);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "unshare("); ob_flagset(&r.b, (unsigned)flags, UNSHARE_NAMES);
  int ret = real(flags); int e = errno;
  rec_res_int(&r, ret, e, 0);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

static const char *af_name(int d) {
  switch (d) {
    case AF_UNSPEC: return "AF_UNSPEC"; case AF_UNIX: return "AF_UNIX"; case AF_INET: return "AF_INET";
    case AF_INET6: return "AF_INET6"; case AF_NETLINK: return "AF_NETLINK"; case AF_PACKET: return "AF_PACKET";
    case 29: return "AF_CAN"; case 31: return "AF_BLUETOOTH"; case 38: return "AF_ALG";
    case 40: return "AF_VSOCK"; case 44: return "AF_XDP";
    default: return 0;
  }
}
static void ob_socktype(struct ob *b, int type) {
  static const char *const t[11] = {0, "SOCK_STREAM", "SOCK_DGRAM", "SOCK_RAW", "SOCK_RDM",
                                    "SOCK_SEQPACKET", "SOCK_DCCP", 0, 0, 0, "SOCK_PACKET"};
  int base = type & 0xf;
  if (base < 11 && t[base]) ob_s(b, t[base]); else ob_x(b, (unsigned)base);
  unsigned rest = (unsigned)type & ~0xfu;
  static const struct rt_flag fl[] = {{SOCK_CLOEXEC, "SOCK_CLOEXEC"}, {SOCK_NONBLOCK, "SOCK_NONBLOCK"}, {0, 0}};
  if (rest) { ob_c(b, '|'); ob_flagset(b, rest, fl); }
}
static void ob_sockproto(struct ob *b, int domain, int proto) {
  const char *n = 0;
  if (domain == AF_INET || domain == AF_INET6) {
    switch (proto) {
      case 0: n = "IPPROTO_IP"; break; case 1: n = "IPPROTO_ICMP"; break; case 6: n = "IPPROTO_TCP"; break;
      case 17: n = "IPPROTO_UDP"; break; case 41: n = "IPPROTO_IPV6"; break; case 58: n = "IPPROTO_ICMPV6"; break;
      case 132: n = "IPPROTO_SCTP"; break; case 136: n = "IPPROTO_UDPLITE"; break;
      case 255: n = "IPPROTO_RAW"; break; case 262: n = "IPPROTO_MPTCP"; break;
    }
  } else if (domain == AF_NETLINK) {
    static const char *const nl[23] = {"NETLINK_ROUTE", 0, "NETLINK_USERSOCK", 0, "NETLINK_SOCK_DIAG",
      "NETLINK_NFLOG", "NETLINK_XFRM", "NETLINK_SELINUX", "NETLINK_ISCSI", "NETLINK_AUDIT",
      "NETLINK_FIB_LOOKUP", "NETLINK_CONNECTOR", "NETLINK_NETFILTER", "NETLINK_IP6_FW",
      "NETLINK_DNRTMSG", "NETLINK_KOBJECT_UEVENT", "NETLINK_GENERIC", 0, "NETLINK_SCSITRANSPORT",
      "NETLINK_ECRYPTFS", "NETLINK_RDMA", "NETLINK_CRYPTO", "NETLINK_SMC"};
    if (proto >= 0 && proto < 23) n = nl[proto];
  }
  if (n) ob_s(b, n); else ob_d(b, proto);
}
static void ob_sockargs(struct ob *b, int domain, int type, int proto) {
  const char *d = af_name(domain);
  if (d) ob_s(b, d); else ob_d(b, domain);
  ob_s(b, ", "); ob_socktype(b, type); ob_s(b, ", "); ob_sockproto(b, domain, proto);
}

typedef int (*socket_fn)(int, int, int);
EXPORT int socket(int domain, int type, int proto) {
  FDMAKE_BEGIN(socket_fn, "socket", domain, type, proto)
  ob_s(b, "socket("); ob_sockargs(b, domain, type, proto);
  FDMAKE_END(1)
}
typedef int (*socketpair_fn)(int, int, int, int *);
EXPORT int socketpair(int domain, int type, int proto, int sv[2]) {
  FDMAKE_BEGIN(socketpair_fn, "socketpair", domain, type, proto, sv)
  ob_s(b, "socketpair("); ob_sockargs(b, domain, type, proto); ob_s(b, ", "); ob_fdpair(b, sv, ret == 0);
  FDMAKE_END(0)
}

/* accept: the address as a pointer (strace decodes it), its length as
 * strace's [IN => OUT] */
static void ob_accept(struct ob *b, int fd, void *addr, socklen_t *len, socklen_t inlen, int ok) {
  ob_fd(b, fd); ob_s(b, ", "); ob_ptr(b, addr); ob_s(b, ", ");
  if (!len) { ob_s(b, "NULL"); return; }
  socklen_t out;
  if (safe_copy(&out, len, sizeof out)) { ob_ptr(b, len); return; }
  ob_c(b, '['); ob_u(b, inlen);
  if (ok && out != inlen) { ob_s(b, " => "); ob_u(b, out); }
  ob_c(b, ']');
}
typedef int (*accept_fn)(int, void *, socklen_t *);
typedef int (*accept4_fn)(int, void *, socklen_t *, int);
EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len) {
  socklen_t inlen = 0;
  if (len) safe_copy(&inlen, len, sizeof inlen);
  guard(fd);
  FDMAKE_BEGIN(accept_fn, "accept", fd, addr, len)
  ob_s(b, "accept("); ob_accept(b, fd, addr, len, inlen, ret >= 0);
  FDMAKE_END(1)
}
EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
  socklen_t inlen = 0;
  if (len) safe_copy(&inlen, len, sizeof inlen);
  guard(fd);
  FDMAKE_BEGIN(accept4_fn, "accept4", fd, addr, len, flags)
  static const struct rt_flag fl[] = {{SOCK_CLOEXEC, "SOCK_CLOEXEC"}, {SOCK_NONBLOCK, "SOCK_NONBLOCK"}, {0, 0}};
  ob_s(b, "accept4("); ob_accept(b, fd, addr, len, inlen, ret >= 0); ob_s(b, ", "); ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}

typedef int (*eventfd_fn)(unsigned, int);
EXPORT int eventfd(unsigned count, int flags) {
  FDMAKE_BEGIN(eventfd_fn, "eventfd", count, flags)
  static const struct rt_flag fl[] = {{1, "EFD_SEMAPHORE"}, {O_CLOEXEC, "EFD_CLOEXEC"}, {O_NONBLOCK, "EFD_NONBLOCK"}, {0, 0}};
  ob_s(b, "eventfd2("); ob_u(b, count); ob_s(b, ", "); ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}
typedef int (*memfd_fn)(const char *, unsigned);
EXPORT int memfd_create(const char *name, unsigned flags) {
  FDMAKE_BEGIN(memfd_fn, "memfd_create", name, flags)
  static const struct rt_flag fl[] = {{1, "MFD_CLOEXEC"}, {2, "MFD_ALLOW_SEALING"}, {4, "MFD_HUGETLB"},
                                      {8, "MFD_NOEXEC_SEAL"}, {0x10, "MFD_EXEC"}, {0, 0}};
  ob_s(b, "memfd_create("); ob_statpath(b, name); ob_s(b, ", "); ob_flagset(b, flags, fl);
  FDMAKE_END(1)
}
typedef int (*timerfd_fn)(int, int);
EXPORT int timerfd_create(int clock, int flags) {
  FDMAKE_BEGIN(timerfd_fn, "timerfd_create", clock, flags)
  static const char *const clocks[12] = {"CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_PROCESS_CPUTIME_ID",
    "CLOCK_THREAD_CPUTIME_ID", "CLOCK_MONOTONIC_RAW", "CLOCK_REALTIME_COARSE", "CLOCK_MONOTONIC_COARSE",
    "CLOCK_BOOTTIME", "CLOCK_REALTIME_ALARM", "CLOCK_BOOTTIME_ALARM", 0, "CLOCK_TAI"};
  static const struct rt_flag fl[] = {{O_CLOEXEC, "TFD_CLOEXEC"}, {O_NONBLOCK, "TFD_NONBLOCK"}, {0, 0}};
  ob_s(b, "timerfd_create(");
  if (clock >= 0 && clock < 12 && clocks[clock]) ob_s(b, clocks[clock]); else ob_d(b, clock);
  ob_s(b, ", "); ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}

/* a signal set as strace prints it: [INT TERM RT_1], ~[...] when at least
 * half the signals are in it */
static void ob_signame_short(struct ob *b, int sig) {
  if (sig == 29) { ob_s(b, "IO"); return; }
  if (sig == 32) { ob_s(b, "RTMIN"); return; }
  if (sig > 32) { ob_s(b, "RT_"); ob_u(b, (unsigned)(sig - 32)); return; }
  const char *a = sigabbrev_np(sig);
  if (a) ob_s(b, a); else ob_d(b, sig);
}
static void ob_sigset(struct ob *b, const void *set, size_t size) {
  uint64_t m = 0;
  if (!set || size > 8 || safe_copy(&m, set, size ? size : 1)) { ob_ptr(b, set); return; }
  if (size < 8) m &= (1ULL << (size * 8)) - 1;
  int nsig = (int)size * 8, n = __builtin_popcountll(m), inv = n >= nsig / 2 && nsig;
  if (inv) { ob_c(b, '~'); m = ~m; if (nsig < 64) m &= (1ULL << nsig) - 1; }
  ob_c(b, '[');
  int first = 1;
  for (int s = 1; s <= nsig; s++)
    if (m & (1ULL << (s - 1))) { if (!first) ob_c(b, ' '); ob_signame_short(b, s); first = 0; }
  ob_c(b, ']');
}
typedef int (*signalfd_fn)(int, const sigset_t *, int);
EXPORT int signalfd(int fd, const sigset_t *mask, int flags) {
  if (fd >= 0) guard(fd);
  FDMAKE_BEGIN(signalfd_fn, "signalfd", fd, mask, flags)
  static const struct rt_flag fl[] = {{O_CLOEXEC, "SFD_CLOEXEC"}, {O_NONBLOCK, "SFD_NONBLOCK"}, {0, 0}};
  ob_s(b, "signalfd4("); ob_fd(b, fd); ob_s(b, ", "); ob_sigset(b, mask, 8); ob_s(b, ", 8, ");
  ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}
typedef int (*int1_make_fn)(int);
typedef int (*int0_make_fn)(void);
EXPORT int epoll_create(int size) {
  FDMAKE_BEGIN(int1_make_fn, "epoll_create", size)
  ob_s(b, "epoll_create("); ob_d(b, size);
  FDMAKE_END(1)
}
EXPORT int epoll_create1(int flags) {
  FDMAKE_BEGIN(int1_make_fn, "epoll_create1", flags)
  static const struct rt_flag fl[] = {{O_CLOEXEC, "EPOLL_CLOEXEC"}, {0, 0}};
  ob_s(b, "epoll_create1("); ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}
EXPORT int inotify_init(void) {
  FDMAKE_BEGIN(int0_make_fn, "inotify_init")
  ob_s(b, "inotify_init(");
  FDMAKE_END(1)
}
EXPORT int inotify_init1(int flags) {
  FDMAKE_BEGIN(int1_make_fn, "inotify_init1", flags)
  static const struct rt_flag fl[] = {{O_NONBLOCK, "IN_NONBLOCK"}, {O_CLOEXEC, "IN_CLOEXEC"}, {0, 0}};
  ob_s(b, "inotify_init1("); ob_flagset(b, (unsigned)flags, fl);
  FDMAKE_END(1)
}

static const struct rt_flag PROT_NAMES[] = {
  {PROT_READ, "PROT_READ"}, {PROT_WRITE, "PROT_WRITE"}, {PROT_EXEC, "PROT_EXEC"},
  {0x8, "PROT_SEM"}, {PROT_GROWSDOWN, "PROT_GROWSDOWN"}, {PROT_GROWSUP, "PROT_GROWSUP"}, {0, 0}};
static const struct rt_flag MAP_NAMES[] = {
  {MAP_FIXED, "MAP_FIXED"}, {MAP_ANONYMOUS, "MAP_ANONYMOUS"}, {MAP_32BIT, "MAP_32BIT"},
  {MAP_GROWSDOWN, "MAP_GROWSDOWN"}, {MAP_DENYWRITE, "MAP_DENYWRITE"},
  {MAP_EXECUTABLE, "MAP_EXECUTABLE"}, {MAP_LOCKED, "MAP_LOCKED"}, {MAP_NORESERVE, "MAP_NORESERVE"},
  {MAP_POPULATE, "MAP_POPULATE"}, {MAP_NONBLOCK, "MAP_NONBLOCK"}, {MAP_STACK, "MAP_STACK"},
  {MAP_HUGETLB, "MAP_HUGETLB"}, {MAP_SYNC, "MAP_SYNC"}, {MAP_FIXED_NOREPLACE, "MAP_FIXED_NOREPLACE"},
  {0, 0}};

static void *do_mmap(mmap_fn fn, void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!(flags & MAP_ANONYMOUS)) guard(fd);
  if (UNLIKELY(flags & MAP_FIXED)) win_abandon_if((uintptr_t)addr, len);
  int on = tracing();
  if (!on) return fn(addr, len, prot, flags, fd, off);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  struct ob *b = &r.b;
  ob_s(b, "mmap("); ob_ptr(b, addr); ob_s(b, ", "); ob_u(b, len); ob_s(b, ", ");
  if (prot) ob_flags(b, (unsigned)prot, PROT_NAMES); else ob_s(b, "PROT_NONE");
  ob_s(b, ", ");
  int type = flags & 0xf;
  ob_s(b, type == MAP_SHARED ? "MAP_SHARED" : type == MAP_PRIVATE ? "MAP_PRIVATE"
                            : type == MAP_SHARED_VALIDATE ? "MAP_SHARED_VALIDATE" : "0");
  if (flags & ~0xf) { ob_c(b, '|'); ob_flags(b, (unsigned)flags & ~0xfu, MAP_NAMES); }
  ob_s(b, ", "); if (fd >= 0) ob_fd(b, fd); else ob_d(b, fd);
  ob_s(b, ", "); ob_x(b, (unsigned long long)off);
  void *ret = fn(addr, len, prot, flags, fd, off); int e = errno;
  rec_args_done(&r);
  ob_s(b, " = "); if (ret == MAP_FAILED) ob_err(b, e); else ob_x(b, (uintptr_t)ret);
  rec_dur(&r); rec_emit(&r);
  t_busy--; errno = e; return ret;
}
EXPORT void *mmap(void *a, size_t l, int p, int f, int fd, off_t o) {
  if (UNLIKELY(!R.mmap)) resolve_all();
  return do_mmap(R.mmap, a, l, p, f, fd, o);
}
EXPORT void *mmap64(void *a, size_t l, int p, int f, int fd, off_t o) {
  if (UNLIKELY(!R.mmap64)) resolve_all();
  return do_mmap(R.mmap64 ? R.mmap64 : R.mmap, a, l, p, f, fd, o);
}

EXPORT int munmap(void *addr, size_t len) {
  if (UNLIKELY(!R.munmap)) resolve_all();
  win_abandon_if((uintptr_t)addr, len);
  int on = tracing();
  if (!on) return R.munmap(addr, len);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  ob_s(&r.b, "munmap("); ob_ptr(&r.b, addr); ob_s(&r.b, ", "); ob_u(&r.b, len);
  int ret = R.munmap(addr, len); int e = errno;
  rec_res_int(&r, ret, e, 0); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

EXPORT void *mremap(void *old, size_t oldsz, size_t newsz, int flags, ...) {
  va_list ap; va_start(ap, flags); void *newaddr = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.mremap)) resolve_all();
  win_abandon_if((uintptr_t)old, oldsz);
  if (flags & MREMAP_FIXED) win_abandon_if((uintptr_t)newaddr, newsz);
  int on = tracing();
  if (!on) return R.mremap(old, oldsz, newsz, flags, newaddr);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  struct ob *b = &r.b;
  ob_s(b, "mremap("); ob_ptr(b, old); ob_s(b, ", "); ob_u(b, oldsz); ob_s(b, ", "); ob_u(b, newsz);
  ob_s(b, ", ");
  static const struct rt_flag mr[] = {{MREMAP_MAYMOVE, "MREMAP_MAYMOVE"}, {MREMAP_FIXED, "MREMAP_FIXED"},
                                      {4, "MREMAP_DONTUNMAP"}, {0, 0}};
  ob_flags(b, (unsigned)flags, mr);
  if (flags & (MREMAP_FIXED | 4)) { ob_s(b, ", "); ob_ptr(b, newaddr); }
  void *ret = R.mremap(old, oldsz, newsz, flags, newaddr); int e = errno;
  rec_args_done(&r);
  ob_s(b, " = "); if (ret == MAP_FAILED) ob_err(b, e); else ob_x(b, (uintptr_t)ret);
  rec_dur(&r); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* ---- processes */

EXPORT pid_t fork(void) {
  if (UNLIKELY(!R.fork)) resolve_all();
  int on = tracing_own();
  if (!on) return R.fork();
  struct rec r; rec_begin(&r, on);
  pid_t ret = R.fork(); int e = errno;
  if (ret == 0) { errno = e; return 0; }  /* the child logs into its own file */
  t_busy++;
  ob_s(&r.b, "fork(");
  rec_res_int(&r, ret, e, 0); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* glibc's _Fork runs no atfork handlers: the child adopts here */
typedef pid_t (*xfork_fn)(void);
EXPORT pid_t _Fork(void) {
  static xfork_fn real;
  if (!real) real = (xfork_fn)dlsym(RTLD_NEXT, "_Fork");
  if (!real) { errno = ENOSYS; return -1; }
  int on = tracing_own();
  if (!on) return real();
  struct rec r; rec_begin(&r, on);
  pid_t ret = real(); int e = errno;
  if (ret == 0) { tracing_own(); errno = e; return 0; }
  t_busy++;
  ob_s(&r.b, "fork(");
  rec_res_int(&r, ret, e, 0); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* posix_spawn's child runs on our memory (CLONE_VM|CLONE_VFORK) through
 * glibc's internal calls, which no hook sees; after its exec the new image
 * writes PREFIX.CHILD.  The parent logs the child's creation as the vfork it
 * is. */
static int do_spawn(spawn_fn fn, pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                    const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
  if (!fn) return ENOSYS;
  int on = tracing_own();
  if (!on) return fn(pid, path, fa, at, argv, envp);
  pid_t child = 0;
  struct rec r; rec_begin(&r, on);
  int ret = fn(&child, path, fa, at, argv, envp); int e = errno;
  if (pid && ret == 0) *pid = child;
  if (ret == 0) {
    t_busy++;
    ob_s(&r.b, "vfork(");
    rec_res_int(&r, child, 0, 0); rec_emit(&r);
    t_busy--;
  }
  errno = e; return ret;
}
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
  if (UNLIKELY(!R.posix_spawn)) resolve_all();
  return do_spawn(R.posix_spawn, pid, path, fa, at, argv, envp);
}
EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
  if (UNLIKELY(!R.posix_spawnp)) resolve_all();
  return do_spawn(R.posix_spawnp, pid, file, fa, at, argv, envp);
}

/* ---- signal dispositions (see "fatal signals") */

static int watched(int sig) {
  return sig > 0 && sig < NSIGS && g_sig_watch[sig] && __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == 2;
}

static int rt_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (UNLIKELY(!R.sigaction)) resolve_all();
  if (!watched(sig)) return R.sigaction(sig, act, old);
  struct sigaction cur;
  if (R.sigaction(sig, 0, &cur) != 0) return -1;
  int ours = is_ours(&cur);
  struct sigaction shown = ours ? g_sig_prog[sig] : cur;
  /* a child on our memory (vfork) must not change what the parent keeps */
  int shared = syscall(SYS_getpid) != g_pid;
  int ret = 0;
  if (act) {
    if (!shared && !(act->sa_flags & SA_SIGINFO ? act->sa_sigaction != 0 : act->sa_handler != SIG_DFL)) {
      struct sigaction keep = *act;
      ret = install_ours(sig, 0);
      if (ret == 0) g_sig_prog[sig] = keep;
    } else {
      ret = R.sigaction(sig, act, 0);
    }
  }
  if (ret == 0 && old) *old = shown;
  return ret;
}
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return rt_sigaction(sig, act, old);
}
/* glibc's signal(): BSD semantics (SA_RESTART, the signal blocked in its
 * handler); the real one for signals the library does not watch */
typedef sighandler_t (*signal_fn)(int, sighandler_t);
EXPORT sighandler_t signal(int sig, sighandler_t h) {
  static signal_fn real;
  if (!real) real = (signal_fn)dlsym(RTLD_NEXT, "signal");
  if (real && !watched(sig)) return real(sig, h);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  if (sig > 0 && sig < NSIGS) sigaddset(&sa.sa_mask, sig);
  sa.sa_flags = SA_RESTART;
  if (rt_sigaction(sig, &sa, &old) < 0) return SIG_ERR;
  return old.sa_handler;
}

/* ---- the program raises RLIMIT_NOFILE: our fds may now be at numbers it
 * can be handed, so they move above the new limit */
static void nofile_changed(void) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  long cur = nofile_now();
  __atomic_store_n(&g_nofile, cur, __ATOMIC_RELAXED);
  if (cur > 0) lib_evict_range(0, (unsigned long)cur - 1, 0);
}
static int do_setrlimit(setrlimit_fn fn, int res, const struct rlimit *rl) {
  if (!fn) { errno = ENOSYS; return -1; }
  int ret = fn(res, rl);
  int e = errno;
  if (ret == 0 && res == RLIMIT_NOFILE) nofile_changed();
  errno = e; return ret;
}
EXPORT int setrlimit(__rlimit_resource_t res, const struct rlimit *rl) {
  if (UNLIKELY(!R.setrlimit)) resolve_all();
  return do_setrlimit(R.setrlimit, res, rl);
}
EXPORT int setrlimit64(__rlimit_resource_t res, const struct rlimit64 *rl) {
  if (UNLIKELY(!R.setrlimit64)) resolve_all();
  return do_setrlimit(R.setrlimit64 ? R.setrlimit64 : R.setrlimit, res, (const struct rlimit *)rl);
}
static int do_prlimit(prlimit_fn fn, pid_t pid, int res, const struct rlimit *nl, struct rlimit *ol) {
  if (!fn) { errno = ENOSYS; return -1; }
  int ret = fn(pid, res, nl, ol);
  int e = errno;
  if (ret == 0 && nl && res == RLIMIT_NOFILE && (pid == 0 || pid == syscall(SYS_getpid))) nofile_changed();
  errno = e; return ret;
}
EXPORT int prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *nl, struct rlimit *ol) {
  if (UNLIKELY(!R.prlimit)) resolve_all();
  return do_prlimit(R.prlimit, pid, res, nl, ol);
}
EXPORT int prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *nl, struct rlimit64 *ol) {
  if (UNLIKELY(!R.prlimit64)) resolve_all();
  return do_prlimit(R.prlimit64 ? R.prlimit64 : R.prlimit, pid, res, (const struct rlimit *)nl, (struct rlimit *)ol);
}

/* ---- syscall(2): raw calls that are program events */

#if RT_HOOK_SYSCALL
static const struct rt_flag CLONE_NAMES[] = {
  {0x100, "CLONE_VM"}, {0x200, "CLONE_FS"}, {0x400, "CLONE_FILES"}, {0x800, "CLONE_SIGHAND"},
  {0x1000, "CLONE_PIDFD"}, {0x2000, "CLONE_PTRACE"}, {0x4000, "CLONE_VFORK"}, {0x8000, "CLONE_PARENT"},
  {0x10000, "CLONE_THREAD"}, {0x20000, "CLONE_NEWNS"}, {0x40000, "CLONE_SYSVSEM"},
  {0x80000, "CLONE_SETTLS"}, {0x100000, "CLONE_PARENT_SETTID"}, {0x200000, "CLONE_CHILD_CLEARTID"},
  {0x800000, "CLONE_UNTRACED"}, {0x1000000, "CLONE_CHILD_SETTID"}, {0x2000000, "CLONE_NEWCGROUP"},
  {0x4000000, "CLONE_NEWUTS"}, {0x8000000, "CLONE_NEWIPC"}, {0x10000000, "CLONE_NEWUSER"},
  {0x20000000, "CLONE_NEWPID"}, {0x40000000, "CLONE_NEWNET"}, {0x80000000ULL, "CLONE_IO"}, {0, 0}};

static void ob_signame(struct ob *b, unsigned long sig) {
  const char *a = sig && sig < NSIGS ? sigabbrev_np((int)sig) : 0;
  if (a) { ob_s(b, "SIG"); ob_s(b, a); } else ob_u(b, sig);
}

struct clone_args_k { uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls; };

/* A fork-like clone (own memory): logged in the parent like strace shows
 * it; the child adopts at its first hooked call.  A clone on our memory
 * starts the child on another stack: nothing may run after it here. */
static long do_clone(long n, long a, long b, long c, long d, long e, long f) {
  uint64_t flags;
  struct clone_args_k ca;
  memset(&ca, 0, sizeof ca);
  if (n == SYS_clone3) {
    if (safe_copy(&ca, (void *)a, sizeof ca)) return rsys6(n, a, b, c, d, e, f);
    flags = ca.flags;
  } else {
    flags = (uint64_t)a;
  }
  if (flags & (CLONE_VM | CLONE_THREAD)) return rsys6(n, a, b, c, d, e, f);
  int on = tracing_own();
  if (!on) return rsys6(n, a, b, c, d, e, f);
  struct rec r; rec_begin(&r, on);
  long ret = rsys6(n, a, b, c, d, e, f); int err = errno;
  if (ret == 0) { tracing_own(); errno = err; return 0; }   /* the child adopts now */
  t_busy++;
  if (n == SYS_clone3) {
    ob_s(&r.b, "clone3({flags="); ob_flags(&r.b, flags, CLONE_NAMES);
    ob_s(&r.b, ", exit_signal="); ob_signame(&r.b, ca.exit_signal); ob_s(&r.b, "}, "); ob_u(&r.b, (unsigned long)b);
  } else {
    ob_s(&r.b, "clone(child_stack="); ob_ptr(&r.b, (void *)b); ob_s(&r.b, ", flags=");
    unsigned long fl = (unsigned long)a & ~0xffUL;
    if (fl) { ob_flags(&r.b, fl, CLONE_NAMES); ob_c(&r.b, '|'); }
    ob_signame(&r.b, (unsigned long)a & 0xff);
  }
  rec_res_int(&r, ret, err, 0); rec_emit(&r);
  t_busy--; errno = err; return ret;
}

struct open_how_k { uint64_t flags, mode, resolve; };
static const struct rt_flag RESOLVE_NAMES[] = {
  {0x01, "RESOLVE_NO_XDEV"}, {0x02, "RESOLVE_NO_MAGICLINKS"}, {0x04, "RESOLVE_NO_SYMLINKS"},
  {0x08, "RESOLVE_BENEATH"}, {0x10, "RESOLVE_IN_ROOT"}, {0x20, "RESOLVE_CACHED"}, {0, 0}};

/* openat2 has no glibc wrapper: programs reach it through syscall(2) */
static long do_openat2(long dirfd, const char *path, const struct open_how_k *how, long size) {
  int on = tracing_own();
  if (!on) return rsys6(SYS_openat2, dirfd, (long)path, (long)how, size, 0, 0);
  t_busy++;
  struct rec r; rec_begin(&r, on);
  struct ob *b = &r.b;
  struct open_how_k h;
  int have = size >= (long)sizeof h && safe_copy(&h, how, sizeof h) == 0;
  char pbuf[260]; int plen = -1;
  if (path && safe_copy(pbuf, path, 1) == 0) {
    plen = 0;
    while (plen < 257 && safe_copy(pbuf + plen, path + plen, 1) == 0 && pbuf[plen]) plen++;
  }
  long ret = rsys6(SYS_openat2, dirfd, (long)path, (long)how, size, 0, 0); int e = errno;
  ob_s(b, "openat2("); ob_dirfd(b, (int)dirfd); ob_s(b, ", ");
  if (plen < 0) ob_ptr(b, path);
  else { ob_c(b, '"'); ob_esc(b, pbuf, plen > 256 ? 256 : plen, 0); ob_c(b, '"'); if (plen > 256) ob_s(b, "..."); }
  ob_s(b, ", ");
  if (have) {
    ob_s(b, "{flags="); ob_openflags(b, (int)h.flags);
    if (needs_mode((int)h.flags) || h.mode) { ob_s(b, ", mode="); ob_mode(b, (unsigned)h.mode); }
    ob_s(b, ", resolve="); ob_flags(b, h.resolve, RESOLVE_NAMES); ob_c(b, '}');
  } else ob_ptr(b, how);
  ob_s(b, ", "); ob_u(b, (unsigned long)size);
  rec_res_int(&r, ret, e, 1);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* The EBADF-logged calls issued through syscall(2): the raw call as the
 * program asked for it, logged (on EBADF) under the system call's own name
 * and arguments, as strace shows it. */
static long sys_badfd(long nr, long x0, long x1, long x2, long x3, long x4, long x5) {
  long ret = rsys6(nr, x0, x1, x2, x3, x4, x5);
  int fd = (int)x0;
  void *p1 = (void *)x1;
  switch (nr) {
    case SYS_read: BADFD("read", (ob_s(b, ", "), ob_ptr(b, p1), ob_s(b, ", "), ob_u(b, (unsigned long)x2))); break;
    case SYS_write: BADFD("write", (ob_s(b, ", "), ob_data(b, p1, (size_t)x2), ob_s(b, ", "), ob_u(b, (unsigned long)x2))); break;
    case SYS_pread64: BADFD("pread64", (ob_s(b, ", "), ob_ptr(b, p1), ob_s(b, ", "), ob_u(b, (unsigned long)x2), ob_s(b, ", "), ob_d(b, x3))); break;
    case SYS_pwrite64: BADFD("pwrite64", (ob_s(b, ", "), ob_data(b, p1, (size_t)x2), ob_s(b, ", "), ob_u(b, (unsigned long)x2), ob_s(b, ", "), ob_d(b, x3))); break;
    case SYS_readv: BADFD("readv", (ob_s(b, ", "), ob_iov(b, p1, (int)x2, 0), ob_s(b, ", "), ob_d(b, (int)x2))); break;
    case SYS_writev: BADFD("writev", (ob_s(b, ", "), ob_iov(b, p1, (int)x2, 1), ob_s(b, ", "), ob_d(b, (int)x2))); break;
    case SYS_lseek: BADFD("lseek", (ob_s(b, ", "), ob_d(b, x1), ob_s(b, ", "), ob_whence(b, (int)x2))); break;
#ifdef SYS_fstat
    case SYS_fstat: BADFD("fstat", (ob_s(b, ", "), ob_ptr(b, p1))); break;
#endif
    case SYS_newfstatat:
      if (fd != AT_FDCWD)
        BADFD("newfstatat", (ob_s(b, ", "), ob_statpath(b, p1), ob_s(b, ", "), ob_ptr(b, (void *)x2), ob_s(b, ", "),
                             ob_flagset(b, (unsigned)x3, AT_NAMES)));
      break;
    case SYS_sendmsg: BADFD("sendmsg", (ob_s(b, ", "), ob_msghdr(b, p1, 1), ob_s(b, ", "), ob_flagset(b, (unsigned)x2, MSG_NAMES))); break;
    case SYS_recvmsg: BADFD("recvmsg", (ob_s(b, ", "), ob_msghdr(b, p1, 0), ob_s(b, ", "), ob_flagset(b, (unsigned)x2, MSG_NAMES))); break;
  }
  return ret;
}

EXPORT long (syscall)(long n, ...) {
  va_list ap; va_start(ap, n);
  long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
  if (UNLIKELY(!R.close)) resolve_all();
  switch (n) {
    case SYS_close: return close((int)a);
    case SYS_dup: return dup((int)a);
#ifdef SYS_dup2
    case SYS_dup2: return dup2((int)a, (int)b);
#endif
    case SYS_dup3: return dup3((int)a, (int)b, (int)c);
    case SYS_fcntl: return do_fcntl(R.fcntl, (int)a, (int)b, (void *)c);
    case SYS_close_range: return close_range((unsigned)a, (unsigned)b, (int)c);
    case SYS_openat2: return do_openat2(a, (const char *)b, (const struct open_how_k *)c, d);
    case SYS_munmap: win_abandon_if((uintptr_t)a, (uintptr_t)b); return rsys6(n, a, b, c, d, e, f);
    case SYS_mmap:
      if (d & MAP_FIXED) win_abandon_if((uintptr_t)a, (uintptr_t)b);
      return rsys6(n, a, b, c, d, e, f);
    case SYS_mremap:
      win_abandon_if((uintptr_t)a, (uintptr_t)b);
      if (d & MREMAP_FIXED) win_abandon_if((uintptr_t)e, (uintptr_t)c);
      return rsys6(n, a, b, c, d, e, f);
    case SYS_clone: case SYS_clone3: return do_clone(n, a, b, c, d, e, f);
    case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: case SYS_readv: case SYS_writev:
    case SYS_lseek: case SYS_newfstatat: case SYS_sendmsg: case SYS_recvmsg:
#ifdef SYS_fstat
    case SYS_fstat:
#endif
      if ((int)a != AT_FDCWD) guard((int)a);
      return sys_badfd(n, a, b, c, d, e, f);
    case SYS_ioctl: return ioctl((int)a, (unsigned long)b, (void *)c);
    /* fds made without open(): the libc calls, which issue exactly these */
    case SYS_pipe2: return pipe2((int *)a, (int)b);
    case SYS_socket: return socket((int)a, (int)b, (int)c);
    case SYS_socketpair: return socketpair((int)a, (int)b, (int)c, (int *)d);
    case SYS_accept: return accept((int)a, (struct sockaddr *)b, (socklen_t *)c);
    case SYS_accept4: return accept4((int)a, (struct sockaddr *)b, (socklen_t *)c, (int)d);
    case SYS_eventfd2: return eventfd((unsigned)a, (int)b);
    case SYS_memfd_create: return memfd_create((const char *)a, (unsigned)b);
    case SYS_timerfd_create: return timerfd_create((int)a, (int)b);
    case SYS_epoll_create1: return epoll_create1((int)a);
    case SYS_inotify_init1: return inotify_init1((int)a);
    case SYS_prlimit64: case SYS_setrlimit: {
      long r = rsys6(n, a, b, c, d, e, f); int err = errno;
      if (r == 0 && (n == SYS_setrlimit ? a : b) == RLIMIT_NOFILE &&
          (n == SYS_setrlimit || (c && (a == 0 || a == syscall(SYS_getpid))))) nofile_changed();
      errno = err; return r;
    }
    default: return rsys6(n, a, b, c, d, e, f);
  }
}
#endif

/* --------------------------------------------------------------- exec */

static void exec_note(const char *path, int mode) {
  char line[PATH_MAX + 16]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0, 0};
  ob_s(&b, "# exec "); if (path) ob_esc(&b, path, (int)strnlen(path, PATH_MAX), 0);
  b.cut = 0;
  if (mode == 2) { ob_c(&b, '\n'); child_write(b.p, b.n); } else meta_line(&b);
}

static void ob_argv(struct ob *b, char *const argv[]) {
  if (!argv) { ob_s(b, "NULL"); return; }
  ob_c(b, '[');
  for (int i = 0; argv[i]; i++) {
    if (i) ob_s(b, ", ");
    if (i >= 32) { ob_s(b, "..."); break; }
    ob_str(b, argv[i]);
  }
  ob_c(b, ']');
}

static void ob_envp(struct ob *b, char *const envp[]) {
  ob_ptr(b, envp);
  if (envp) { int n = 0; while (envp[n]) n++; ob_s(b, " /* "); ob_u(b, n); ob_s(b, " vars */"); }
}

static void exec_failed(struct rec *r, const char *name, const char *path, int fd,
                        char *const argv[], char *const envp[], int ret, int e) {
  t_busy++;
  ob_s(&r->b, name); ob_c(&r->b, '(');
  if (fd >= 0) ob_fd(&r->b, fd); else ob_str(&r->b, path);
  ob_s(&r->b, ", "); ob_argv(&r->b, argv);
  if (envp) { ob_s(&r->b, ", "); ob_envp(&r->b, envp); }
  rec_res_int(r, ret, e, 0); rec_emit(r);
  t_busy--;
}

#define EXEC_BODY(realfn, name, pathexpr, fdv, envv, ...)          \
  if (UNLIKELY(!R.realfn)) resolve_all();                         \
  if (!R.realfn) { errno = ENOSYS; return -1; }                   \
  int on = tracing_own();                                           \
  if (!on) return R.realfn(__VA_ARGS__);                          \
  struct rec r; rec_begin(&r, on);                                \
  t_busy++; if (on == 1) win_seal(); exec_note(pathexpr, on); if (on == 1) win_finish(); t_busy--; \
  int ret = R.realfn(__VA_ARGS__); int e = errno;                 \
  if (on == 1) win_resume();                                      \
  exec_failed(&r, name, pathexpr, fdv, argv, envv, ret, e);       \
  errno = e; return ret;

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  EXEC_BODY(execve, "execve", path, -1, envp, path, argv, envp)
}
EXPORT int execv(const char *path, char *const argv[]) {
  EXEC_BODY(execv, "execve", path, -1, environ, path, argv)
}
EXPORT int execvp(const char *file, char *const argv[]) {
  EXEC_BODY(execvp, "execve", file, -1, environ, file, argv)
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  EXEC_BODY(execvpe, "execve", file, -1, envp, file, argv, envp)
}
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  guard(fd);
  char path[PATH_MAX + 1]; int n = fd_path(fd, path, sizeof path); if (n < 0) path[0] = 0;
  EXEC_BODY(fexecve, "execveat", path, fd, envp, fd, argv, envp)
}

/* execl family: gather the varargs into a bounded stack array */
#define MAX_EXECL_ARGS 1024
#define EXECL_COLLECT(first, ap, argv)                              \
  char *argv[MAX_EXECL_ARGS + 1]; int argc = 0;                     \
  argv[argc++] = (char *)(first);                                   \
  if (first) { char *a; while ((a = va_arg(ap, char *)) && argc < MAX_EXECL_ARGS) argv[argc++] = a; } \
  argv[argc] = 0;

EXPORT int execl(const char *path, const char *arg, ...) {
  va_list ap; va_start(ap, arg); EXECL_COLLECT(arg, ap, argv); va_end(ap);
  return execve(path, argv, environ);
}
EXPORT int execlp(const char *file, const char *arg, ...) {
  va_list ap; va_start(ap, arg); EXECL_COLLECT(arg, ap, argv); va_end(ap);
  return execvp(file, argv);
}
EXPORT int execle(const char *path, const char *arg, ...) {
  va_list ap; va_start(ap, arg); EXECL_COLLECT(arg, ap, argv);
  char *const *envp = va_arg(ap, char *const *); va_end(ap);
  return execve(path, argv, envp);
}

/* ---------------------------------------------------------------- exit */

EXPORT void _exit(int status) {
  if (UNLIKELY(!R._exit)) resolve_all();
  exit_record(status);
  if (R._exit) R._exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
EXPORT void _Exit(int status) {
  if (UNLIKELY(!R._Exit)) resolve_all();
  exit_record(status);
  if (R._Exit) R._Exit(status);
  syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

/* ------------------------------------------------------------ thread joins
 *
 * pthread_join is the program's own wait for a thread's end, never a call a
 * runtime makes between computing a revoke under its lock and issuing it:
 * logged at return with the entry time, it shows the analyzer when this
 * thread was last in the program, after every call of the joined thread had
 * returned (a deregistration that follows on this thread began after them).
 * `= N` is the function's result (0, or an error number).
 */
EXPORT int pthread_join(pthread_t th, void **retval) {
  if (UNLIKELY(!R.pthread_join)) resolve_all();
  if (UNLIKELY(!R.pthread_join)) return ENOSYS;
  int on = tracing();
  if (!on) return R.pthread_join(th, retval);
  struct rec r; rec_begin(&r, on);
  int ret = R.pthread_join(th, retval);
  int e = errno; t_busy++;
  struct ob *b = &r.b;
  ob_s(b, "pthread_join("); ob_x(b, (uintptr_t)th); ob_s(b, ", ");
  if (retval) ob_x(b, (uintptr_t)retval); else ob_s(b, "NULL");
  rec_args_done(&r); ob_s(b, " = "); ob_d(b, ret);
  rec_dur(&r); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* ---------------------------------------------------------- HSA intent calls
 *
 * Defined here and forwarded to the real runtime (dlsym RTLD_NEXT); logged at
 * return with the entry time so the ioctls issued inside fall in the call's
 * window.  The recursion guard stays off during the real call: those inner
 * ioctls are exactly what must be logged.
 */
typedef int hsa_status_t;
typedef struct { uint64_t handle; } hsa_handle_t;
typedef struct { uint64_t attribute, value; } hsa_pair_t;
typedef struct { int permissions; hsa_handle_t agent; } hsa_access_desc_t;
#define HSA_STATUS_ERROR 0x1000

static void *hsa_sym(void **slot, const char *name) {
  void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (!p) {
    int save = errno;
    p = dlsym(RTLD_NEXT, name);
    if (!p) p = (void *)-1;  /* absent: remember, dlsym failures allocate */
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    errno = save;
  }
  return p == (void *)-1 ? 0 : p;
}

static void ob_status(struct ob *b, hsa_status_t s) { ob_x(b, (uint32_t)s); }
static void ob_out_ptr(struct ob *b, void *const *p, int ok) {
  if (!p) { ob_s(b, "NULL"); return; }
  if (!ok) { ob_x(b, (uintptr_t)p); return; }
  ob_c(b, '['); ob_x(b, (uintptr_t)*p); ob_c(b, ']');
}
static void ob_out_u64(struct ob *b, const uint64_t *p, int ok) {
  if (!p) { ob_s(b, "NULL"); return; }
  if (!ok) { ob_x(b, (uintptr_t)p); return; }
  ob_c(b, '['); ob_x(b, *p); ob_c(b, ']');
}
static void ob_out_fd(struct ob *b, const int *p, int ok) {
  if (!p) { ob_s(b, "NULL"); return; }
  if (!ok) { ob_x(b, (uintptr_t)p); return; }
  ob_c(b, '['); ob_fd(b, *p); ob_c(b, ']');
}
static void ob_agents(struct ob *b, const hsa_handle_t *a, int n) {
  if (!a) { ob_s(b, "NULL"); return; }
  ob_c(b, '[');
  int m = n < 64 ? n : 64;
  for (int i = 0; i < m; i++) { if (i) ob_s(b, ", "); ob_x(b, a[i].handle); }
  if (m < n) ob_s(b, ", ...");
  ob_c(b, ']');
}

#define HSA_BEGIN(fname)                                  \
  static void *slot;                                      \
  fname##_fn real = (fname##_fn)hsa_sym(&slot, #fname);   \
  int on = tracing();                                     \
  struct rec r; if (on) rec_begin(&r, on);                \
  hsa_status_t st = real ? real
#define HSA_END(fname)                                    \
  : HSA_STATUS_ERROR;                                     \
  if (!on) return st;                                     \
  int e = errno; t_busy++;                                \
  struct ob *b = &r.b; (void)b;                           \
  ob_s(b, #fname "(");
#define HSA_FINISH()                                      \
  rec_args_done(&r); ob_s(b, " = "); ob_status(b, st);    \
  rec_dur(&r); rec_emit(&r);                              \
  t_busy--; errno = e; return st;

typedef hsa_status_t (*hsa_amd_memory_lock_fn)(void *, size_t, hsa_handle_t *, int, void **);
EXPORT hsa_status_t hsa_amd_memory_lock(void *host_ptr, size_t size, hsa_handle_t *agents, int num_agent, void **agent_ptr) {
  HSA_BEGIN(hsa_amd_memory_lock)(host_ptr, size, agents, num_agent, agent_ptr) HSA_END(hsa_amd_memory_lock)
  ob_x(b, (uintptr_t)host_ptr); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", ");
  ob_agents(b, agents, num_agent); ob_s(b, ", "); ob_d(b, num_agent); ob_s(b, ", ");
  ob_out_ptr(b, agent_ptr, st == 0);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_memory_lock_to_pool_fn)(void *, size_t, hsa_handle_t *, int, hsa_handle_t, uint32_t, void **);
EXPORT hsa_status_t hsa_amd_memory_lock_to_pool(void *host_ptr, size_t size, hsa_handle_t *agents, int num_agent,
                                                hsa_handle_t pool, uint32_t flags, void **agent_ptr) {
  HSA_BEGIN(hsa_amd_memory_lock_to_pool)(host_ptr, size, agents, num_agent, pool, flags, agent_ptr)
  HSA_END(hsa_amd_memory_lock_to_pool)
  ob_x(b, (uintptr_t)host_ptr); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", ");
  ob_agents(b, agents, num_agent); ob_s(b, ", "); ob_d(b, num_agent); ob_s(b, ", ");
  ob_x(b, pool.handle); ob_s(b, ", "); ob_x(b, flags); ob_s(b, ", ");
  ob_out_ptr(b, agent_ptr, st == 0);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_memory_unlock_fn)(void *);
EXPORT hsa_status_t hsa_amd_memory_unlock(void *host_ptr) {
  HSA_BEGIN(hsa_amd_memory_unlock)(host_ptr) HSA_END(hsa_amd_memory_unlock)
  ob_x(b, (uintptr_t)host_ptr);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_svm_attributes_set_fn)(void *, size_t, hsa_pair_t *, size_t);
EXPORT hsa_status_t hsa_amd_svm_attributes_set(void *ptr, size_t size, hsa_pair_t *list, size_t count) {
  HSA_BEGIN(hsa_amd_svm_attributes_set)(ptr, size, list, count) HSA_END(hsa_amd_svm_attributes_set)
  ob_x(b, (uintptr_t)ptr); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", ");
  if (!list) ob_s(b, "NULL");
  else {
    ob_c(b, '[');
    size_t m = count < MAX_ATTRS ? count : MAX_ATTRS;
    for (size_t i = 0; i < m; i++) {
      if (i) ob_s(b, ", ");
      ob_s(b, "{attribute="); ob_x(b, list[i].attribute); ob_s(b, ", value="); ob_x(b, list[i].value); ob_c(b, '}');
    }
    if (m < count) ob_s(b, ", ...");
    ob_c(b, ']');
  }
  ob_s(b, ", "); ob_u(b, count);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_portable_export_dmabuf_fn)(const void *, size_t, int *, uint64_t *);
EXPORT hsa_status_t hsa_amd_portable_export_dmabuf(const void *ptr, size_t size, int *dmabuf, uint64_t *offset) {
  HSA_BEGIN(hsa_amd_portable_export_dmabuf)(ptr, size, dmabuf, offset) HSA_END(hsa_amd_portable_export_dmabuf)
  ob_x(b, (uintptr_t)ptr); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", ");
  ob_out_fd(b, dmabuf, st == 0); ob_s(b, ", "); ob_out_u64(b, offset, st == 0);
  HSA_FINISH()
}

/* close_dmabuf closes the fd: decorate it before the call */
typedef hsa_status_t (*hsa_amd_portable_close_dmabuf_fn)(int);
EXPORT hsa_status_t hsa_amd_portable_close_dmabuf(int dmabuf) {
  static void *slot;
  hsa_amd_portable_close_dmabuf_fn real = (hsa_amd_portable_close_dmabuf_fn)hsa_sym(&slot, "hsa_amd_portable_close_dmabuf");
  int on = tracing();
  struct rec r;
  if (on) { t_busy++; rec_begin(&r, on); ob_s(&r.b, "hsa_amd_portable_close_dmabuf("); ob_fd(&r.b, dmabuf); t_busy--; }
  hsa_status_t st = real ? real(dmabuf) : HSA_STATUS_ERROR;
  if (!on) return st;
  int e = errno; t_busy++; struct ob *b = &r.b;
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_handle_create_fn)(hsa_handle_t, size_t, int, uint64_t, hsa_handle_t *);
EXPORT hsa_status_t hsa_amd_vmem_handle_create(hsa_handle_t pool, size_t size, int type, uint64_t flags, hsa_handle_t *h) {
  HSA_BEGIN(hsa_amd_vmem_handle_create)(pool, size, type, flags, h) HSA_END(hsa_amd_vmem_handle_create)
  ob_x(b, pool.handle); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", "); ob_d(b, type); ob_s(b, ", ");
  ob_x(b, flags); ob_s(b, ", "); ob_out_u64(b, h ? &h->handle : 0, st == 0);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_handle_release_fn)(hsa_handle_t);
EXPORT hsa_status_t hsa_amd_vmem_handle_release(hsa_handle_t h) {
  HSA_BEGIN(hsa_amd_vmem_handle_release)(h) HSA_END(hsa_amd_vmem_handle_release)
  ob_x(b, h.handle);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_map_fn)(void *, size_t, size_t, hsa_handle_t, uint64_t);
EXPORT hsa_status_t hsa_amd_vmem_map(void *va, size_t size, size_t in_offset, hsa_handle_t h, uint64_t flags) {
  HSA_BEGIN(hsa_amd_vmem_map)(va, size, in_offset, h, flags) HSA_END(hsa_amd_vmem_map)
  ob_x(b, (uintptr_t)va); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", "); ob_x(b, in_offset);
  ob_s(b, ", "); ob_x(b, h.handle); ob_s(b, ", "); ob_x(b, flags);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_unmap_fn)(void *, size_t);
EXPORT hsa_status_t hsa_amd_vmem_unmap(void *va, size_t size) {
  HSA_BEGIN(hsa_amd_vmem_unmap)(va, size) HSA_END(hsa_amd_vmem_unmap)
  ob_x(b, (uintptr_t)va); ob_s(b, ", "); ob_x(b, size);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_set_access_fn)(void *, size_t, const hsa_access_desc_t *, size_t);
EXPORT hsa_status_t hsa_amd_vmem_set_access(void *va, size_t size, const hsa_access_desc_t *desc, size_t cnt) {
  HSA_BEGIN(hsa_amd_vmem_set_access)(va, size, desc, cnt) HSA_END(hsa_amd_vmem_set_access)
  ob_x(b, (uintptr_t)va); ob_s(b, ", "); ob_x(b, size); ob_s(b, ", ");
  if (!desc) ob_s(b, "NULL");
  else {
    ob_c(b, '[');
    size_t m = cnt < 64 ? cnt : 64;
    for (size_t i = 0; i < m; i++) {
      if (i) ob_s(b, ", ");
      ob_s(b, "{permissions="); ob_x(b, (unsigned)desc[i].permissions);
      ob_s(b, ", agent_handle="); ob_x(b, desc[i].agent.handle); ob_c(b, '}');
    }
    if (m < cnt) ob_s(b, ", ...");
    ob_c(b, ']');
  }
  ob_s(b, ", "); ob_u(b, cnt);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_export_shareable_handle_fn)(int *, hsa_handle_t, uint64_t);
EXPORT hsa_status_t hsa_amd_vmem_export_shareable_handle(int *fd, hsa_handle_t h, uint64_t flags) {
  HSA_BEGIN(hsa_amd_vmem_export_shareable_handle)(fd, h, flags) HSA_END(hsa_amd_vmem_export_shareable_handle)
  ob_out_fd(b, fd, st == 0); ob_s(b, ", "); ob_x(b, h.handle); ob_s(b, ", "); ob_x(b, flags);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_import_shareable_handle_fn)(int, hsa_handle_t *);
EXPORT hsa_status_t hsa_amd_vmem_import_shareable_handle(int fd, hsa_handle_t *h) {
  HSA_BEGIN(hsa_amd_vmem_import_shareable_handle)(fd, h) HSA_END(hsa_amd_vmem_import_shareable_handle)
  ob_fd(b, fd); ob_s(b, ", "); ob_out_u64(b, h ? &h->handle : 0, st == 0);
  HSA_FINISH()
}

typedef hsa_status_t (*hsa_amd_vmem_retain_alloc_handle_fn)(hsa_handle_t *, void *);
EXPORT hsa_status_t hsa_amd_vmem_retain_alloc_handle(hsa_handle_t *h, void *addr) {
  HSA_BEGIN(hsa_amd_vmem_retain_alloc_handle)(h, addr) HSA_END(hsa_amd_vmem_retain_alloc_handle)
  ob_out_u64(b, h ? &h->handle : 0, st == 0); ob_s(b, ", "); ob_x(b, (uintptr_t)addr);
  HSA_FINISH()
}
