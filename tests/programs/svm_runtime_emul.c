/* A threaded emulation of an SVM-API host-registration runtime, for the
 * liveness rules: the mechanisms seen in the real #6699 libhsakmt
 * (../shared/data/real-v1), reproduced on the fake KFD with schedules of our
 * own, with the program's own record of what each revoke really hit.
 *
 *   svm_runtime_emul MODE SEED [poll] [app] [intent] [shared] [mixed] [v1] [wide] [joined]
 *
 * The runtime keeps its registrations in a table under a mutex, like the
 * #6699 code: register = SET_ATTR [SET_FLAGS COHERENT, CLR_FLAGS
 * EXT_COHERENT], map = SET_ATTR [ACCESS_IN_PLACE gpu], deregister (last
 * reference) = SET_ATTR [NO_ACCESS gpu, CLR_FLAGS COHERENT, CLR_FLAGS
 * EXT_COHERENT] over the buffer minus the pages other registrations still
 * cover (computed correctly here).  MODE says when that revoke is issued:
 *   late     computed under the mutex, issued after it is dropped, one in
 *            three after a 100-600 us sleep (a preempted thread): a neighbour
 *            may register, map and be in use before it lands
 *   ordered  issued under the mutex: nothing can slip in between
 *   silent   deregistration issues no ioctl (the baseline runtime)
 * Pins are laid out like consecutive malloc(65536) chunks pinned clr-style
 * (17 pages, neighbours share a page).  Before the free-running part, one
 * race is forced (as pin17_race does): T1's revoke of slot 0 is computed,
 * then held until T2 has pinned slot 1, then issued.
 *   poll     each pin reads its range back (GET_ATTR) after the forced race
 *            and while it holds the pin: the trace then shows the pin still
 *            in use after a revoke landed
 *   intent   the program reaches the runtime through ROCr's intent calls:
 *            pin = hsa_amd_memory_lock(ptr, 65536, [agent], 1, &p) doing the
 *            register and map, unpin = hsa_amd_memory_unlock(ptr) doing the
 *            deregistration (its revoke still issued late, inside the
 *            unlock).  Built as a shared library (-DEMUL_LIB) with the
 *            program's main in a launcher, so the calls go through the PLT
 *            and the capture library interposes on them as on ROCr's
 *   shared   two workers may pin the same slot at once (the runtime's
 *            refcount: the first pin registers, the last unpin revokes)
 *   app      each worker also manages an SVM range of its own (with intent:
 *            through hsa_amd_svm_attributes_set) whose first
 *            SET_ATTR is shaped like a registration (COHERENT and
 *            ACCESS_IN_PLACE in one call), makes half of it coarse, and ends
 *            it with NO_ACCESS on exactly its range
 *   mixed    the slots' geometry is drawn from SEED instead: pointers at
 *            page starts or inside pages, sizes from 32 bytes to 16 pages,
 *            so pins share pages, enclose each other, start in the same
 *            page or cover the same pages
 *   v1       the revoke is computed the way the #6699 code computes it
 *            (bugs included): registrations keyed by their first page, a
 *            second registration there grows the extent (and joins the
 *            refcount), the last deregistration revokes the extent minus
 *            the registrations met by a walk that starts at the nearest
 *            registration to its left: one that encloses it from further
 *            left is skipped.  Without v1 every other registration's pages
 *            are left out (a correct runtime).
 *   wide     8 worker threads over 14 slots instead of 4 over 8 (more
 *            pins in use at once, more sharing, more preempted revokes)
 *   joined   the forced race's victim (slot 1) is unpinned by main after it
 *            has joined T1 and T2, as pin17_race does, instead of by T2: only
 *            the program's joins (which the capture logs) show that its
 *            release began after T1's revoke landed
 *
 * Oracle: pins go in use (after their map) and out of use (before their
 * deregistration) under a truth mutex, and every revoke lands under it, so
 * the program knows exactly which pages of pins in use each revoke took:
 * one "DAMAGE <start> <end> revoke <start> <end> pin <start> <end>" line
 * per (revoke, pin) on stdout (the pages taken, then the revoke's range and
 * the pin's, to find the revoke's line in the log when a page is missed). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define GPU 0x1a2b
#define MAXSLOT 14
#define MAXTHR 8
static int nslot = 8, nthr = 4;   /* `wide`: 14 and 8 */
#define ROUNDS 60
#define A_ACCESS 2
#define A_IN_PLACE 3
#define A_NO_ACCESS 4
#define A_SET 5
#define A_CLR 6
#define F_COH 0x2
#define F_EXT 0x80

struct attr { uint32_t type, value; };
struct svm { uint64_t start, size; uint32_t op, nattr; struct attr a[4]; };

static int kfd;
static int mode_late, mode_ordered, mode_silent, poll_mode, app_mode, intent_mode, shared_mode, joined_mode;
static char *base;
static pthread_mutex_t rt = PTHREAD_MUTEX_INITIALIZER;   /* the runtime's lock */
static pthread_mutex_t tm = PTHREAD_MUTEX_INITIALIZER;   /* the oracle's lock */
static pthread_mutex_t sl = PTHREAD_MUTEX_INITIALIZER;   /* slot ownership */
static struct { uintptr_t s, e; int ref; } reg[64];
static int nreg;
static int in_use[MAXSLOT], busy[MAXSLOT];

static int mixed_mode, v1_mode;
/* each slot's pointer (offset into base) and size: by default consecutive
 * malloc(65536) chunks, drawn from the seed with `mixed` */
static uintptr_t slot_off[MAXSLOT];
static size_t slot_len[MAXSLOT];
#define ARENA_PAGES 40
static void layout(unsigned seed) {
  static const size_t sizes[] = {0x20, 0x800, 0x1000, 0x1800, 0x3000, 0x8000, 0x10000};
  static const uintptr_t in_page[] = {0, 0x10, 0x800, 0xff0};
  for (int i = 0; i < nslot; i++) {
    if (!mixed_mode) {
      slot_off[i] = 0x10 + (uintptr_t)i * 0x10010;
      slot_len[i] = 65536;
      continue;
    }
    size_t len = sizes[rand_r(&seed) % 7];
    int dup;
    do {   /* one pointer per slot: ROCr keys its locks by pointer */
      uintptr_t pg = rand_r(&seed) % (ARENA_PAGES - 17);
      slot_off[i] = pg * PAGE + in_page[rand_r(&seed) % 4];
      dup = 0;
      for (int j = 0; j < i; j++) dup |= slot_off[j] == slot_off[i];
    } while (dup);
    slot_len[i] = len;
  }
}
static uintptr_t lock_ptr(int i) { return (uintptr_t)base + slot_off[i]; }
static uintptr_t slot_s(int i) { return lock_ptr(i) & ~(PAGE - 1); }
static uintptr_t slot_e(int i) { return (lock_ptr(i) + slot_len[i] + PAGE - 1) & ~(PAGE - 1); }

static int svm(uintptr_t s, uintptr_t e, uint32_t op, int n, struct attr *a) {
  struct svm x = {s, e - s, op, (uint32_t)n, {{0}}};
  memcpy(x.a, a, n * sizeof *a);
  unsigned long req = _IOC(_IOC_READ | _IOC_WRITE, 'K', 0x20, 24 + 8 * n);
  if (ioctl(kfd, req, &x)) { perror("svm ioctl"); exit(2); }
  return 0;
}

/* the registration a range belongs to: its exact range, or (v1) its first page */
static int reg_find(uintptr_t s, uintptr_t e) {
  int i;
  for (i = 0; i < nreg && !(reg[i].s == s && (v1_mode || reg[i].e == e)); i++) ;
  return i;
}

static void rt_register(uintptr_t s, uintptr_t e) {
  pthread_mutex_lock(&rt);
  int i = reg_find(s, e);
  if (i < nreg) {
    reg[i].ref++;
    if (reg[i].e < e) reg[i].e = e;     /* v1: the extent only grows */
  } else reg[nreg++] = (typeof(reg[0])){s, e, 1};
  pthread_mutex_unlock(&rt);
  struct attr a[2] = {{A_SET, F_COH}, {A_CLR, F_EXT}};
  svm(s, e, 0, 2, a);
}

static void rt_map(uintptr_t s, uintptr_t e) {
  struct attr a[1] = {{A_IN_PLACE, GPU}};
  svm(s, e, 0, 1, a);
}

#define MAXPIECES (MAXSLOT + 2)
/* [s, e) minus the pages of the registrations `keep` says survive, in
 * pieces; the registrations are not sorted, so every piece is checked */
static int subtract(uintptr_t s, uintptr_t e, int (*keep)(int, uintptr_t), uintptr_t out[MAXPIECES][2]) {
  int n = 1;
  out[0][0] = s; out[0][1] = e;
  for (int i = 0; i < nreg; i++) {
    if (!keep(i, s)) continue;
    for (int k = 0; k < n; k++) {
      uintptr_t a = out[k][0], b = out[k][1];
      if (reg[i].e <= a || reg[i].s >= b) continue;
      if (reg[i].s > a && reg[i].e < b) {          /* inside: two pieces */
        out[k][1] = reg[i].s;
        out[n][0] = reg[i].e; out[n][1] = b; n++;
      } else if (reg[i].s > a) out[k][1] = reg[i].s;
      else if (reg[i].e < b) out[k][0] = reg[i].e;
      else { out[k][0] = out[n - 1][0]; out[k][1] = out[n - 1][1]; n--; k--; }
    }
  }
  return n;
}
static int every(int i, uintptr_t s) { (void)i; (void)s; return 1; }
/* v1's walk: from the registration with the greatest first page left of
 * s (or the first one right of it when there is none) rightwards */
static int walked(int i, uintptr_t s) {
  uintptr_t left = 0;
  int any = 0;
  for (int j = 0; j < nreg; j++)
    if (reg[j].s < s && (!any || reg[j].s > left)) { left = reg[j].s; any = 1; }
  return any ? reg[i].s >= left : 1;
}
static int survivors_cut(uintptr_t s, uintptr_t e, uintptr_t out[MAXPIECES][2]) {
  return subtract(s, e, v1_mode ? walked : every, out);
}

/* the revoke lands: the oracle notes the pins in use it takes pages from */
static void land(uintptr_t s, uintptr_t e) {
  for (int j = 0; j < nslot; j++) {
    if (!in_use[j] || slot_e(j) <= s || slot_s(j) >= e) continue;
    uintptr_t a = slot_s(j) > s ? slot_s(j) : s, b = slot_e(j) < e ? slot_e(j) : e;
    printf("DAMAGE %#lx %#lx revoke %#lx %#lx pin %#lx %#lx\n", (unsigned long)a, (unsigned long)b,
           (unsigned long)s, (unsigned long)e, (unsigned long)slot_s(j), (unsigned long)slot_e(j));
  }
  struct attr a[3] = {{A_NO_ACCESS, GPU}, {A_CLR, F_COH}, {A_CLR, F_EXT}};
  svm(s, e, 0, 3, a);
}

/* hold: called between computing the revoke and issuing it (the forced race) */
static void rt_deregister(uintptr_t s, uintptr_t e, unsigned *seed, void (*hold)(void)) {
  uintptr_t pieces[MAXPIECES][2];
  int n = 0, i;
  if (mode_ordered) pthread_mutex_lock(&tm);
  pthread_mutex_lock(&rt);
  i = reg_find(s, e);
  if (i < nreg && --reg[i].ref == 0) {
    e = reg[i].e;                       /* v1: the grown extent */
    reg[i] = reg[--nreg];
    if (!mode_silent) n = survivors_cut(s, e, pieces);
  }
  if (mode_ordered) {
    for (int k = 0; k < n; k++) land(pieces[k][0], pieces[k][1]);
    pthread_mutex_unlock(&rt);
    pthread_mutex_unlock(&tm);
    return;
  }
  pthread_mutex_unlock(&rt);
  if (hold) hold();
  if (mode_late && seed && rand_r(seed) % 3 == 0) {
    struct timespec ts = {0, (long)(100 + rand_r(seed) % 500) * 1000L};
    nanosleep(&ts, 0);
  }
  for (int k = 0; k < n; k++) {
    pthread_mutex_lock(&tm);
    land(pieces[k][0], pieces[k][1]);
    pthread_mutex_unlock(&tm);
  }
}

/* ROCr's intent calls, as the runtime library exports them (hsa.h and
 * hsa_ext_amd.h shapes: an agent is a 64-bit handle, status 0 is success).
 * The unlock's schedule (the seed of its sleep, the forced race's hold)
 * rides in thread-locals, as it cannot in the call's arguments. */
#define LOCK_SIZE 65536UL
typedef struct { uint64_t handle; } hsa_agent_t;
static __thread unsigned *t_seed;
static __thread void (*t_hold)(void);
/* the unpinning thread holds the oracle's lock into the unlock call and
 * drops it there, so the unlock's logged entry comes before any revoke can
 * land on a pin the oracle no longer counts as in use (the trace's rule:
 * a pin is in use until its unlock begins) */
static __thread int t_holds_tm;
static uintptr_t page_down(uintptr_t a) { return a & ~(PAGE - 1); }
static uintptr_t page_up(uintptr_t a) { return (a + PAGE - 1) & ~(PAGE - 1); }

int hsa_amd_memory_lock(void *host_ptr, size_t size, hsa_agent_t *agents, int num_agent, void **agent_ptr) {
  (void)agents; (void)num_agent;
  uintptr_t p = (uintptr_t)host_ptr;
  rt_register(page_down(p), page_up(p + size));
  rt_map(page_down(p), page_up(p + size));
  if (agent_ptr) *agent_ptr = host_ptr;
  return 0;
}

int hsa_amd_memory_unlock(void *host_ptr) {
  uintptr_t p = (uintptr_t)host_ptr;
  if (t_holds_tm) {
    /* the log has microseconds: keep the oracle's lock 3 us past this
     * call's logged entry, so no revoke lands in the same microsecond
     * (an order the trace could not show) */
    struct timespec a, b;
    clock_gettime(CLOCK_REALTIME, &a);
    do clock_gettime(CLOCK_REALTIME, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 3000);
    t_holds_tm = 0;
    pthread_mutex_unlock(&tm);
  }
  size_t len = LOCK_SIZE;              /* the runtime remembers each lock's size */
  for (int i = 0; i < nslot; i++)
    if (lock_ptr(i) == p) len = slot_len[i];
  rt_deregister(page_down(p), page_up(p + len), t_seed, t_hold);
  return 0;
}

static void pin(int i) {
  pthread_mutex_lock(&tm);
  if (intent_mode) {
    hsa_agent_t gpu = {GPU};
    void *ap;
    hsa_amd_memory_lock((void *)lock_ptr(i), slot_len[i], &gpu, 1, &ap);
  } else {
    rt_register(slot_s(i), slot_e(i));
    rt_map(slot_s(i), slot_e(i));
  }
  in_use[i]++;
  pthread_mutex_unlock(&tm);
}

static void readback(int i) {
  struct attr a[1] = {{A_ACCESS, GPU}};
  svm(slot_s(i), slot_e(i), 1, 1, a);
}

static void unpin(int i, unsigned *seed, void (*hold)(void)) {
  pthread_mutex_lock(&tm);
  in_use[i]--;
  if (intent_mode) {
    t_seed = seed;
    t_hold = hold;
    t_holds_tm = 1;
    hsa_amd_memory_unlock((void *)lock_ptr(i));   /* drops tm */
    return;
  }
  pthread_mutex_unlock(&tm);
  rt_deregister(slot_s(i), slot_e(i), seed, hold);
}

/* the forced race: T1's revoke of slot 0 is held until T2 has pinned slot 1 */
static pthread_mutex_t gm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gc = PTHREAD_COND_INITIALIZER;
static int stage;
static void set_stage(int s) {
  pthread_mutex_lock(&gm); if (s > stage) stage = s; pthread_cond_broadcast(&gc); pthread_mutex_unlock(&gm);
}
static void wait_stage(int s) {
  pthread_mutex_lock(&gm); while (stage < s) pthread_cond_wait(&gc, &gm); pthread_mutex_unlock(&gm);
}
static void t1_hold(void) { set_stage(1); wait_stage(2); }
static void *t1(void *u) { (void)u; unpin(0, 0, mode_ordered || mode_silent ? 0 : t1_hold); set_stage(1); set_stage(3); return 0; }
static void *t2(void *u) {
  (void)u;
  wait_stage(1);
  pin(1);
  set_stage(2);
  if (joined_mode) return 0;   /* main unpins slot 1 after the joins */
  wait_stage(3);
  if (poll_mode) readback(1);
  unpin(1, 0, 0);
  return 0;
}

/* hsa_amd_svm_attributes_set (hsa_ext_amd.h): attribute/value pairs; the
 * runtime turns them into one SET_ATTR.  Only what app_range asks for. */
typedef struct { uint64_t attribute, value; } hsa_amd_svm_attribute_pair_t;
#define HSA_SVM_GLOBAL_FLAG 0
#define HSA_SVM_FINE 0
#define HSA_SVM_COARSE 1
#define HSA_SVM_ACCESSIBLE 0x200
#define HSA_SVM_ACCESSIBLE_IN_PLACE 0x201
#define HSA_SVM_NO_ACCESS 0x202

int hsa_amd_svm_attributes_set(void *ptr, size_t size, hsa_amd_svm_attribute_pair_t *list, size_t count) {
  struct attr a[4];
  int n = 0;
  for (size_t i = 0; i < count && n < 4; i++) {
    uint64_t t = list[i].attribute, v = list[i].value;
    if (t == HSA_SVM_GLOBAL_FLAG) a[n++] = (struct attr){v == HSA_SVM_FINE ? A_SET : A_CLR, F_COH};
    else if (t == HSA_SVM_ACCESSIBLE) a[n++] = (struct attr){A_ACCESS, (uint32_t)v};
    else if (t == HSA_SVM_ACCESSIBLE_IN_PLACE) a[n++] = (struct attr){A_IN_PLACE, (uint32_t)v};
    else if (t == HSA_SVM_NO_ACCESS) a[n++] = (struct attr){A_NO_ACCESS, (uint32_t)v};
  }
  uintptr_t p = (uintptr_t)ptr;
  svm(page_down(p), page_up(p + size), 0, n, a);
  return 0;
}

static void app_set(uintptr_t s, uintptr_t e, int n, struct attr *a, hsa_amd_svm_attribute_pair_t *pairs) {
  if (intent_mode) hsa_amd_svm_attributes_set((void *)s, e - s, pairs, (size_t)n);
  else svm(s, e, 0, n, a);
}

static void app_range(unsigned *seed) {
  char *m = aligned_alloc(PAGE, 4 * PAGE);
  memset(m, 0, 4 * PAGE);
  uintptr_t s = (uintptr_t)m, e = s + 4 * PAGE;
  struct attr fine[2] = {{A_SET, F_COH}, {A_IN_PLACE, GPU}};
  hsa_amd_svm_attribute_pair_t fine_p[2] = {{HSA_SVM_GLOBAL_FLAG, HSA_SVM_FINE}, {HSA_SVM_ACCESSIBLE_IN_PLACE, GPU}};
  app_set(s, e, 2, fine, fine_p);
  struct attr coarse[2] = {{A_CLR, F_COH}, {A_ACCESS, GPU}};
  hsa_amd_svm_attribute_pair_t coarse_p[2] = {{HSA_SVM_GLOBAL_FLAG, HSA_SVM_COARSE}, {HSA_SVM_ACCESSIBLE, GPU}};
  app_set(s + 2 * PAGE, e, 2, coarse, coarse_p);
  for (volatile int k = 0; k < (int)(rand_r(seed) % 20000); k++) ;
  struct attr done[1] = {{A_NO_ACCESS, GPU}};
  hsa_amd_svm_attribute_pair_t done_p[1] = {{HSA_SVM_NO_ACCESS, GPU}};
  app_set(s, e, 1, done, done_p);
  free(m);
}

static void *worker(void *u) {
  unsigned seed = (unsigned)(uintptr_t)u;
  if (app_mode) app_range(&seed);
  for (int r = 0; r < ROUNDS; r++) {
    int i;
    pthread_mutex_lock(&sl);
    do i = rand_r(&seed) % nslot; while (busy[i] >= (shared_mode ? 2 : 1));
    busy[i]++;
    pthread_mutex_unlock(&sl);
    pin(i);
    int spins = rand_r(&seed) % 20000;
    for (volatile int k = 0; k < spins; k++)
      if (poll_mode && k == spins / 2) readback(i);
    unpin(i, &seed, 0);
    pthread_mutex_lock(&sl);
    busy[i]--;
    pthread_mutex_unlock(&sl);
  }
  return 0;
}

#ifdef EMUL_LIB
int emul_main(int argc, char **argv) {
#else
int main(int argc, char **argv) {
#endif
  if (argc < 3) { fprintf(stderr, "usage: %s late|ordered|silent SEED [poll] [app] [intent] [shared] [mixed] [v1] [wide] [joined]\n", argv[0]); return 2; }
  mode_late = !strcmp(argv[1], "late");
  mode_ordered = !strcmp(argv[1], "ordered");
  mode_silent = !strcmp(argv[1], "silent");
  unsigned seed0 = (unsigned)strtoul(argv[2], 0, 0);
  for (int i = 3; i < argc; i++) {
    poll_mode |= !strcmp(argv[i], "poll");
    joined_mode |= !strcmp(argv[i], "joined");
    app_mode |= !strcmp(argv[i], "app");
    intent_mode |= !strcmp(argv[i], "intent");
    shared_mode |= !strcmp(argv[i], "shared");
    mixed_mode |= !strcmp(argv[i], "mixed");
    v1_mode |= !strcmp(argv[i], "v1");
    if (!strcmp(argv[i], "wide")) { nslot = MAXSLOT; nthr = MAXTHR; }
  }
  layout(seed0 * 31u + 7u);
#ifndef EMUL_LIB
  if (intent_mode) { fprintf(stderr, "%s: intent needs the library build (-DEMUL_LIB)\n", argv[0]); return 2; }
#endif
  setvbuf(stdout, 0, _IONBF, 0);
  kfd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
  if (kfd < 0) { perror("/dev/kfd"); return 2; }
  size_t len = (nslot + 1) * 0x10010 + PAGE;
  if (len < ARENA_PAGES * PAGE) len = ARENA_PAGES * PAGE;
  base = aligned_alloc(PAGE, (len + PAGE - 1) & ~(PAGE - 1));
  memset(base, 0, len);
  pin(0);
  pthread_t x, y, t[MAXTHR];
  pthread_create(&x, 0, t1, 0);
  pthread_create(&y, 0, t2, 0);
  pthread_join(x, 0);
  pthread_join(y, 0);
  if (joined_mode) unpin(1, 0, 0);
  for (int i = 0; i < nthr; i++)
    pthread_create(&t[i], 0, worker, (void *)(uintptr_t)(seed0 * 7919u + (unsigned)i + 1));
  for (int i = 0; i < nthr; i++) pthread_join(t[i], 0);
  free(base);
  return 0;
}
