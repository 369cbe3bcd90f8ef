/* Probes, closes and dup2s over every fd number below RLIMIT_NOFILE and a
 * few above it, and prints what it saw.  Run with and without the capture
 * library, the output must be the same: the library's own fds are never
 * where a program can meet them.  argv[1]: "plain" or "raw" (closes by
 * syscall(2) instead of close(3)). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int raw;

static int do_close(int fd) { return raw ? (int)syscall(SYS_close, fd) : close(fd); }

static const char *res(int r) {
  static char buf[8][32];
  static int k;
  char *b = buf[k++ & 7];
  if (r < 0) snprintf(b, 32, "E%d", errno); else snprintf(b, 32, "%d", r);
  return b;
}

int main(int argc, char **argv) {
  raw = argc > 1 && !strcmp(argv[1], "raw");
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  long limit = (long)rl.rlim_cur;
  printf("limit %ld %ld\n", limit, (long)rl.rlim_max);
  int probe = open("/dev/null", O_RDONLY);
  printf("probe fd %d\n", probe);
  long plain = 0;
  for (long fd = 0; fd < limit + 8; fd++) {
    struct stat st;
    errno = 0;
    const char *fs = res(fstat((int)fd, &st));
    const char *gf = res(fcntl((int)fd, F_GETFD));
    if (fd <= 2 || fd == probe) {
      printf("fd %ld fstat=%s getfd=%s\n", fd, fs, gf);
      continue;
    }
    const char *c1 = res(do_close((int)fd));
    const char *d = res(dup2(probe, (int)fd));
    const char *c2 = res(do_close((int)fd));
    /* the common case below the limit: nothing open, dup2 works */
    if (!strcmp(fs, "E9") && !strcmp(gf, "E9") && !strcmp(c1, "E9") && atol(d) == fd && !strcmp(c2, "0")) {
      plain++;
      continue;
    }
    printf("fd %ld fstat=%s getfd=%s close=%s dup2=%s close=%s\n", fd, fs, gf, c1, d, c2);
  }
  printf("plain %ld\n", plain);
  /* close everything, then the lowest free number is 3 again */
  errno = 0;
  printf("close_range=%s\n", res(close_range(3, ~0U, 0)));
  printf("next open=%d\n", open("/dev/null", O_RDONLY));
  struct stat st;
  printf("fstat limit=%s\n", res(fstat((int)limit, &st)));
  fflush(stdout);
  return 0;
}
