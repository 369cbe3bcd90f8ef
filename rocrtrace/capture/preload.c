/*
 * librocrtrace: the rocrtrace capture library (LD_PRELOAD).
 *
 * Writes the preload-log dialect (docs/preload-log.md, SPEC 3.2): the lines
 * `strace -f -ttt -T -y -k` would print, with KFD/DRM ioctl structs decoded.
 *
 * Rules this file lives by (ref/prior-art.md section 4):
 *  - hooks never allocate or lock: records are formatted by hand into a stack
 *    buffer and written with ONE raw write() to an O_APPEND fd (< 4096 bytes),
 *    so concurrent threads and processes never tear or merge lines;
 *  - errno is saved right after the real call and restored before returning;
 *  - the library's own work runs under a __thread guard (initial-exec TLS);
 *  - internal calls use raw syscalls: a call to close()/fcntl() from here would
 *    bind to our own hooks, since a preloaded library interposes on itself;
 *  - the log fd is CLOEXEC, moved near RLIMIT_NOFILE and hidden: close, dup2,
 *    dup3, fcntl, close_range and closefrom aimed at it behave as if it were not
 *    open (EBADF; ranges are split around it); if it is lost anyway (raw
 *    syscall close) the next write reopens it.
 *
 * Decisions beyond docs/preload-log.md:
 *  - exec: `# exec PATH` is written before the real call (the call does not
 *    return on success).  If it fails, the execve line follows with its error.
 *    The new image re-initialises from the inherited LD_PRELOAD/ROCRTRACE_*
 *    environment and appends to the same PREFIX.PID file (same pid): a new
 *    `# pid=` header line (no second `# rocrtrace-log 1`), its `# map` lines and
 *    a new `# fd-snapshot start` block, which is the fd table after the kernel
 *    dropped the CLOEXEC fds.
 *  - fork(): logged in the parent as `fork() = CHILD`; the child (pthread_atfork
 *    child handler, so fork() called inside libc is covered too) writes its own
 *    PREFIX.CHILD with a full header.  vfork is not interposed; a vfork child
 *    that calls hooked functions before exec logs into the parent's file.
 *  - open()/open64() are printed as `openat(AT_FDCWD, ...)`, what strace shows
 *    for them on x86_64; closefrom(N) as `close_range(N, 4294967295, 0)`, the
 *    syscall glibc issues for it.
 *  - the program's calls that the library refuses (close of the log fd ...)
 *    are logged with the EBADF the program saw.
 *  - exit: glibc's on_exit() gives the status for both `return` from main and
 *    exit(); _exit/_Exit are hooked as well.  Death by signal and raw
 *    exit_group leave the log without `# exit` (the analyzer calls it cut short).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kfdnames.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __attribute__((tls_model("initial-exec")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define REC_SIZE 4096          /* whole record incl. prefix and frames, < 4096 written */
#define PREFIX_ROOM 48
#define MAX_ATTRS 256
#define MAX_DEVIDS 256
#define MAX_FRAMES 64

/* ------------------------------------------------------------------ state */

static __thread int t_busy TLS;      /* inside the library's own work */
static __thread int t_tid TLS;       /* cached gettid(); reset in the fork child */

static int g_state;                  /* 0 untouched, 1 initialising, 2 on, 3 off */
static int g_logfd = -1;
static int g_pid;
static int g_depth;
static int g_exit_done;
static unsigned long g_lost;
static char g_prefix[PATH_MAX];
static uintptr_t g_self_lo, g_self_hi;  /* our own text: frames there are skipped */
static long g_page;

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
} R;

#define RESOLVE(f) do { if (!R.f) R.f = dlsym(RTLD_NEXT, #f); } while (0)

static void resolve_all(void) {
  RESOLVE(ioctl); RESOLVE(open); RESOLVE(open64); RESOLVE(openat); RESOLVE(openat64);
  RESOLVE(close); RESOLVE(dup); RESOLVE(dup2); RESOLVE(dup3); RESOLVE(fcntl);
  RESOLVE(fcntl64); RESOLVE(close_range); RESOLVE(closefrom); RESOLVE(mmap);
  RESOLVE(mmap64); RESOLVE(munmap); RESOLVE(mremap); RESOLVE(fork); RESOLVE(execve);
  RESOLVE(execvpe); RESOLVE(execv); RESOLVE(execvp); RESOLVE(fexecve); RESOLVE(_exit);
  RESOLVE(_Exit);
}

static void lib_init(void);

/* Tracing on?  Initialises lazily: another library's constructor may call us
 * before our own constructor has run. */
static inline int tracing(void) {
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (UNLIKELY(s == 0)) { lib_init(); s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE); }
  return s == 2 && !t_busy;
}

/* A vfork child (or raw clone) runs on its parent's memory and TLS: its
 * calls would land in the parent's file under the parent's tid, and its
 * closes/dup2s (subprocess children do many) would be read as the parent's.
 * The fd-table, exec and exit hooks pay one getpid() to tell; ioctl and mmap,
 * the hot ones, do not (a vfork child issues neither in practice). */
static inline int tracing_own(void) {
  return tracing() && syscall(SYS_getpid) == g_pid;
}

static inline int logfd(void) { return __atomic_load_n(&g_logfd, __ATOMIC_RELAXED); }
static inline int is_logfd(long fd) { int l = logfd(); return l >= 0 && fd == l; }

static inline int tid(void) {
  if (UNLIKELY(!t_tid)) t_tid = (int)syscall(SYS_gettid);
  return t_tid;
}

/* -------------------------------------------------------------- formatter */

struct ob { char *p; int n, lim, cap, cut; };

static void ob_raw(struct ob *b, const char *s, int len) {
  if (b->cut) return;
  if (b->n + len > b->lim) { b->cut = 1; return; }
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

static void ob_flags(struct ob *b, unsigned long long v, const struct rt_flag *t) {
  if (!v) { ob_c(b, '0'); return; }
  unsigned long long rest = v; int first = 1;
  for (; t->name; t++) {
    if (t->bit && (v & t->bit) == t->bit) {
      if (!first) ob_c(b, '|');
      ob_s(b, t->name); rest &= ~t->bit; first = 0;
    }
  }
  if (rest) { if (!first) ob_c(b, '|'); ob_x(b, rest); }
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
  char p[40]; struct ob o = {p, 0, 39, 40, 0};
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
  if (n >= 0 && n < (int)sizeof c->path && !(s1 & 1) &&
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
  char path[512]; int n = -1;
  if (fd >= 0 && fd <= INT_MAX) n = fd_path(fd, path, sizeof path);
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
  char buf[REC_SIZE];
};

static void rec_begin(struct rec *r) {
  r->b.p = r->buf + PREFIX_ROOM;
  r->b.n = 0; r->b.cut = 0;
  r->b.cap = REC_SIZE - PREFIX_ROOM - 2;  /* + newline + prefix < 4096 */
  /* leave room for the result, duration and the requested frames */
  int reserve = 120 + (g_depth > 0 ? (g_depth > 12 ? 12 : g_depth) * 160 : 0);
  r->b.lim = r->b.cap - reserve;
  clock_gettime(CLOCK_REALTIME, &r->rt);
  clock_gettime(CLOCK_MONOTONIC, &r->m0);
}

/* close the argument list: `...)` if it was cut, then the rest may use the
 * reserve */
static void rec_args_done(struct rec *r) {
  int was_cut = r->b.cut;
  r->b.cut = 0;
  r->b.lim = r->b.cap;
  if (was_cut) ob_s(&r->b, "...");
  ob_c(&r->b, ')');
}

static void rec_dur(struct rec *r) {
  struct timespec m1; clock_gettime(CLOCK_MONOTONIC, &m1);
  long long ns = (long long)(m1.tv_sec - r->m0.tv_sec) * 1000000000LL + (m1.tv_nsec - r->m0.tv_nsec);
  if (ns < 0) ns = 0;
  struct timespec d = {ns / 1000000000LL, ns % 1000000000LL};
  ob_s(&r->b, " <"); ob_time(&r->b, &d); ob_c(&r->b, '>');
}

static void log_write(const char *p, int len);
static void add_frames(struct ob *b);

static void rec_emit(struct rec *r) {
  if (g_depth > 0) add_frames(&r->b);
  r->b.lim = r->b.cap + 1;
  r->b.cut = 0;
  ob_c(&r->b, '\n');
  char pre[PREFIX_ROOM]; struct ob o = {pre, 0, PREFIX_ROOM, PREFIX_ROOM, 0};
  int t = tid(); int w = o.n;
  ob_u(&o, (unsigned)t);
  while (o.n - w < 5) ob_c(&o, ' ');
  ob_c(&o, ' ');
  ob_time(&o, &r->rt); ob_c(&o, ' ');
  char *start = r->b.p - o.n;
  memcpy(start, pre, o.n);
  log_write(start, o.n + r->b.n);
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

/* ------------------------------------------------------------- log file */

static int open_log_fd(void) {
  char path[PATH_MAX + 24]; struct ob o = {path, 0, sizeof path - 1, sizeof path, 0};
  ob_s(&o, g_prefix); ob_c(&o, '.'); ob_u(&o, (unsigned)g_pid);
  if (o.cut) return -1;
  path[o.n] = 0;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);  /* RDWR: init reads the tail */
  if (fd < 0) return -1;
  /* move it high, out of the way of programs that count fds from 3 */
  struct rlimit rl; long target = 1000;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) target = (long)rl.rlim_cur;
  if (target > 65536) target = 65536;
  target -= 5;
  if (target > fd + 1) {
    long h = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, target);
    if (h >= 0) { syscall(SYS_close, fd); fd = (int)h; }
  }
  return fd;
}

static void log_reopen(int stale) {
  int fd = open_log_fd();
  if (fd < 0) return;
  int expect = stale;
  if (!__atomic_compare_exchange_n(&g_logfd, &expect, fd, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    syscall(SYS_close, fd);  /* another thread won */
}

static void log_write(const char *p, int len) {
  for (int tries = 0; tries < 3; tries++) {
    int fd = logfd();
    if (fd < 0) break;
    long n = syscall(SYS_write, fd, p, len);
    if (n == len) return;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EBADF) { log_reopen(fd); continue; }
    break;
  }
  __atomic_add_fetch(&g_lost, 1, __ATOMIC_RELAXED);
}

static void meta_line(struct ob *b) { ob_c(b, '\n'); log_write(b->p, b->n); }

/* ------------------------------------------------------------ mappings */

#define MAXMAPS 2048
#define POOL 262144
struct mapent { uintptr_t lo, hi, off; int path; char perms[5]; };
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

/* NT_GNU_BUILD_ID of an ELF64 file, read with pread into fixed buffers */
static int build_id(const char *path, char *hex, int hexsize) {
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int found = -1;
  Elf64_Ehdr eh;
  if (syscall(SYS_pread64, fd, &eh, sizeof eh, 0) != (long)sizeof eh ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_phentsize != sizeof(Elf64_Phdr))
    goto out;
  for (int i = 0; i < eh.e_phnum && i < 128 && found < 0; i++) {
    Elf64_Phdr ph;
    if (syscall(SYS_pread64, fd, &ph, sizeof ph, eh.e_phoff + (uint64_t)i * sizeof ph) != (long)sizeof ph)
      break;
    if (ph.p_type != PT_NOTE) continue;
    unsigned char note[2048];
    long len = ph.p_filesz < sizeof note ? (long)ph.p_filesz : (long)sizeof note;
    len = syscall(SYS_pread64, fd, note, len, ph.p_offset);
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
        hex[2 * descsz] = 0; found = 0; break;
      }
      pos = next;
    }
  }
out:
  syscall(SYS_close, fd);
  return found;
}

static void print_map(const struct mapent *m, const char *perms) {
  char buf[1024]; struct ob b = {buf, 0, sizeof buf - 1, sizeof buf, 0};
  ob_s(&b, "# map "); ob_hexdigits(&b, m->lo, 1); ob_c(&b, '-'); ob_hexdigits(&b, m->hi, 1);
  ob_c(&b, ' '); ob_s(&b, perms); ob_c(&b, ' '); ob_hexdigits(&b, m->off, 8); ob_c(&b, ' ');
  const char *path = g_pool + m->path;
  ob_esc(&b, path, (int)strlen(path), 0);
  char hex[128];
  if (build_id(path, hex, sizeof hex) == 0) { ob_s(&b, " build-id="); ob_s(&b, hex); }
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
  int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[8192]; int have = 0;
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
      if (perms[2] == 'x' && *s == '/' && !map_known(lo, hi, off, s)) {
        int len = (int)strlen(s) + 1, n0 = g_nmaps;
        if (n0 < MAXMAPS && g_pool_used + len <= POOL) {
          memcpy(g_pool + g_pool_used, s, len);
          g_maps[n0] = (struct mapent){lo, hi, off, g_pool_used, {perms[0], perms[1], perms[2], perms[3], 0}};
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
    syscall(SYS_close, fd);
  }
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

static void fd_snapshot(const char *title) {
  char line[600]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0};
  ob_s(&b, title); meta_line(&b);
  int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  char dbuf[4096];
  for (;;) {
    long n = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf);
    if (n <= 0) break;
    for (long pos = 0; pos < n;) {
      struct ldirent *d = (struct ldirent *)(dbuf + pos);
      pos += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      long fd = 0; for (const char *c = d->name; *c; c++) fd = fd * 10 + (*c - '0');
      if (fd == dfd || is_logfd(fd)) continue;
      char path[512]; int plen = fd_path(fd, path, sizeof path);
      b.n = 0; b.cut = 0;
      ob_s(&b, "# fd "); ob_d(&b, fd); ob_c(&b, ' ');
      if (plen >= 0) ob_esc(&b, path, plen, 1);
      b.cut = 0;
      meta_line(&b);
    }
  }
  syscall(SYS_close, dfd);
}

/* ------------------------------------------------------------ lifecycle */

static void write_header(int first) {
  char line[PATH_MAX + 200]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0};
  if (first) { ob_s(&b, "# rocrtrace-log 1"); meta_line(&b); }
  b.n = 0;
  char exe[PATH_MAX]; long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) n = 0;
  struct timespec now; clock_gettime(CLOCK_REALTIME, &now);
  ob_s(&b, "# pid="); ob_u(&b, (unsigned)g_pid);
  ob_s(&b, " ppid="); ob_u(&b, (unsigned long)syscall(SYS_getppid));
  ob_s(&b, " exe="); ob_esc(&b, exe, (int)n, 0);
  ob_s(&b, " page_size="); ob_u(&b, (unsigned long)g_page);
  ob_s(&b, " start="); ob_time(&b, &now);
  b.cut = 0; meta_line(&b);
}

static void exit_record(int status) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  if (syscall(SYS_getpid) != g_pid) return;  /* a vfork child's _exit */
  if (__atomic_exchange_n(&g_exit_done, 1, __ATOMIC_ACQ_REL)) return;
  int save = errno; t_busy++;
  fd_snapshot("# fd-snapshot exit");
  char line[80]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0};
  unsigned long lost = __atomic_load_n(&g_lost, __ATOMIC_RELAXED);
  if (lost) { ob_s(&b, "# lost "); ob_u(&b, lost); meta_line(&b); b.n = 0; }
  ob_s(&b, "# exit status="); ob_d(&b, status & 0xff); meta_line(&b);
  t_busy--; errno = save;
}

static void on_exit_handler(int status, void *arg) { (void)arg; exit_record(status); }

/* the fork child: own pid, own file, own header; the parent's log fd is
 * closed so the child can never write into the parent's file */
static void atfork_child(void) {
  t_tid = 0;
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != 2) return;
  int save = errno; t_busy++;
  __atomic_store_n(&g_maps_lock, 0, __ATOMIC_RELEASE);
  int old = logfd();
  g_pid = (int)syscall(SYS_getpid);
  g_lost = 0; g_exit_done = 0;
  int fd = open_log_fd();
  __atomic_store_n(&g_logfd, fd, __ATOMIC_RELEASE);
  if (old >= 0 && old != fd) syscall(SYS_close, old);
  write_header(1);
  int n = __atomic_load_n(&g_nmaps, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++) print_map(&g_maps[i], g_maps[i].perms);
  maps_scan(1);
  fd_snapshot("# fd-snapshot start");
  t_busy--; errno = save;
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
  int fd = open_log_fd();
  if (fd < 0) goto disabled;
  /* A file for our pid ending in `# exec`: we are the image after an execve
   * and continue it.  Any other content is a stale log of a reused pid. */
  int after_exec = 0;
  struct stat st;
  if (syscall(SYS_fstat, fd, &st) == 0 && st.st_size > 0) {
    char tail[PATH_MAX + 16];
    long want = st.st_size < (off_t)sizeof tail ? (long)st.st_size : (long)sizeof tail;
    long n = syscall(SYS_pread64, fd, tail, want, (long)st.st_size - want);
    if (n > 1 && tail[n - 1] == '\n') {
      long i = n - 2;
      while (i >= 0 && tail[i] != '\n') i--;
      after_exec = n - (i + 1) > 7 && memcmp(tail + i + 1, "# exec ", 7) == 0;
    }
    if (!after_exec) syscall(SYS_ftruncate, fd, 0);
  }
  __atomic_store_n(&g_logfd, fd, __ATOMIC_RELEASE);
  dl_iterate_phdr(self_range_cb, (void *)(uintptr_t)&lib_init);
  if (g_depth > 0) { void *pcs[4]; backtrace(pcs, 4); }
  pthread_atfork(0, 0, atfork_child);
  on_exit(on_exit_handler, 0);
  write_header(!after_exec);
  maps_scan(1);
  fd_snapshot("# fd-snapshot start");
  t_busy--; errno = save;
  __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
  return;
disabled:
  t_busy--; errno = save;
  __atomic_store_n(&g_state, 3, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void rt_ctor(void) { lib_init(); }

/* ------------------------------------------------------------ ioctl decode */

enum kind { K_NONE, K_SVM, K_EXPORT, K_IMPORT, K_INFO, K_ALLOC, K_FREE, K_MAP, K_UNMAP,
            K_H2F, K_F2H, K_GEMCLOSE, K_XDNABO, K_GEMCREATE, K_HEAP,
            K_VERSION, K_QUEUE, K_POLICY, K_EVENT, K_APERTURES, K_ACQUIRE, K_XNACK };

/* enumerations of the KFD set-up ioctls, by their kernel header names
 * (kfd.py CONSTANTS reads them back) */
static const char *const KFD_EVENT_TYPES[9] = {
  "KFD_IOC_EVENT_SIGNAL", "KFD_IOC_EVENT_NODECHANGE", "KFD_IOC_EVENT_DEVICESTATECHANGE",
  "KFD_IOC_EVENT_HW_EXCEPTION", "KFD_IOC_EVENT_SYSTEM_EVENT", "KFD_IOC_EVENT_DEBUG_EVENT",
  "KFD_IOC_EVENT_PROFILE_EVENT", "KFD_IOC_EVENT_QUEUE_EVENT", "KFD_IOC_EVENT_MEMORY"};
static const char *const KFD_QUEUE_TYPES[4] = {
  "KFD_IOC_QUEUE_TYPE_COMPUTE", "KFD_IOC_QUEUE_TYPE_SDMA", "KFD_IOC_QUEUE_TYPE_COMPUTE_AQL",
  "KFD_IOC_QUEUE_TYPE_SDMA_XGMI"};
static const char *const KFD_CACHE_POLICIES[2] = {
  "KFD_IOC_CACHE_POLICY_COHERENT", "KFD_IOC_CACHE_POLICY_NONCOHERENT"};

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

static const char *ioc_lookup(unsigned type, unsigned nr, unsigned size, int accel, enum kind *k) {
  const struct rt_ioc *t = 0;
  *k = K_NONE;
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
  if (type == 0x4b && nr == 0x20) { *k = K_SVM; return e->name; }  /* size = 24 + 8*nattr */
  /* CREATE_QUEUE: 88 bytes before Linux 6.12 (ROCm 5.2's thunk), 96 since;
   * the first 88 are the same */
  if (type == 0x4b && nr == 0x02 && (size == 88 || size == 96)) { *k = K_QUEUE; return e->name; }
  if (e->size != size) return 0;
  if (type == 0x4b) {
    switch (nr) {
      case 0x24: *k = K_EXPORT; break;  case 0x1d: *k = K_IMPORT; break;
      case 0x1c: *k = K_INFO; break;    case 0x16: *k = K_ALLOC; break;
      case 0x17: *k = K_FREE; break;    case 0x18: *k = K_MAP; break;
      case 0x19: *k = K_UNMAP; break;
      case 0x01: *k = K_VERSION; break; case 0x04: *k = K_POLICY; break;
      case 0x08: *k = K_EVENT; break;   case 0x14: *k = K_APERTURES; break;
      case 0x15: *k = K_ACQUIRE; break; case 0x21: *k = K_XNACK; break;
    }
  } else if (type == 0x64) {
    if (nr == 0x09) *k = K_GEMCLOSE;
    else if (nr == 0x2d) *k = K_H2F;
    else if (nr == 0x2e) *k = K_F2H;
    else if (nr == 0x40 && !accel) *k = K_GEMCREATE;
    else if (nr == 0x43 && accel) *k = K_XDNABO;
  } else if (type == 0x48 && nr == 0) {
    *k = K_HEAP;
  }
  return e->name;
}

static void ob_ioc(struct ob *b, unsigned req) {
  static const char *const dirs[4] = {"_IOC_NONE", "_IOC_WRITE", "_IOC_READ", "_IOC_READ|_IOC_WRITE"};
  ob_s(b, "_IOC("); ob_s(b, dirs[req >> 30]); ob_s(b, ", ");
  ob_x(b, (req >> 8) & 0xff); ob_s(b, ", "); ob_x(b, req & 0xff); ob_s(b, ", ");
  ob_x(b, (req >> 16) & 0x3fff); ob_c(b, ')');
}

struct svm_attr { uint32_t type, value; };
struct svm_args { uint64_t start, size; uint32_t op, nattr; struct svm_attr attrs[MAX_ATTRS]; };

static void ob_attrs(struct ob *b, const struct svm_attr *a, unsigned n, unsigned nattr) {
  ob_s(b, "attrs=[");
  for (unsigned i = 0; i < n; i++) {
    if (i) ob_s(b, ", ");
    ob_s(b, "{type=");
    uint32_t t = a[i].type, v = a[i].value;
    if (t < 8 && RT_ATTR_NAMES[t]) ob_s(b, RT_ATTR_NAMES[t]); else ob_x(b, t);
    ob_s(b, ", value=");
    if (t == 5 || t == 6) ob_flags(b, v, RT_SVM_FLAGS);
    else if (t == 7) ob_u(b, v);
    else ob_x(b, v);
    ob_c(b, '}');
  }
  if (n < nattr) { if (n) ob_s(b, ", "); ob_s(b, "..."); }
  ob_c(b, ']');
}

/* per-call decode state kept between the input and the output half */
union ioc_copy {
  struct svm_args svm;
  unsigned char raw[96];
};

static unsigned svm_ndecode(const struct svm_args *s, unsigned size) {
  unsigned n = s->nattr < MAX_ATTRS ? s->nattr : MAX_ATTRS;
  if (size >= 24 && n > (size - 24) / 8) n = (size - 24) / 8;  /* the kernel copies only `size` */
  return n;
}

static size_t kind_size(enum kind k) {
  switch (k) {
    case K_EXPORT: return 16; case K_IMPORT: return 24; case K_INFO: return 32;
    case K_ALLOC: return 40; case K_FREE: return 8; case K_MAP: case K_UNMAP: return 24;
    case K_H2F: case K_F2H: return 12; case K_GEMCLOSE: return 8; case K_XDNABO: return 32;
    case K_GEMCREATE: return 32; case K_HEAP: return 24;
    case K_VERSION: return 8; case K_QUEUE: return 88; case K_POLICY: return 32;
    case K_EVENT: return 32; case K_APERTURES: return 16; case K_ACQUIRE: return 8;
    case K_XNACK: return 4; default: return 0;
  }
}

static int ioc_copy_in(enum kind k, void *arg, unsigned size, union ioc_copy *c) {
  if (k == K_SVM) {
    if (safe_copy(&c->svm, arg, 24)) return -1;
    unsigned n = svm_ndecode(&c->svm, size);
    if (n && safe_copy(c->svm.attrs, (char *)arg + 24, 8 * n)) return -1;
    return 0;
  }
  return safe_copy(c->raw, arg, kind_size(k));
}

#define U64(p, o) (*(const uint64_t *)((p) + (o)))
#define U32(p, o) (*(const uint32_t *)((p) + (o)))
#define S32(p, o) (*(const int32_t *)((p) + (o)))

static void ob_devids(struct ob *b, uint64_t ptr, uint32_t n) {
  ob_s(b, "device_ids_array=");
  if (!ptr) { ob_s(b, "NULL"); return; }
  uint32_t ids[MAX_DEVIDS]; uint32_t m = n < MAX_DEVIDS ? n : MAX_DEVIDS;
  if (m && safe_copy(ids, (void *)(uintptr_t)ptr, 4 * m)) { ob_x(b, ptr); return; }
  ob_c(b, '[');
  for (uint32_t i = 0; i < m; i++) { if (i) ob_s(b, ", "); ob_x(b, ids[i]); }
  if (m < n) { if (m) ob_s(b, ", "); ob_s(b, "..."); }
  ob_c(b, ']');
}

static void ob_enum(struct ob *b, uint32_t v, const char *const *names, uint32_t n) {
  if (v < n) ob_s(b, names[v]); else ob_x(b, v);
}

static void ioc_in(struct ob *b, enum kind k, const union ioc_copy *c, unsigned size) {
  const unsigned char *p = c->raw;
  ob_c(b, '{');
  switch (k) {
    case K_SVM: {
      const struct svm_args *s = &c->svm;
      ob_s(b, "start_addr="); ob_x(b, s->start);
      ob_s(b, ", size="); ob_x(b, s->size);
      ob_s(b, ", op="); if (s->op < 2) ob_s(b, RT_SVM_OPS[s->op]); else ob_x(b, s->op);
      ob_s(b, ", nattr="); ob_u(b, s->nattr); ob_s(b, ", ");
      ob_attrs(b, s->attrs, svm_ndecode(s, size), s->nattr);
      break;
    }
    case K_EXPORT:
      ob_s(b, "handle="); ob_x(b, U64(p, 0));
      ob_s(b, ", flags="); ob_flags(b, U32(p, 8), RT_OPEN_FLAGS); break;
    case K_IMPORT:
      ob_s(b, "va_addr="); ob_x(b, U64(p, 0)); ob_s(b, ", gpu_id="); ob_x(b, U32(p, 16));
      ob_s(b, ", dmabuf_fd="); ob_fd(b, S32(p, 20)); break;
    case K_INFO:
      ob_s(b, "dmabuf_fd="); ob_fd(b, S32(p, 28)); break;
    case K_ALLOC:
      ob_s(b, "va_addr="); ob_x(b, U64(p, 0)); ob_s(b, ", size="); ob_x(b, U64(p, 8));
      ob_s(b, ", gpu_id="); ob_x(b, U32(p, 32));
      ob_s(b, ", flags="); ob_flags(b, U32(p, 36), RT_ALLOC_FLAGS);
      ob_s(b, ", mmap_offset="); ob_x(b, U64(p, 24)); break;
    case K_FREE:
      ob_s(b, "handle="); ob_x(b, U64(p, 0)); break;
    case K_MAP: case K_UNMAP:
      ob_s(b, "handle="); ob_x(b, U64(p, 0)); ob_s(b, ", ");
      ob_devids(b, U64(p, 8), U32(p, 16));
      ob_s(b, ", n_devices="); ob_u(b, U32(p, 16)); break;
    case K_H2F:
      ob_s(b, "handle="); ob_x(b, U32(p, 0));
      ob_s(b, ", flags="); ob_flags(b, U32(p, 4), RT_OPEN_FLAGS); break;
    case K_F2H:
      ob_s(b, "fd="); ob_fd(b, S32(p, 8)); break;
    case K_GEMCLOSE:
      ob_s(b, "handle="); ob_x(b, U32(p, 0)); break;
    case K_XDNABO: {
      uint32_t t = U32(p, 24);
      ob_s(b, "flags="); ob_x(b, U64(p, 0)); ob_s(b, ", vaddr="); ob_x(b, U64(p, 8));
      ob_s(b, ", size="); ob_x(b, U64(p, 16)); ob_s(b, ", type=");
      if (t < 5) ob_s(b, RT_XDNA_BO[t]); else ob_x(b, t);
      break;
    }
    case K_GEMCREATE:
      ob_s(b, "bo_size="); ob_x(b, U64(p, 0)); ob_s(b, ", alignment="); ob_x(b, U64(p, 8));
      ob_s(b, ", domains="); ob_x(b, U64(p, 16)); ob_s(b, ", domain_flags="); ob_x(b, U64(p, 24));
      break;
    case K_HEAP:
      ob_s(b, "len="); ob_x(b, U64(p, 0));
      ob_s(b, ", fd_flags="); ob_flags(b, U32(p, 12), RT_OPEN_FLAGS);
      ob_s(b, ", heap_flags="); ob_x(b, U64(p, 16)); break;
    case K_VERSION: break;                       /* everything is the kernel's answer */
    case K_QUEUE:
      ob_s(b, "ring_base_address="); ob_x(b, U64(p, 0));
      ob_s(b, ", ring_size="); ob_x(b, U32(p, 32));
      ob_s(b, ", gpu_id="); ob_x(b, U32(p, 36));
      ob_s(b, ", queue_type="); ob_enum(b, U32(p, 40), KFD_QUEUE_TYPES, 4);
      ob_s(b, ", queue_percentage="); ob_u(b, U32(p, 44));
      ob_s(b, ", queue_priority="); ob_u(b, U32(p, 48));
      ob_s(b, ", write_pointer_address="); ob_x(b, U64(p, 8));
      ob_s(b, ", read_pointer_address="); ob_x(b, U64(p, 16));
      ob_s(b, ", eop_buffer_address="); ob_x(b, U64(p, 56));
      ob_s(b, ", eop_buffer_size="); ob_x(b, U64(p, 64));
      ob_s(b, ", ctx_save_restore_address="); ob_x(b, U64(p, 72));
      ob_s(b, ", ctx_save_restore_size="); ob_x(b, U32(p, 80));
      ob_s(b, ", ctl_stack_size="); ob_x(b, U32(p, 84)); break;
    case K_POLICY:
      ob_s(b, "alternate_aperture_base="); ob_x(b, U64(p, 0));
      ob_s(b, ", alternate_aperture_size="); ob_x(b, U64(p, 8));
      ob_s(b, ", gpu_id="); ob_x(b, U32(p, 16));
      ob_s(b, ", default_policy="); ob_enum(b, U32(p, 20), KFD_CACHE_POLICIES, 2);
      ob_s(b, ", alternate_policy="); ob_enum(b, U32(p, 24), KFD_CACHE_POLICIES, 2); break;
    case K_EVENT:
      ob_s(b, "event_type="); ob_enum(b, U32(p, 12), KFD_EVENT_TYPES, 9);
      ob_s(b, ", auto_reset="); ob_u(b, U32(p, 16));
      ob_s(b, ", node_id="); ob_u(b, U32(p, 20));
      ob_s(b, ", event_page_offset="); ob_x(b, U64(p, 0)); break;
    case K_APERTURES:
      ob_s(b, "kfd_process_device_apertures_ptr="); ob_x(b, U64(p, 0));
      ob_s(b, ", num_of_nodes="); ob_u(b, U32(p, 8)); break;
    case K_ACQUIRE:
      ob_s(b, "drm_fd="); ob_fd(b, S32(p, 0)); ob_s(b, ", gpu_id="); ob_x(b, U32(p, 4)); break;
    case K_XNACK:
      ob_s(b, "xnack_enabled="); ob_d(b, S32(p, 0)); break;
    default: break;
  }
  ob_c(b, '}');
}

/* the `=> {...}` half: fields the kernel wrote, only after success */
static void ioc_out(struct ob *b, enum kind k, void *arg, unsigned size, const union ioc_copy *in) {
  union ioc_copy c;
  const unsigned char *p = c.raw;
  if (k == K_FREE || k == K_GEMCLOSE || k == K_NONE || k == K_POLICY || k == K_ACQUIRE) return;
  if (k == K_SVM) {
    if (in->svm.op != 1) return;  /* only GET_ATTR answers */
    unsigned n = svm_ndecode(&in->svm, size);
    if (n && safe_copy(c.svm.attrs, (char *)arg + 24, 8 * n)) return;
    ob_s(b, " => {"); ob_attrs(b, c.svm.attrs, n, in->svm.nattr); ob_c(b, '}');
    return;
  }
  if (safe_copy(c.raw, arg, kind_size(k))) return;
  ob_s(b, " => {");
  switch (k) {
    case K_EXPORT: ob_s(b, "dmabuf_fd="); ob_fd(b, S32(p, 12)); break;
    case K_IMPORT: ob_s(b, "handle="); ob_x(b, U64(p, 8)); break;
    case K_INFO:
      ob_s(b, "size="); ob_x(b, U64(p, 0)); ob_s(b, ", gpu_id="); ob_x(b, U32(p, 20));
      ob_s(b, ", flags="); ob_flags(b, U32(p, 24), RT_ALLOC_FLAGS); break;
    case K_ALLOC:
      ob_s(b, "handle="); ob_x(b, U64(p, 16)); ob_s(b, ", mmap_offset="); ob_x(b, U64(p, 24)); break;
    case K_MAP: case K_UNMAP: ob_s(b, "n_success="); ob_u(b, U32(p, 20)); break;
    case K_H2F: ob_s(b, "fd="); ob_fd(b, S32(p, 8)); break;
    case K_F2H: ob_s(b, "handle="); ob_x(b, U32(p, 0)); break;
    case K_XDNABO: ob_s(b, "handle="); ob_x(b, U32(p, 28)); break;
    case K_GEMCREATE: ob_s(b, "handle="); ob_x(b, U32(p, 0)); break;
    case K_HEAP: ob_s(b, "fd="); ob_fd(b, S32(p, 8)); break;
    case K_VERSION:
      ob_s(b, "major_version="); ob_u(b, U32(p, 0));
      ob_s(b, ", minor_version="); ob_u(b, U32(p, 4)); break;
    case K_QUEUE:
      ob_s(b, "queue_id="); ob_u(b, U32(p, 52));
      ob_s(b, ", doorbell_offset="); ob_x(b, U64(p, 24)); break;
    case K_EVENT:
      ob_s(b, "event_id="); ob_u(b, U32(p, 24));
      ob_s(b, ", event_slot_index="); ob_u(b, U32(p, 28));
      ob_s(b, ", event_trigger_data="); ob_x(b, U32(p, 8));
      ob_s(b, ", event_page_offset="); ob_x(b, U64(p, 0)); break;
    case K_APERTURES: ob_s(b, "num_of_nodes="); ob_u(b, U32(p, 8)); break;
    case K_XNACK: ob_s(b, "xnack_enabled="); ob_d(b, S32(p, 0)); break;
    default: break;
  }
  ob_c(b, '}');
}

/* ------------------------------------------------------------------ hooks */

EXPORT int ioctl(int fd, unsigned long request, ...) {
  va_list ap; va_start(ap, request); void *arg = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.ioctl)) resolve_all();
  if (!tracing()) return R.ioctl(fd, request, arg);
  t_busy++;
  struct rec r; rec_begin(&r);
  struct ob *b = &r.b;
  unsigned req = (unsigned)request;
  char path[512]; int plen = fd_path(fd, path, sizeof path);
  int accel = plen >= 11 && memcmp(path, "/dev/accel/", 11) == 0;
  enum kind k;
  const char *name = ioc_lookup((req >> 8) & 0xff, req & 0xff, (req >> 16) & 0x3fff, accel, &k);
  ob_s(b, "ioctl("); ob_fdpath(b, fd, path, plen); ob_s(b, ", ");
  if (name) ob_s(b, name); else ob_ioc(b, req);
  ob_s(b, ", ");
  union ioc_copy in;
  unsigned size = (req >> 16) & 0x3fff;
  if (k != K_NONE && ioc_copy_in(k, arg, size, &in) == 0) ioc_in(b, k, &in, size);
  else { k = K_NONE; ob_x(b, (uintptr_t)arg); }
  int ret = R.ioctl(fd, request, arg);
  int e = errno;
  if (ret != -1 && k != K_NONE) ioc_out(b, k, arg, size, &in);
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

static int log_openat(int dirfd, const char *path, int flags, unsigned mode, int ret, int e, struct rec *r) {
  struct ob *b = &r->b;
  ob_s(b, "openat(");
  if (dirfd == AT_FDCWD) ob_s(b, "AT_FDCWD"); else ob_fd(b, dirfd);
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
  if (!tracing_own()) return R.realfn(__VA_ARGS__, flags, mode);                 \
  t_busy++;                                                                  \
  struct rec r; rec_begin(&r);                                               \
  int ret = R.realfn(__VA_ARGS__, flags, mode);                              \
  int e = errno;                                                             \
  log_openat(dirfd, path, flags, mode, ret, e, &r);                          \
  t_busy--; errno = e; return ret;

EXPORT int open(const char *path, int flags, ...) { OPEN_BODY(open, AT_FDCWD, path) }
EXPORT int open64(const char *path, int flags, ...) { OPEN_BODY(open64, AT_FDCWD, path) }
EXPORT int openat(int dirfd, const char *path, int flags, ...) { OPEN_BODY(openat, dirfd, dirfd, path) }
EXPORT int openat64(int dirfd, const char *path, int flags, ...) { OPEN_BODY(openat64, dirfd, dirfd, path) }

/* one-argument fd calls: decoration is taken before the call (close) */
static void begin_fdcall(struct rec *r, const char *name, int fd) {
  rec_begin(r); ob_s(&r->b, name); ob_c(&r->b, '('); ob_fd(&r->b, fd);
}

EXPORT int close(int fd) {
  if (UNLIKELY(!R.close)) resolve_all();
  int hidden = is_logfd(fd);
  if (!tracing_own()) { if (hidden) { errno = EBADF; return -1; } return R.close(fd); }
  t_busy++;
  struct rec r; rec_begin(&r);
  ob_s(&r.b, "close(");
  if (hidden) ob_d(&r.b, fd); else ob_fd(&r.b, fd);
  int ret, e;
  if (hidden) { ret = -1; e = EBADF; } else { ret = R.close(fd); e = errno; }
  rec_res_int(&r, ret, e, 0);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

EXPORT int dup(int fd) {
  if (UNLIKELY(!R.dup)) resolve_all();
  int hidden = is_logfd(fd);
  if (!tracing_own()) { if (hidden) { errno = EBADF; return -1; } return R.dup(fd); }
  t_busy++;
  struct rec r; begin_fdcall(&r, "dup", hidden ? -1 : fd);
  int ret, e;
  if (hidden) { ret = -1; e = EBADF; } else { ret = R.dup(fd); e = errno; }
  rec_res_int(&r, ret, e, 1);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}

static int dup23(int use3, int oldfd, int newfd, int flags) {
  int hidden = is_logfd(oldfd) || is_logfd(newfd);
  if (!tracing_own()) {
    if (hidden) { errno = EBADF; return -1; }
    return use3 ? R.dup3(oldfd, newfd, flags) : R.dup2(oldfd, newfd);
  }
  t_busy++;
  struct rec r; rec_begin(&r);
  ob_s(&r.b, use3 ? "dup3(" : "dup2(");
  if (is_logfd(oldfd)) ob_d(&r.b, oldfd); else ob_fd(&r.b, oldfd);
  ob_s(&r.b, ", "); ob_d(&r.b, newfd);
  if (use3) { ob_s(&r.b, ", "); ob_flags(&r.b, (unsigned)flags, RT_OPEN_FLAGS); }
  int ret, e;
  if (hidden) { ret = -1; e = EBADF; }
  else { ret = use3 ? R.dup3(oldfd, newfd, flags) : R.dup2(oldfd, newfd); e = errno; }
  rec_res_int(&r, ret, e, 1);
  rec_emit(&r);
  t_busy--; errno = e; return ret;
}
EXPORT int dup2(int oldfd, int newfd) { if (UNLIKELY(!R.dup2)) resolve_all(); return dup23(0, oldfd, newfd, 0); }
EXPORT int dup3(int oldfd, int newfd, int flags) { if (UNLIKELY(!R.dup3)) resolve_all(); return dup23(1, oldfd, newfd, flags); }

static int do_fcntl(fcntl_fn fn, int fd, int cmd, void *arg) {
  if (is_logfd(fd)) {
    /* hidden: as if not open (valgrind bug 337388: F_SETFD/F_SETFL on a tool fd) */
    if (tracing_own() && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC || cmd == F_SETFD)) {
      t_busy++;
      struct rec r; rec_begin(&r);
      ob_s(&r.b, "fcntl("); ob_d(&r.b, fd);
      ob_s(&r.b, cmd == F_DUPFD ? ", F_DUPFD, " : cmd == F_DUPFD_CLOEXEC ? ", F_DUPFD_CLOEXEC, " : ", F_SETFD, ");
      ob_d(&r.b, (long)arg);
      rec_res_int(&r, -1, EBADF, 0); rec_emit(&r);
      t_busy--;
    }
    errno = EBADF; return -1;
  }
  if (!(cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC || cmd == F_SETFD) || !tracing_own())
    return fn(fd, cmd, arg);
  t_busy++;
  struct rec r; rec_begin(&r);
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

/* close_range split around the log fd (Onload#111, mirrord#3911) */
static long crange_protected(unsigned first, unsigned last, int flags) {
  int l = logfd();
  long ret = 0;
  if ((flags & CLOSE_RANGE_CLOEXEC) || l < 0 || (unsigned)l < first || (unsigned)l > last)
    return syscall(SYS_close_range, first, last, flags);
  if ((unsigned)l > first) ret = syscall(SYS_close_range, first, (unsigned)l - 1, flags);
  if (ret == 0 && (unsigned)l < last) ret = syscall(SYS_close_range, (unsigned)l + 1, last, flags);
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
  if (!tracing_own()) return (int)crange_protected(first, last, flags);
  t_busy++;
  struct rec r; rec_begin(&r);
  long ret = crange_protected(first, last, flags); int e = errno;
  log_crange(&r, first, last, flags, ret, e);
  t_busy--; errno = e; return (int)ret;
}

static void closefrom_protected(int low) {
  if (crange_protected((unsigned)low, ~0U, 0) == 0 || errno != ENOSYS) return;
  /* kernel without close_range: close what /proc lists, sparing the log fd */
  int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  char dbuf[4096]; long n;
  while ((n = syscall(SYS_getdents64, dfd, dbuf, sizeof dbuf)) > 0)
    for (long pos = 0; pos < n;) {
      struct ldirent *d = (struct ldirent *)(dbuf + pos); pos += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      long fd = atol(d->name);
      if (fd >= low && fd != dfd && !is_logfd(fd)) syscall(SYS_close, fd);
    }
  syscall(SYS_close, dfd);
}

EXPORT void closefrom(int low) {
  if (!tracing_own()) { closefrom_protected(low); return; }
  int save = errno;
  t_busy++;
  struct rec r; rec_begin(&r);
  closefrom_protected(low);
  log_crange(&r, (unsigned)low, ~0U, 0, 0, 0);
  t_busy--; errno = save;
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
  if (!tracing()) return fn(addr, len, prot, flags, fd, off);
  t_busy++;
  struct rec r; rec_begin(&r);
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
  if (!tracing()) return R.munmap(addr, len);
  t_busy++;
  struct rec r; rec_begin(&r);
  ob_s(&r.b, "munmap("); ob_ptr(&r.b, addr); ob_s(&r.b, ", "); ob_u(&r.b, len);
  int ret = R.munmap(addr, len); int e = errno;
  rec_res_int(&r, ret, e, 0); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

EXPORT void *mremap(void *old, size_t oldsz, size_t newsz, int flags, ...) {
  va_list ap; va_start(ap, flags); void *newaddr = va_arg(ap, void *); va_end(ap);
  if (UNLIKELY(!R.mremap)) resolve_all();
  if (!tracing()) return R.mremap(old, oldsz, newsz, flags, newaddr);
  t_busy++;
  struct rec r; rec_begin(&r);
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

EXPORT pid_t fork(void) {
  if (UNLIKELY(!R.fork)) resolve_all();
  if (!tracing()) return R.fork();
  struct rec r; rec_begin(&r);
  pid_t ret = R.fork(); int e = errno;
  if (ret == 0) { errno = e; return 0; }  /* the child logs into its own file */
  t_busy++;
  ob_s(&r.b, "fork(");
  rec_res_int(&r, ret, e, 0); rec_emit(&r);
  t_busy--; errno = e; return ret;
}

/* --------------------------------------------------------------- exec */

static void exec_note(const char *path) {
  char line[PATH_MAX + 16]; struct ob b = {line, 0, sizeof line - 1, sizeof line, 0};
  ob_s(&b, "# exec "); if (path) ob_esc(&b, path, (int)strnlen(path, PATH_MAX), 0);
  b.cut = 0; meta_line(&b);
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
  if (!tracing_own()) return R.realfn(__VA_ARGS__);                   \
  struct rec r; rec_begin(&r);                                    \
  t_busy++; exec_note(pathexpr); t_busy--;                        \
  int ret = R.realfn(__VA_ARGS__); int e = errno;                 \
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
  char path[512]; int n = fd_path(fd, path, sizeof path); if (n < 0) path[0] = 0;
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
  struct rec r; if (on) rec_begin(&r);                    \
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
  if (on) { t_busy++; rec_begin(&r); ob_s(&r.b, "hsa_amd_portable_close_dmabuf("); ob_fd(&r.b, dmabuf); t_busy--; }
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
