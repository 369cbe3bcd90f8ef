/* A thread hammers ioctl() on fd 3, which the program keeps closed (the
 * lowest free number, with 300 fds open above it), while main exits: every
 * call must fail with EBADF, even while the library takes its exit-time fd
 * snapshot.  The thread reports anything else on stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static volatile int started;

static void *hammer(void *arg) {
  (void)arg;
  for (;;) {
    int r = ioctl(3, 0xc0184b0c, 0);   /* AMDKFD_IOC_WAIT_EVENTS */
    int e = errno;
    started = 1;
    if (r != -1 || e != EBADF) {
      char msg[64];
      int n = snprintf(msg, sizeof msg, "ioctl(3) = %d errno %d\n", r, e);
      write(1, msg, n);
    }
  }
  return NULL;
}

int main(void) {
  for (int i = 0; i < 300; i++) open("/dev/null", O_RDONLY);
  close(3);
  pthread_t t;
  pthread_create(&t, NULL, hammer, NULL);
  while (!started) usleep(100);
  usleep(2000);
  write(1, "exit\n", 5);
  exit(0);
}
