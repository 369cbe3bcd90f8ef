/*
 * kmtops MODE: the thunk's own API (libhsakmt, ROCm 5.2) as kfdtest and
 * runtimes call it, captured on the fake KFD by tests/test_rocm_real.py.
 * No intent calls here (hsaKmt* are not interposed): the analyzer sees
 * only the ioctls.  Exit 0 when every call answered as the mode expects.
 */
#define _GNU_SOURCE
#include <hsakmt.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dlfcn.h>

static int fails;

#include "fakewait.h"
static HSAuint32 gpu_node;

#define WANT(call, want)                                                    \
  do {                                                                      \
    HSAKMT_STATUS s_ = (call);                                              \
    if ((s_ == HSAKMT_STATUS_SUCCESS) != (want)) {                          \
      fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #call, s_);  \
      fails++;                                                              \
    }                                                                       \
  } while (0)
#define OK(call) WANT(call, 1)

static void open_kfd(void) {
  HsaSystemProperties sp;
  if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS) { fprintf(stderr, "open failed\n"); exit(2); }
  OK(hsaKmtAcquireSystemProperties(&sp));
  for (HSAuint32 n = 0; n < sp.NumNodes; n++) {
    HsaNodeProperties np;
    OK(hsaKmtGetNodeProperties(n, &np));
    if (np.NumFComputeCores) gpu_node = n;
  }
  if (!gpu_node) { fprintf(stderr, "no GPU node\n"); exit(2); }
}

static char *pages(size_t n) {
  return mmap(0, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void mode_register(void) {
  char *p = pages(4);
  HSAuint64 va = 0;
  OK(hsaKmtRegisterMemoryToNodes(p, 4 * 4096, 1, &gpu_node));
  OK(hsaKmtMapMemoryToGPU(p, 4 * 4096, &va));
  OK(hsaKmtUnmapMemoryToGPU(p));
  OK(hsaKmtDeregisterMemory(p));
  OK(hsaKmtRegisterMemory(p, 4096));
  OK(hsaKmtDeregisterMemory(p));
  munmap(p, 4 * 4096);
}

/* kfdtest's register-style SVM use: grant, query, revoke the same range */
static void mode_svm(void) {
  char *p = pages(16);
  HSA_SVM_ATTRIBUTE set[] = {
    {HSA_SVM_ATTR_ACCESS_IN_PLACE, gpu_node},
    {HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_COHERENT},
    {HSA_SVM_ATTR_CLR_FLAGS, HSA_SVM_FLAG_GPU_RO},
  };
  OK(hsaKmtSVMSetAttr(p, 16 * 4096, 3, set));
  HSA_SVM_ATTRIBUTE get[] = {
    {HSA_SVM_ATTR_ACCESS, gpu_node}, {HSA_SVM_ATTR_PREFERRED_LOC, 0},
    {HSA_SVM_ATTR_SET_FLAGS, 0}, {HSA_SVM_ATTR_CLR_FLAGS, 0},
  };
  OK(hsaKmtSVMGetAttr(p, 16 * 4096, 4, get));
  HSA_SVM_ATTRIBUTE pref[] = {{HSA_SVM_ATTR_PREFERRED_LOC, 0}};
  OK(hsaKmtSVMSetAttr(p + 8 * 4096, 4 * 4096, 1, pref));   /* an application range inside */
  HSA_SVM_ATTRIBUTE no[] = {{HSA_SVM_ATTR_NO_ACCESS, gpu_node}};
  OK(hsaKmtSVMSetAttr(p, 16 * 4096, 1, no));
  munmap(p, 16 * 4096);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static HsaEvent *ev;
static void *setter(void *arg) {
  (void)arg;
  /* set it during the wait, however late the main thread gets there */
  if (!fake_wait_started()) { fprintf(stderr, "no WAIT_EVENTS in 60 s\n"); fails++; }
  usleep(100000);
  OK(hsaKmtSetEvent(ev));
  return 0;
}

/* WAIT_EVENTS blocks until SET_EVENT from another thread, or times out */
static void mode_events(void) {
  HsaEventDescriptor d = {HSA_EVENTTYPE_SIGNAL, 0, {{0}, 0}};
  OK(hsaKmtCreateEvent(&d, false, false, &ev));
  double t0 = now();
  HSAKMT_STATUS s = hsaKmtWaitOnEvent(ev, 50);
  double waited = now() - t0;
  if (s != HSAKMT_STATUS_WAIT_TIMEOUT || waited < 0.045) {
    fprintf(stderr, "timeout wait: status %d after %.3fs\n", s, waited); fails++;
  }
  pthread_t t;
  pthread_create(&t, 0, setter, 0);
  t0 = now();
  s = hsaKmtWaitOnEvent(ev, 5000);
  waited = now() - t0;
  pthread_join(t, 0);
  if (s != HSAKMT_STATUS_SUCCESS || waited < 0.09 || waited > 4) {
    fprintf(stderr, "set wait: status %d after %.3fs\n", s, waited); fails++;
  }
  OK(hsaKmtDestroyEvent(ev));
}

/* a compute queue straight through the thunk (hsa_queue_create would go on
 * to run blit kernels, which a fake device cannot) */
static void mode_queue(void) {
  size_t n = 0x10000;
  void *ring = mmap(0, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  HSAuint64 va = 0;
  OK(hsaKmtRegisterMemoryToNodes(ring, n, 1, &gpu_node));
  OK(hsaKmtMapMemoryToGPU(ring, n, &va));
  HsaQueueResource q;
  memset(&q, 0, sizeof q);
  OK(hsaKmtCreateQueue(gpu_node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
                       ring, n, 0, &q));
  OK(hsaKmtDestroyQueue(q.QueueId));
  OK(hsaKmtUnmapMemoryToGPU(ring));
  OK(hsaKmtDeregisterMemory(ring));
  munmap(ring, n);
}

static void mode_xnack(void) {
  HSAint32 x = -1;
  OK(hsaKmtGetXNACKMode(&x));
  OK(hsaKmtSetXNACKMode(0));
}

/* two registrations on neighbouring pages; the revoke of one reaches the other */
static void mode_bug_over_revoke(void) {
  char *p = pages(8);
  HSA_SVM_ATTRIBUTE set[] = {
    {HSA_SVM_ATTR_ACCESS_IN_PLACE, gpu_node}, {HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_COHERENT}};
  OK(hsaKmtSVMSetAttr(p, 4 * 4096, 2, set));
  OK(hsaKmtSVMSetAttr(p + 3 * 4096, 4 * 4096, 2, set));
  HSA_SVM_ATTRIBUTE no[] = {{HSA_SVM_ATTR_NO_ACCESS, gpu_node}};
  OK(hsaKmtSVMSetAttr(p + 3 * 4096, 4 * 4096, 1, no));   /* takes page 3 from the first */
  munmap(p, 8 * 4096);
}

/* a registration that grants no GPU relies on default access, which is
 * every GPU only with XNACK on; a neighbour's revoke reaches its last page */
static void mode_default_access(void) {
  HSAint32 x = -1;
  OK(hsaKmtGetXNACKMode(&x));          /* SET_XNACK_MODE(-1): the analyzer learns the mode */
  char *p = pages(8);
  HSA_SVM_ATTRIBUTE reg[] = {{HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_COHERENT}};
  OK(hsaKmtSVMSetAttr(p, 4 * 4096, 1, reg));
  HSA_SVM_ATTRIBUTE set[] = {
    {HSA_SVM_ATTR_ACCESS_IN_PLACE, gpu_node}, {HSA_SVM_ATTR_SET_FLAGS, HSA_SVM_FLAG_COHERENT}};
  OK(hsaKmtSVMSetAttr(p + 3 * 4096, 4 * 4096, 2, set));
  HSA_SVM_ATTRIBUTE no[] = {{HSA_SVM_ATTR_NO_ACCESS, gpu_node}};
  OK(hsaKmtSVMSetAttr(p + 3 * 4096, 4 * 4096, 1, no));
  munmap(p, 8 * 4096);
}

/* the same bug twice: two findings, two fingerprints */
static void mode_bug_over_revoke_twice(void) {
  mode_bug_over_revoke();
  mode_bug_over_revoke();
}

static void mode_bug_double_deregister(void) {
  char *p = pages(2);
  OK(hsaKmtRegisterMemory(p, 2 * 4096));
  OK(hsaKmtDeregisterMemory(p));
  WANT(hsaKmtDeregisterMemory(p), 0);   /* the thunk refuses it itself */
  munmap(p, 2 * 4096);
}

static void mode_bug_close_kfd(void) {
  char *p = pages(2);
  char l[64], t[64];
  for (int fd = 3; fd < 64; fd++) {
    snprintf(l, sizeof l, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(l, t, sizeof t - 1);
    if (n > 0) { t[n] = 0; if (!strcmp(t, "/dev/kfd")) { close(fd); break; } }
  }
  WANT(hsaKmtRegisterMemory(p, 2 * 4096), 0);
}

static const struct { const char *name; void (*fn)(void); } MODES[] = {
  {"register", mode_register}, {"svm", mode_svm}, {"xnack", mode_xnack},
  {"events", mode_events}, {"queue", mode_queue}, {"default_access", mode_default_access},
  {"bug_over_revoke", mode_bug_over_revoke}, {"bug_over_revoke_twice", mode_bug_over_revoke_twice},
  {"bug_double_deregister", mode_bug_double_deregister},
  {"bug_close_kfd", mode_bug_close_kfd},
};

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: kmtops MODE\n"); return 2; }
  for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++)
    if (!strcmp(argv[1], MODES[i].name)) {
      open_kfd();
      MODES[i].fn();
      if (strcmp(argv[1], "bug_close_kfd")) {
        OK(hsaKmtReleaseSystemProperties());
        OK(hsaKmtCloseKFD());
      }
      return fails ? 1 : 0;
    }
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
