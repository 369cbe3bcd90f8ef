/*
 * fakedev: a test-only preload library that answers KFD, DRM render-node and
 * accel ioctls the way the kernel would (include/uapi/linux/kfd_ioctl.h), for
 * fds whose /proc/self/fd path is /dev/kfd, /dev/dri/renderD* or
 * /dev/accel/accel*.  In tests those paths are null devices (c 1 3) in a
 * private /dev (devns.py), so everything else about the fds is real.
 *
 * Placed AFTER the capture library in LD_PRELOAD, so the capture library's
 * RTLD_NEXT ioctl is this one.  State lives in fixed static tables behind one
 * mutex (this is a test tool, thread-safe but not lock-free).  Every process
 * has its own state: a fork child starts empty and, like the kernel, refuses
 * the parent's /dev/kfd fds (EBADF).
 *
 * Limits (documented, deliberate): GEM handles are per fd number, not per
 * open file description (dup'd render fds do not share handles); dma-bufs are
 * memfds named "dmabuf", recognised by inode; the SVM model is a list of at
 * most MAX_RANGES ranges split like the kernel's, never merged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_GPUS 8
#define MAX_BOS 4096
#define MAX_RANGES 4096
#define MAX_FDS 4096
#define MAX_GEM 4096
#define MAX_DMABUF 4096

typedef int (*ioctl_fn)(int, unsigned long, void *);
static ioctl_fn real_ioctl;
typedef int (*close_fn)(int);
static close_fn real_close;
typedef int (*munmap_fn)(void *, size_t);
static munmap_fn real_munmap;
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
static mmap_fn real_mmap;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t state_pid;
static uint32_t gpus[MAX_GPUS];
static int ngpus;
static int xnack;

struct bo {            /* a buffer object (the memory) */
  int live;
  uint64_t size, va;
  uint32_t gpu_id, flags;
};
static struct bo bos[MAX_BOS];

struct kh {            /* a KFD handle: gpu_id << 32 | idr */
  int live, bo;
  uint32_t gpu_id, idr, mapped;  /* mapped: bitmask of gpu indices */
  uint64_t va, size;
};
static struct kh khs[MAX_BOS];

struct gem { int live, fd, bo; uint32_t handle; };
static struct gem gems[MAX_GEM];

struct dmabuf { int live; uint64_t ino; int bo; };
static struct dmabuf dmabufs[MAX_DMABUF];

static pid_t kfd_owner[MAX_FDS];   /* process that first used a /dev/kfd fd */
static int acquired_fd[MAX_GPUS];

struct range {
  uint64_t start, end;     /* pages [start, end) */
  uint32_t access, aip;    /* bitmaps by gpu index */
  uint32_t flags, pref, prefetch, gran;
};
static struct range ranges[MAX_RANGES];
static int nranges;

/* KFD events, enough for ROCr: signal events get slot = id from 0, others
 * ids from KFD_SIGNAL_EVENT_LIMIT (4096).  WAIT_EVENTS really blocks (ROCr's
 * async-events thread waits on one until shutdown sets it), on its own
 * condition variable with `mu` released. */
#define MAX_EVENTS 256
#define SIGNAL_LIMIT 4096
struct event { int live; uint32_t id, type, auto_reset, signaled; };
static struct event events[MAX_EVENTS];
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;
/* threads blocked in WAIT_EVENTS now: test programs read it (dlsym) to act
 * once a wait is really under way, instead of sleeping and hoping */
int fakedev_waiting;

#define MAX_QUEUES 128
static int queues[MAX_QUEUES];    /* queue ids in use */

static void parse_gpus(void) {
  const char *s = getenv("FAKEDEV_GPUS");
  if (!s || !*s) s = "0x1a2b,0x3c4d";
  ngpus = 0;
  while (*s && ngpus < MAX_GPUS) {
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (end == s) break;
    gpus[ngpus++] = (uint32_t)v;
    s = *end == ',' ? end + 1 : end;
  }
  const char *x = getenv("FAKEDEV_XNACK");
  xnack = x && *x == '1';
}

static void reset_state(void) {
  memset(events, 0, sizeof events); memset(queues, 0, sizeof queues);
  memset(bos, 0, sizeof bos); memset(khs, 0, sizeof khs); memset(gems, 0, sizeof gems);
  memset(dmabufs, 0, sizeof dmabufs); memset(acquired_fd, 0xff, sizeof acquired_fd);
  nranges = 0;
  state_pid = getpid();
}

static void atfork_prepare(void) { pthread_mutex_lock(&mu); }
static void atfork_parent(void) { pthread_mutex_unlock(&mu); }
static void atfork_child(void) { pthread_mutex_init(&mu, 0); }

__attribute__((constructor)) static void fd_init(void) {
  real_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
  real_close = (close_fn)dlsym(RTLD_NEXT, "close");
  real_munmap = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
  real_mmap = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
  parse_gpus();
  reset_state();
  pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static int gpu_index(uint32_t id) {
  for (int i = 0; i < ngpus; i++) if (gpus[i] == id) return i;
  return -1;
}

enum dev { D_NONE, D_KFD, D_RENDER, D_ACCEL };

static enum dev dev_of(int fd) {
  char p[64], buf[128];
  snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(p, buf, sizeof buf - 1);
  if (n < 0) return D_NONE;
  buf[n] = 0;
  if (!strcmp(buf, "/dev/kfd")) return D_KFD;
  if (!strncmp(buf, "/dev/dri/renderD", 16)) return D_RENDER;
  if (!strncmp(buf, "/dev/accel/accel", 16)) return D_ACCEL;
  return D_NONE;
}

static int new_bo(uint64_t size, uint64_t va, uint32_t gpu_id, uint32_t flags) {
  for (int i = 0; i < MAX_BOS; i++)
    if (!bos[i].live) { bos[i] = (struct bo){1, size, va, gpu_id, flags}; return i; }
  return -1;
}

/* lowest free idr per gpu, from 0, like idr_alloc(&pdd->alloc_idr, mem, 0, 0) */
static int new_kh(int bo, uint32_t gpu_id, uint64_t va, uint64_t size) {
  uint32_t idr = 0;
  for (;;) {
    int used = 0;
    for (int i = 0; i < MAX_BOS; i++)
      if (khs[i].live && khs[i].gpu_id == gpu_id && khs[i].idr == idr) { used = 1; break; }
    if (!used) break;
    idr++;
  }
  for (int i = 0; i < MAX_BOS; i++)
    if (!khs[i].live) { khs[i] = (struct kh){1, bo, gpu_id, idr, 0, va, size}; return i; }
  return -1;
}

static struct kh *find_kh(uint64_t handle) {
  for (int i = 0; i < MAX_BOS; i++)
    if (khs[i].live && khs[i].gpu_id == (uint32_t)(handle >> 32) && khs[i].idr == (uint32_t)handle)
      return &khs[i];
  return 0;
}

static int bo_refs(int bo) {
  int n = 0;
  for (int i = 0; i < MAX_BOS; i++) if (khs[i].live && khs[i].bo == bo) n++;
  for (int i = 0; i < MAX_GEM; i++) if (gems[i].live && gems[i].bo == bo) n++;
  for (int i = 0; i < MAX_DMABUF; i++) if (dmabufs[i].live && dmabufs[i].bo == bo) n++;
  return n;
}
static void bo_maybe_free(int bo) { if (bo >= 0 && !bo_refs(bo)) bos[bo].live = 0; }

/* a real new fd standing for a dma-buf of `bo` */
static int export_fd(int bo, uint32_t flags) {
  int fd = memfd_create("dmabuf", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
  if (fd < 0) return -errno;
  struct stat st;
  if (fstat(fd, &st)) { int e = errno; syscall(SYS_close, fd); return -e; }
  for (int i = 0; i < MAX_DMABUF; i++)
    if (!dmabufs[i].live) { dmabufs[i] = (struct dmabuf){1, (uint64_t)st.st_ino, bo}; return fd; }
  syscall(SYS_close, fd);
  return -EMFILE;
}

/* the buffer behind a dma-buf fd: -EBADF for a bad fd, -EINVAL for a non-dma-buf */
static int dmabuf_bo(int fd) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st)) return -EBADF;
  for (int i = 0; i < MAX_DMABUF; i++)
    if (dmabufs[i].live && dmabufs[i].ino == (uint64_t)st.st_ino && bos[dmabufs[i].bo].live)
      return dmabufs[i].bo;
  return -EINVAL;
}

static int gem_new(int fd, int bo) {
  uint32_t h = 1;
  for (;;) {
    int used = 0;
    for (int i = 0; i < MAX_GEM; i++)
      if (gems[i].live && gems[i].fd == fd && gems[i].handle == h) { used = 1; break; }
    if (!used) break;
    h++;
  }
  for (int i = 0; i < MAX_GEM; i++)
    if (!gems[i].live) { gems[i] = (struct gem){1, fd, bo, h}; return (int)h; }
  return -ENOMEM;
}
static struct gem *gem_find(int fd, uint32_t h) {
  for (int i = 0; i < MAX_GEM; i++)
    if (gems[i].live && gems[i].fd == fd && gems[i].handle == h) return &gems[i];
  return 0;
}

/* ---------------------------------------------------------------- SVM model */

static int range_split(uint64_t at) {  /* make `at` a range boundary */
  for (int i = 0; i < nranges; i++)
    if (ranges[i].start < at && at < ranges[i].end) {
      if (nranges >= MAX_RANGES) return -ENOMEM;
      ranges[nranges] = ranges[i];
      ranges[nranges].start = at;
      ranges[i].end = at;
      nranges++;
      return 0;
    }
  return 0;
}

static void range_drop(uint64_t s, uint64_t e) {
  if (range_split(s) || range_split(e)) return;
  for (int i = 0; i < nranges;)
    if (ranges[i].start >= s && ranges[i].end <= e) ranges[i] = ranges[--nranges];
    else i++;
}

static struct range new_range(uint64_t s, uint64_t e) {
  struct range r = {s, e, 0, 0, 0x3, 0xffffffff, 0xffffffff, 9};
  if (xnack) r.access = (1u << ngpus) - 1;
  return r;
}

static int cmp_range(const void *a, const void *b) {
  const struct range *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* every page of [s, e) mapped in the CPU address space (EFAULT otherwise) */
static int range_mapped(uint64_t s, uint64_t e) {
  unsigned char vec[4096];
  long page = sysconf(_SC_PAGESIZE);
  for (uint64_t p = s; p < e;) {
    uint64_t n = e - p; if (n > sizeof vec) n = sizeof vec;
    if (mincore((void *)(uintptr_t)(p * page), n * page, vec)) return 0;
    p += n;
  }
  return 1;
}

static int bo_overlaps(uint64_t s, uint64_t e) {  /* bytes */
  for (int i = 0; i < MAX_BOS; i++)
    if (khs[i].live && khs[i].va && khs[i].va < e && s < khs[i].va + khs[i].size) return 1;
  return 0;
}

struct svm_attr { uint32_t type, value; };
struct svm_args { uint64_t start, size; uint32_t op, nattr; struct svm_attr attrs[]; };

static int svm(struct svm_args *a, unsigned usize) {
  long page = sysconf(_SC_PAGESIZE);
  if (!a->start || !a->size || a->start % page || a->size % page) return -EINVAL;
  if (usize < 24 + 8ull * a->nattr) return -EINVAL;
  uint64_t s = a->start / page, e = s + a->size / page;
  if (!range_mapped(s, e)) return -EFAULT;
  if (bo_overlaps(a->start, a->start + a->size)) return -EADDRINUSE;
  if (a->op == 0) {
    for (uint32_t i = 0; i < a->nattr; i++) {
      uint32_t t = a->attrs[i].type, v = a->attrs[i].value;
      switch (t) {
        case 0: if (v && v != 0xffffffff && gpu_index(v) < 0) return -EINVAL; break;
        case 1: if (v && gpu_index(v) < 0) return -EINVAL; break;
        case 2: case 3: case 4: if (gpu_index(v) < 0) return -EINVAL; break;
        case 5: case 6: case 7: break;
        default: return -EINVAL;
      }
    }
    if (range_split(s) || range_split(e)) return -ENOMEM;
    /* fill the gaps with default ranges, then apply in array order */
    qsort(ranges, nranges, sizeof ranges[0], cmp_range);
    uint64_t cur = s;
    int n0 = nranges;
    for (int i = 0; i <= n0; i++) {
      uint64_t next = i < n0 ? ranges[i].start : e;
      if (i < n0 && ranges[i].end <= cur) continue;
      if (next > e) next = e;
      if (cur < next) {
        if (nranges >= MAX_RANGES) return -ENOMEM;
        ranges[nranges++] = new_range(cur, next);
      }
      if (i < n0 && ranges[i].end > cur) cur = ranges[i].end;
      if (cur >= e) break;
    }
    for (int r = 0; r < nranges; r++) {
      struct range *g = &ranges[r];
      if (g->start < s || g->end > e) continue;
      for (uint32_t i = 0; i < a->nattr; i++) {
        uint32_t t = a->attrs[i].type, v = a->attrs[i].value;
        uint32_t bit = gpu_index(v) >= 0 ? 1u << gpu_index(v) : 0;
        switch (t) {
          case 0: g->pref = v; break;
          case 1: g->prefetch = v; break;
          case 2: g->access |= bit; g->aip &= ~bit; break;
          case 3: g->aip |= bit; g->access &= ~bit; break;
          case 4: g->access &= ~bit; g->aip &= ~bit; break;
          case 5: g->flags |= v; break;
          case 6: g->flags &= ~v; break;
          case 7: g->gran = v > 0x3f ? 0x3f : v; break;
        }
      }
    }
    return 0;
  }
  if (a->op == 1) {
    int any = 0;
    uint32_t and_flags = ~0u, or_flags = 0, pref = 0, prefetch = 0, gran = 0xffffffff;
    int first = 1;
    for (int r = 0; r < nranges; r++) {
      struct range *g = &ranges[r];
      if (g->end <= s || g->start >= e) continue;
      any = 1;
      and_flags &= g->flags; or_flags |= g->flags;
      if (first) { pref = g->pref; prefetch = g->prefetch; first = 0; }
      else { if (pref != g->pref) pref = 0xffffffff; if (prefetch != g->prefetch) prefetch = 0xffffffff; }
      if (g->gran < gran) gran = g->gran;
    }
    for (uint32_t i = 0; i < a->nattr; i++) {
      struct svm_attr *at = &a->attrs[i];
      switch (at->type) {
        case 0: at->value = any ? pref : 0xffffffff; break;
        case 1: at->value = any ? prefetch : 0xffffffff; break;
        case 5: at->value = any ? and_flags : 0x3; break;
        case 6: at->value = any ? ~or_flags : ~0x3u; break;
        case 7: at->value = any ? gran : 9; break;
        case 2: {
          int gi = gpu_index(at->value);
          if (gi < 0) return -EINVAL;
          uint32_t bit = 1u << gi;
          int all_acc = 1, all_aip = 1;
          if (!any) { all_acc = xnack; all_aip = 0; }
          for (int r = 0; r < nranges; r++) {
            struct range *g = &ranges[r];
            if (g->end <= s || g->start >= e) continue;
            if (!(g->access & bit)) all_acc = 0;
            if (!(g->aip & bit)) all_aip = 0;
          }
          at->type = all_acc ? 2 : all_aip ? 3 : 4;
          break;
        }
        default: return -EINVAL;
      }
    }
    return 0;
  }
  return -EINVAL;
}

/* ---------------------------------------------------------------- events */


static struct event *event_find(uint32_t id) {
  for (int i = 0; i < MAX_EVENTS; i++) if (events[i].live && events[i].id == id) return &events[i];
  return 0;
}

static int create_event(void *arg);
static int wait_events(void *arg);

/* ---------------------------------------------------------------- dispatch */

#define U64(o) (*(uint64_t *)((char *)arg + (o)))
#define U32(o) (*(uint32_t *)((char *)arg + (o)))
#define S32(o) (*(int32_t *)((char *)arg + (o)))

static int map_unmap(void *arg, int map) {
  struct kh *k = find_kh(U64(0));
  uint32_t n = U32(16), done = U32(20);
  uint32_t *ids = (uint32_t *)(uintptr_t)U64(8);
  if (!n || done > n) return -EINVAL;
  if (!ids) return -EFAULT;
  if (!k) return -ENOMEM;
  for (uint32_t i = done; i < n; i++) {
    int gi = gpu_index(ids[i]);
    if (gi < 0) return -EINVAL;
    if (map) k->mapped |= 1u << gi;
    else {
      if (!(k->mapped & (1u << gi))) return -EINVAL;
      k->mapped &= ~(1u << gi);
    }
    U32(20) = i + 1;
  }
  return 0;
}

static int kfd_ioctl(int fd, unsigned req, void *arg) {
  unsigned nr = req & 0xff, size = (req >> 16) & 0x3fff;
  if (fd >= 0 && fd < MAX_FDS) {
    if (!kfd_owner[fd]) kfd_owner[fd] = getpid();
    else if (kfd_owner[fd] != getpid()) return -EBADF;
  }
  if (!arg && nr != 0x27) return -EFAULT;
  switch (nr) {
    case 0x01: U32(0) = 1; U32(4) = 17; return 0;                        /* GET_VERSION */
    case 0x02: {                                                          /* CREATE_QUEUE (88 or 96 B) */
      uint32_t gpu = U32(36), type = U32(40);
      if (gpu_index(gpu) < 0 || type > 3 || !U64(0) || U32(32) < 1024) return -EINVAL;
      int q = -1;
      for (int i = 0; i < MAX_QUEUES; i++) if (!queues[i]) { q = i; break; }
      if (q < 0) return -ENOSPC;
      queues[q] = 1;
      U32(52) = (uint32_t)q;
      /* KFD_MMAP_TYPE_DOORBELL | gpu_id: the doorbell page the thunk mmaps */
      U64(24) = (3ull << 62) | ((uint64_t)gpu << 46);
      return 0;
    }
    case 0x03:                                                            /* DESTROY_QUEUE */
      if (U32(0) >= MAX_QUEUES || !queues[U32(0)]) return -EINVAL;
      queues[U32(0)] = 0;
      return 0;
    case 0x04:                                                            /* SET_MEMORY_POLICY */
      if (gpu_index(U32(16)) < 0) return -EINVAL;
      if (U32(20) > 1 || U32(24) > 1) return -EINVAL;
      return 0;
    case 0x05: {                                                          /* GET_CLOCK_COUNTERS */
      /* ROCr asks for node 0 (the CPU): the kernel answers with the system clock */
      if (U32(32) && gpu_index(U32(32)) < 0) return -EINVAL;
      struct timespec t;
      clock_gettime(CLOCK_MONOTONIC_RAW, &t);
      uint64_t ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
      U64(0) = ns; U64(8) = ns; U64(16) = ns; U64(24) = 1000000000ull;
      return 0;
    }
    case 0x08: return create_event(arg);                                  /* CREATE_EVENT */
    case 0x09: case 0x0a: case 0x0b: {                                    /* DESTROY/SET/RESET_EVENT */
      struct event *ev = event_find(U32(0));
      if (!ev) return -EINVAL;
      if (nr == 0x09) ev->live = 0;
      else ev->signaled = nr == 0x0a;
      pthread_cond_broadcast(&ev_cond);
      return 0;
    }
    case 0x0c: return wait_events(arg);                                   /* WAIT_EVENTS */
    case 0x11: case 0x13:                                                 /* SET_SCRATCH_BACKING_VA, SET_TRAP_HANDLER */
      return gpu_index(U32(nr == 0x11 ? 8 : 16)) < 0 ? -EINVAL : 0;
    case 0x14: {                                                          /* GET_PROCESS_APERTURES_NEW */
      uint32_t n = U32(8);
      if (!n) { U32(8) = (uint32_t)ngpus; return 0; }
      if (n > (uint32_t)ngpus) n = (uint32_t)ngpus;
      uint64_t *ap = (uint64_t *)(uintptr_t)U64(0);
      if (!ap) return -EFAULT;
      for (uint32_t i = 0; i < n; i++, ap += 7) {
        ap[0] = 1ull << 48; ap[1] = (1ull << 48) + 0xffffffffull;    /* LDS */
        ap[2] = 2ull << 48; ap[3] = (2ull << 48) + 0xffffffffull;    /* scratch */
        ap[4] = 0x200000; ap[5] = 0x7fffffffffffull;                 /* GPUVM: a canonical limit */
        ap[6] = gpus[i];                                             /* gpu_id, pad */
      }
      U32(8) = n;
      return 0;
    }
    case 0x15: {                                                          /* ACQUIRE_VM */
      int drm = S32(0); int gi = gpu_index(U32(4));
      if (fcntl(drm, F_GETFD) < 0) return -EINVAL;
      if (gi < 0) return -EINVAL;
      if (acquired_fd[gi] >= 0 && acquired_fd[gi] != drm) return -EBUSY;
      acquired_fd[gi] = drm; return 0;
    }
    case 0x16: {                                                          /* ALLOC_MEMORY_OF_GPU */
      uint64_t va = U64(0), sz = U64(8); uint32_t gpu = U32(32), flags = U32(36);
      if (!sz) return -EINVAL;
      if (gpu_index(gpu) < 0) return -EINVAL;
      long page = sysconf(_SC_PAGESIZE);
      for (int r = 0; r < nranges; r++)
        if (va / page < ranges[r].end && ranges[r].start < (va + sz + page - 1) / page) return -EADDRINUSE;
      int bo = new_bo(sz, va, gpu, flags);
      if (bo < 0) return -ENOMEM;
      int k = new_kh(bo, gpu, va, sz);
      if (k < 0) { bos[bo].live = 0; return -ENOMEM; }
      U64(16) = (uint64_t)gpu << 32 | khs[k].idr;
      if (flags & 0x10) U64(24) = (uint64_t)gpu << 46;    /* KFD_MMAP_TYPE_MMIO (0) | gpu_id */
      else if (!(flags & 0x4)) U64(24) = (1ULL << 40) + ((uint64_t)bo << 21);  /* DRM mmap offset */
      return 0;
    }
    case 0x17: {                                                          /* FREE_MEMORY_OF_GPU */
      struct kh *k = find_kh(U64(0));
      if (!k) return -EINVAL;
      if (k->mapped) return -EBUSY;
      k->live = 0; bo_maybe_free(k->bo); return 0;
    }
    case 0x18: return map_unmap(arg, 1);
    case 0x19: return map_unmap(arg, 0);
    case 0x1c: {                                                          /* GET_DMABUF_INFO */
      int bo = dmabuf_bo(S32(28));
      if (bo < 0) return bo;
      U64(0) = bos[bo].size; U32(16) = 0;
      U32(20) = bos[bo].gpu_id ? bos[bo].gpu_id : gpus[0]; U32(24) = bos[bo].flags;
      return 0;
    }
    case 0x1d: {                                                          /* IMPORT_DMABUF */
      uint32_t gpu = U32(16);
      if (gpu_index(gpu) < 0) return -EINVAL;
      int bo = dmabuf_bo(S32(20));
      if (bo < 0) return bo;
      int k = new_kh(bo, gpu, U64(0), bos[bo].size);
      if (k < 0) return -ENOMEM;
      U64(8) = (uint64_t)gpu << 32 | khs[k].idr;
      return 0;
    }
    case 0x20: return svm(arg, size);
    case 0x21: {                                                          /* SET_XNACK_MODE */
      int32_t v = S32(0);
      if (v >= 0) xnack = v > 0;
      S32(0) = xnack; return 0;
    }
    case 0x26: return -EINVAL;                                            /* DBG_TRAP: no debugger */
    case 0x23: {                                                          /* AVAILABLE_MEMORY */
      if (gpu_index(U32(8)) < 0) return -EINVAL;
      U64(0) = 8ULL << 30; return 0;
    }
    case 0x24: {                                                          /* EXPORT_DMABUF */
      struct kh *k = find_kh(U64(0));
      if (!k) return -EINVAL;
      int nfd = export_fd(k->bo, U32(8));
      if (nfd < 0) return nfd;
      U32(12) = (uint32_t)nfd; return 0;
    }
    default:
      if (nr == 0 || nr > 0x28) return -EINVAL;  /* outside the kernel's table */
      return -ENOTTY;                             /* a real ioctl this fake does not model */
  }
}

static int create_event(void *arg) {
  uint32_t type = U32(12);
  uint32_t id = type == 0 ? 0 : SIGNAL_LIMIT;
  for (;;) {
    if (!event_find(id)) break;
    id++;
    if (type == 0 && id >= SIGNAL_LIMIT) return -ENOSPC;
  }
  for (int i = 0; i < MAX_EVENTS; i++)
    if (!events[i].live) {
      events[i] = (struct event){1, id, type, U32(16), 0};
      if (type == 0) {
        U64(0) = 2ull << 62;            /* KFD_MMAP_TYPE_EVENTS: the signal page */
        U32(8) = id; U32(28) = id;      /* trigger data, slot */
      } else {
        U32(8) = 0; U32(28) = 0;
      }
      U32(24) = id;
      return 0;
    }
  return -ENOMEM;
}

/* called with mu held; waits with it released */
static int wait_events(void *arg) {
  uint32_t n = U32(8), all = U32(12), timeout = U32(16);
  char *evs = (char *)(uintptr_t)U64(0);
  if (!n || !evs) return -EINVAL;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  if (timeout != 0xffffffffu) {
    dl.tv_sec += timeout / 1000;
    dl.tv_nsec += (long)(timeout % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
  }
  for (;;) {
    uint32_t done = 0;
    for (uint32_t i = 0; i < n; i++) {
      struct event *ev = event_find(*(uint32_t *)(evs + 48 * i + 40));  /* kfd_event_data.event_id */
      if (!ev) return -EINVAL;
      if (ev->signaled) done++;
    }
    if (done && (!all || done == n)) {
      for (uint32_t i = 0; i < n; i++) {
        struct event *ev = event_find(*(uint32_t *)(evs + 48 * i + 40));
        if (ev->signaled && ev->auto_reset) ev->signaled = 0;
      }
      U32(20) = 0;                      /* KFD_IOC_WAIT_RESULT_COMPLETE */
      return 0;
    }
    if (!timeout) { U32(20) = 1; return 0; }
    __atomic_add_fetch(&fakedev_waiting, 1, __ATOMIC_SEQ_CST);
    int r = timeout == 0xffffffffu ? pthread_cond_wait(&ev_cond, &mu)
                                   : pthread_cond_timedwait(&ev_cond, &mu, &dl);
    __atomic_sub_fetch(&fakedev_waiting, 1, __ATOMIC_SEQ_CST);
    if (r == ETIMEDOUT) { U32(20) = 1; return 0; }   /* KFD_IOC_WAIT_RESULT_TIMEOUT */
  }
}

static int drm_ioctl(int fd, unsigned req, void *arg, int accel) {
  unsigned type = (req >> 8) & 0xff, nr = req & 0xff;
  if (type != 0x64) return -ENOTTY;
  if (!arg) return -EFAULT;
  switch (nr) {
    case 0x09: {                                                          /* GEM_CLOSE */
      struct gem *g = gem_find(fd, U32(0));
      if (!g || U32(4)) return -EINVAL;
      g->live = 0; bo_maybe_free(g->bo); return 0;
    }
    case 0x2d: {                                                          /* PRIME_HANDLE_TO_FD */
      uint32_t flags = U32(4);
      if (flags & ~(uint32_t)(O_CLOEXEC | O_RDWR)) return -EINVAL;
      struct gem *g = gem_find(fd, U32(0));
      if (!g) return -ENOENT;
      int nfd = export_fd(g->bo, flags);
      if (nfd < 0) return nfd;
      S32(8) = nfd; return 0;
    }
    case 0x2e: {                                                          /* PRIME_FD_TO_HANDLE */
      int bo = dmabuf_bo(S32(8));
      if (bo < 0) return bo;
      for (int i = 0; i < MAX_GEM; i++)   /* same buffer in one file: same handle */
        if (gems[i].live && gems[i].fd == fd && gems[i].bo == bo) { U32(0) = gems[i].handle; return 0; }
      int h = gem_new(fd, bo);
      if (h < 0) return h;
      U32(0) = (uint32_t)h; return 0;  /* handle is at offset 0, fd at 8 */
    }
    case 0x40:
      if (!accel) {                                                       /* AMDGPU_GEM_CREATE */
        uint64_t sz = U64(0);
        if (!sz) return -EINVAL;
        int bo = new_bo(sz, 0, gpus[0], 0);
        if (bo < 0) return -ENOMEM;
        int h = gem_new(fd, bo);
        if (h < 0) { bos[bo].live = 0; return h; }
        memset(arg, 0, 32);
        U32(0) = (uint32_t)h; return 0;
      }
      return -ENOTTY;
    case 0x43:
      if (accel) {                                                        /* AMDXDNA_CREATE_BO */
        uint64_t sz = U64(16); uint32_t t = U32(24);
        if (U64(0) || !sz || t < 1 || t > 4) return -EINVAL;
        int bo = new_bo(sz, U64(8), 0, t);
        if (bo < 0) return -ENOMEM;
        int h = gem_new(fd, bo);
        if (h < 0) { bos[bo].live = 0; return h; }
        U32(28) = (uint32_t)h; return 0;
      }
      return -ENOTTY;
    default:
      return -ENOTTY;
  }
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap; va_start(ap, request); void *arg = va_arg(ap, void *); va_end(ap);
  if (!real_ioctl) real_ioctl = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
  enum dev d = dev_of(fd);
  if (d == D_NONE) return real_ioctl(fd, request, arg);
  pthread_mutex_lock(&mu);
  if (state_pid != getpid()) reset_state();   /* a fork child: a new KFD process */
  int r = d == D_KFD ? kfd_ioctl(fd, (unsigned)request, arg)
                     : drm_ioctl(fd, (unsigned)request, arg, d == D_ACCEL);
  pthread_mutex_unlock(&mu);
  if (r < 0) { errno = -r; return -1; }
  return r;
}

/* Forget per-fd state when the program closes a device fd, so a new open at
 * the same number starts clean. */
int close(int fd) {
  if (!real_close) real_close = (close_fn)dlsym(RTLD_NEXT, "close");
  enum dev d = dev_of(fd);
  int r = real_close(fd);
  if (r == 0 && d != D_NONE) {
    int e = errno;
    pthread_mutex_lock(&mu);
    if (fd >= 0 && fd < MAX_FDS) kfd_owner[fd] = 0;
    for (int i = 0; i < MAX_GEM; i++)
      if (gems[i].live && gems[i].fd == fd) { gems[i].live = 0; bo_maybe_free(gems[i].bo); }
    pthread_mutex_unlock(&mu);
    errno = e;
  }
  return r;
}

/* munmap forgets the SVM attributes of the pages it removes, like the
 * kernel's MMU-notifier path */
int munmap(void *addr, size_t len) {
  if (!real_munmap) real_munmap = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
  int r = real_munmap(addr, len);
  if (r == 0 && nranges) {
    int e = errno;
    long page = sysconf(_SC_PAGESIZE);
    pthread_mutex_lock(&mu);
    range_drop((uintptr_t)addr / page, ((uintptr_t)addr + len + page - 1) / page);
    pthread_mutex_unlock(&mu);
    errno = e;
  }
  return r;
}

/* mmap of a /dev/kfd or render fd (doorbells, event page, MMIO, VRAM/GTT at
 * an ALLOC's mmap_offset): anonymous shared memory at the same place.  The
 * null device would refuse (ENODEV), and /dev/zero SIGBUSes at a non-zero
 * offset on first touch. */
static void *dev_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (!real_mmap) real_mmap = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
  if (fd >= 0 && dev_of(fd) != D_NONE)
    return real_mmap(addr, len, prot, (flags & ~MAP_PRIVATE) | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return real_mmap(addr, len, prot, flags, fd, off);
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return dev_mmap(addr, len, prot, flags, fd, off);
}
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return dev_mmap(addr, len, prot, flags, fd, off);
}
