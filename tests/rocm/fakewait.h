/* Shared by the runtime test programs: waiting for the runtime's event
 * thread to block in the fake KFD (tests/fakedev counts the waiters). */
#ifndef FAKEWAIT_H
#define FAKEWAIT_H
#include <dlfcn.h>
#include <unistd.h>

/* 1 once a thread is blocked in the fake device's WAIT_EVENTS (it counts
 * them in fakedev_waiting), 0 if none is within 60 s */
static int fake_wait_started(void) {
  int *waiting = dlsym(RTLD_DEFAULT, "fakedev_waiting");
  for (int i = 0; waiting && i < 60000; i++) {
    if (__atomic_load_n(waiting, __ATOMIC_SEQ_CST) > 0) return 1;
    usleep(1000);
  }
  return 0;
}

#endif
