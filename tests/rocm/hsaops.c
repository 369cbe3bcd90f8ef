/*
 * hsaops MODE: calls of the real ROCm runtime (libhsa-runtime64, ROCm 5.2)
 * that tests/test_rocm_real.py captures on the fake KFD.  Correct modes use
 * the APIs as documented; the bug_* modes misuse them on purpose.  Exit 0
 * when every call answered as the mode expects, 1 otherwise (the test
 * checks it, so a fake device that answers wrongly cannot pass silently).
 */
#define _GNU_SOURCE
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dlfcn.h>

static hsa_agent_t gpu, cpu;
static hsa_amd_memory_pool_t vram, sysfine;
static int fails;

#include "fakewait.h"

#define CHECK(call, want)                                                   \
  do {                                                                      \
    hsa_status_t s_ = (call);                                               \
    if ((s_ == HSA_STATUS_SUCCESS) != (want)) {                             \
      fprintf(stderr, "%s:%d: %s = %#x\n", __FILE__, __LINE__, #call, s_); \
      fails++;                                                              \
    }                                                                       \
  } while (0)
#define OK(call) CHECK(call, 1)

static hsa_status_t agent_cb(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_GPU) gpu = a;
  if (t == HSA_DEVICE_TYPE_CPU) cpu = a;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t pool_cb(hsa_amd_memory_pool_t p, void *data) {
  hsa_amd_segment_t seg;
  uint32_t flags = 0;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  if (seg != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  if (data == &gpu && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)) vram = p;
  if (data == &cpu && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
      && !(flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT))
    sysfine = p;
  return HSA_STATUS_SUCCESS;
}

static void init(void) {
  if (hsa_init() != HSA_STATUS_SUCCESS) { fprintf(stderr, "hsa_init failed\n"); exit(2); }
  hsa_iterate_agents(agent_cb, 0);
  if (!gpu.handle || !cpu.handle) { fprintf(stderr, "no GPU/CPU agent\n"); exit(2); }
  hsa_amd_agent_iterate_memory_pools(gpu, pool_cb, &gpu);
  hsa_amd_agent_iterate_memory_pools(cpu, pool_cb, &cpu);
}

/* --- SVM attributes ------------------------------------------------------ */

static void svm_fine(void *p, size_t n) {
  hsa_amd_svm_attribute_pair_t a[] = {
    {HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED},
    {HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE, gpu.handle},
  };
  OK(hsa_amd_svm_attributes_set(p, n, a, 2));
}

static void svm_coarse(void *p, size_t n) {
  hsa_amd_svm_attribute_pair_t a[] = {
    {HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED}};
  OK(hsa_amd_svm_attributes_set(p, n, a, 1));
}

static void svm_noaccess(void *p, size_t n) {
  hsa_amd_svm_attribute_pair_t a[] = {{HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS, gpu.handle}};
  OK(hsa_amd_svm_attributes_set(p, n, a, 1));
}

static void svm_get(void *p, size_t n) {
  hsa_amd_svm_attribute_pair_t a[] = {
    {HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu.handle},
    {HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 0},
  };
  OK(hsa_amd_svm_attributes_get(p, n, a, 2));
}

/* two 64 KiB-ish heap buffers that share a page: [a, a+n) and [a+n, ...) */
static char *neighbours(size_t n, char **b) {
  char *a = aligned_alloc(4096, 4 * n);
  a += 0x380;                      /* not page aligned, like malloc'd memory */
  *b = a + n;                      /* starts inside a's last page */
  return a;
}

static void mode_svm_malloc(void) {
  size_t n = 0x10000;
  char *a = malloc(n);
  memset(a, 1, n);
  svm_fine(a, n);
  svm_get(a, n);
  svm_noaccess(a, n);              /* the program ends its own range */
  free(a);
}

static void mode_svm_mmap(void) {
  size_t n = 16 * 4096;
  char *a = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  hsa_amd_svm_attribute_pair_t pl[] = {
    {HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, cpu.handle},
    {HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu.handle},
  };
  OK(hsa_amd_svm_attributes_set(a, n, pl, 2));
  svm_coarse(a, n);                /* the program's own range: coarse is its choice */
  svm_get(a, n);
  munmap(a, n);
}

static void mode_svm_neighbours(void) {
  /* fine-grained A and B sharing a page; the program then takes both away
   * in one call over the two of them */
  char *b, *a = neighbours(0x8000, &b);
  svm_fine(a, 0x8000);
  svm_fine(b, 0x8000);
  svm_get(a, 0x8000);
  svm_noaccess(a, 0x10000);
}

static void mode_svm_pool(void) {
  void *p = 0;
  OK(hsa_amd_memory_pool_allocate(sysfine, 0x20000, 0, &p));
  /* pool memory is a userptr buffer: the kernel refuses SVM attributes on it */
  hsa_amd_svm_attribute_pair_t a[] = {{HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu.handle}};
  CHECK(hsa_amd_svm_attributes_set(p, 0x20000, a, 1), 0);
  OK(hsa_amd_memory_pool_free(p));
}

/* --- locks --------------------------------------------------------------- */

static void *lock(void *p, size_t n) {
  void *agent_ptr = 0;
  OK(hsa_amd_memory_lock(p, n, &gpu, 1, &agent_ptr));
  return agent_ptr;
}

static void mode_lock(void) {
  size_t n = 0x11000;
  char *a = malloc(n);
  lock(a, n);
  OK(hsa_amd_memory_unlock(a));
  free(a);
}

static void mode_lock_nested(void) {
  size_t n = 0x4000;
  char *a = malloc(n);
  lock(a, n);
  lock(a, n);
  OK(hsa_amd_memory_unlock(a));
  OK(hsa_amd_memory_unlock(a));
  free(a);
}

static void mode_lock_overlap(void) {
  char *a = aligned_alloc(4096, 0x10000);
  lock(a, 0x8000);
  lock(a + 0x4000, 0x8000);
  OK(hsa_amd_memory_unlock(a));
  OK(hsa_amd_memory_unlock(a + 0x4000));
  free(a);
}

static void mode_lock_neighbours(void) {
  char *b, *a = neighbours(0x8000, &b);
  lock(a, 0x8000);
  lock(b, 0x8000);
  OK(hsa_amd_memory_unlock(a));
  OK(hsa_amd_memory_unlock(b));
}

/* the false positive of ROCm 5.2 traces: a lock, and the program's own
 * grant and revoke of a neighbour buffer sharing its last page */
static void mode_lock_svm_neighbour(void) {
  char *b, *a = neighbours(0x8000, &b);
  lock(a, 0x8000);
  svm_fine(b, 0x8000);
  svm_noaccess(b, 0x8000);
  lock(b + 0x8000, 0x4000);        /* a later lock on pages B's revoke left NO_ACCESS */
  OK(hsa_amd_memory_unlock(b + 0x8000));
  lock(b, 0x4000);
  OK(hsa_amd_memory_unlock(b));
  OK(hsa_amd_memory_unlock(a));
}

static char *thread_bufs;
static void *locker(void *arg) {
  long i = (long)arg;
  char *p = thread_bufs + i * 0x3000 + 0x100;   /* page-sharing neighbours */
  for (int k = 0; k < 20; k++) {
    lock(p, 0x2e00);
    OK(hsa_amd_memory_unlock(p));
  }
  return 0;
}

static void mode_lock_threads(void) {
  pthread_t t[4];
  thread_bufs = aligned_alloc(4096, 16 * 0x3000);
  for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, locker, (void *)i);
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
}

/* --- pools --------------------------------------------------------------- */

static void mode_pool(void) {
  void *v = 0, *s = 0;
  OK(hsa_amd_memory_pool_allocate(vram, 0x200000, 0, &v));
  OK(hsa_amd_memory_pool_allocate(sysfine, 0x10000, 0, &s));
  OK(hsa_amd_agents_allow_access(1, &gpu, 0, s));
  OK(hsa_amd_agents_allow_access(1, &cpu, 0, v));
  OK(hsa_amd_memory_pool_free(s));
  OK(hsa_amd_memory_pool_free(v));
}

static void mode_ipc(void) {
  void *v = 0;
  hsa_amd_ipc_memory_t h;
  OK(hsa_amd_memory_pool_allocate(vram, 0x200000, 0, &v));
  /* ROCm 5.2 exports through a ROCm-only ioctl an upstream KFD does not
   * have: the call fails and the program goes on */
  CHECK(hsa_amd_ipc_memory_create(v, 0x200000, &h), 0);
  OK(hsa_amd_memory_pool_free(v));
}

/* --- misuse -------------------------------------------------------------- */

static void mode_bug_double_unlock(void) {
  char *a = malloc(0x4000);
  lock(a, 0x4000);
  OK(hsa_amd_memory_unlock(a));
  hsa_amd_memory_unlock(a);        /* not locked any more */
  free(a);
}

static void mode_bug_free_twice(void) {
  void *v = 0;
  OK(hsa_amd_memory_pool_allocate(vram, 0x200000, 0, &v));
  OK(hsa_amd_memory_pool_free(v));
  hsa_amd_memory_pool_free(v);
}

static void mode_bug_use_after_free(void) {
  void *s = 0;
  OK(hsa_amd_memory_pool_allocate(sysfine, 0x10000, 0, &s));
  OK(hsa_amd_memory_pool_free(s));
  hsa_amd_agents_allow_access(1, &gpu, 0, s);   /* freed */
}

/* the program revokes, through the SVM API, a page its own fine-grained
 * range relies on: the neighbour's NO_ACCESS rounds outward onto it */
static void mode_bug_revoke_shared(void) {
  char *b, *a = neighbours(0x8000, &b);
  svm_fine(a, 0x8000);
  svm_fine(b, 0x8000);
  svm_noaccess(b, 0x8000);         /* takes a's last page too */
  svm_coarse(b + 0x8000, 0x1000);
}

/* and a lock: SVM changes on a userptr lock's host pages cannot hurt it */
static void mode_revoke_locked(void) {
  char *b, *a = neighbours(0x8000, &b);
  lock(a, 0x8000);
  svm_noaccess(a, 0x8000);
  OK(hsa_amd_memory_unlock(a));
}

static void mode_bug_close_kfd(void) {
  /* the runtime's /dev/kfd fd, closed behind its back, once ROCr's event
   * thread sits in its WAIT_EVENTS (started at init; closed before that, it
   * would spin on EBADF a varying number of times): the fake device says
   * when a wait is under way, however slowly that thread gets there */
  if (!fake_wait_started()) { fprintf(stderr, "no WAIT_EVENTS in 60 s\n"); _exit(1); }
  char p[64], t[64];
  for (int fd = 3; fd < 64; fd++) {
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(p, t, sizeof t - 1);
    if (n > 0) { t[n] = 0; if (!strcmp(t, "/dev/kfd")) { close(fd); break; } }
  }
  void *v = 0;
  CHECK(hsa_amd_memory_pool_allocate(vram, 0x200000, 0, &v), 0);
  /* no hsa_shut_down: ROCr's event thread would spin on the dead fd */
  fflush(0);
  _exit(fails ? 1 : 0);
}

static const struct { const char *name; void (*fn)(void); } MODES[] = {
  {"init", 0},
  {"svm_malloc", mode_svm_malloc}, {"svm_mmap", mode_svm_mmap},
  {"svm_neighbours", mode_svm_neighbours}, {"svm_pool", mode_svm_pool},
  {"lock", mode_lock}, {"lock_nested", mode_lock_nested},
  {"lock_overlap", mode_lock_overlap}, {"lock_neighbours", mode_lock_neighbours},
  {"lock_svm_neighbour", mode_lock_svm_neighbour}, {"lock_threads", mode_lock_threads},
  {"revoke_locked", mode_revoke_locked},
  {"pool", mode_pool}, {"ipc", mode_ipc},
  {"bug_double_unlock", mode_bug_double_unlock}, {"bug_free_twice", mode_bug_free_twice},
  {"bug_use_after_free", mode_bug_use_after_free},
  {"bug_revoke_shared", mode_bug_revoke_shared}, {"bug_close_kfd", mode_bug_close_kfd},
};

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: hsaops MODE\n"); return 2; }
  for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++)
    if (!strcmp(argv[1], MODES[i].name)) {
      init();
      if (MODES[i].fn) MODES[i].fn();
      OK(hsa_shut_down());
      return fails ? 1 : 0;
    }
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
