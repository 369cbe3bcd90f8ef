/* What a program sees of its fd numbers near RLIMIT_NOFILE; run with and
 * without capture, the output must be the same.  The result goes to the
 * file argv[2] (the program closes its stdio).
 *   fill:    open /dev/null until EMFILE; close every number below the
 *            limit, counting the closes that succeed; reopen three files:
 *            they must be 0 1 2.
 *   top:     dup2 onto limit-2 and limit-1, close both, close again.
 *   sweep:   a child closes every number below the limit one by one and
 *            counts the closes that succeed.
 *   listing: read /proc/self/fd and close every fd it lists above 2 (as
 *            gnupg's children do), print how many there were. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[4096];
static int used;

#define SAY(...) (used += snprintf(out + used, sizeof out - used, __VA_ARGS__))

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  const char *mode = argv[1];
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  int limit = (int)rl.rlim_cur;
  SAY("limit %d\n", limit);
  if (!strcmp(mode, "fill")) {
    int opened = 0;
    while (open("/dev/null", O_RDONLY) >= 0) opened++;
    SAY("opened %d errno %d\n", opened, errno);
    int closed = 0;
    for (int fd = 0; fd < limit; fd++) if (close(fd) == 0) closed++;
    SAY("closed %d\n", closed);
    int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_WRONLY), c = open("/dev/null", O_WRONLY);
    SAY("reopened %d %d %d\n", a, b, c);
  } else if (!strcmp(mode, "top")) {
    for (int fd = limit - 2; fd < limit; fd++) {
      errno = 0;
      int d = dup2(1, fd);
      SAY("dup2 %d = %d errno %d\n", fd, d, errno);
    }
    for (int fd = limit - 2; fd < limit; fd++) {
      errno = 0;
      int r1 = close(fd), e1 = errno;
      errno = 0;
      int r2 = close(fd), e2 = errno;
      SAY("close %d = %d errno %d, again = %d errno %d\n", fd, r1, e1, r2, e2);
    }
  } else if (!strcmp(mode, "sweep")) {
    int p[2];
    if (pipe(p)) return 3;
    pid_t pid = fork();
    if (pid == 0) {
      int closed = 0;
      for (int fd = 3; fd < limit; fd++) if (fd != p[1] && close(fd) == 0) closed++;
      write(p[1], &closed, sizeof closed);
      _exit(0);
    }
    close(p[1]);
    int closed = -1;
    read(p[0], &closed, sizeof closed);
    waitpid(pid, 0, 0);
    SAY("child closed %d\n", closed);
  } else if (!strcmp(mode, "listing")) {
    DIR *d = opendir("/proc/self/fd");
    int listed[64], n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 64) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int fd = atoi(e->d_name);
      if (fd > 2 && fd != dirfd(d)) listed[n++] = fd;
    }
    closedir(d);
    int closed = 0;
    for (int i = 0; i < n; i++) if (close(listed[i]) == 0) closed++;
    SAY("listed %d closed %d\n", n, closed);
  }
  int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
  write(fd, out, used);
  close(fd);
  return 0;
}
