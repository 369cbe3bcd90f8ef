/* A program that gets past the fd hooks: it lists /proc/self/fd, closes
 * every fd above 2 it did not open with inline system calls, raises its own
 * RLIMIT_NOFILE with prlimit64 through syscall(2), puts its own file at each
 * of those numbers with an inline dup2 and then does ordinary calls.  Its
 * file must stay empty: trace records never go into a program's file.
 * (A limit raised by an inline system call too is the one way left to do
 * it, see docs/preload-log.md.)  x86_64 only. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static long raw(long n, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int high[64], n = 0;
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d && (e = readdir(d)) && n < 64) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && fd > 2 && fd != dirfd(d)) high[n++] = fd;
  }
  closedir(d);
  for (int i = 0; i < n; i++) raw(SYS_close, high[i], 0, 0, 0);
  struct rlimit rl = {1 << 16, 1 << 16};
  syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &rl, NULL);
  int mine = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
  for (int i = 0; i < n; i++) raw(SYS_dup2, mine, high[i], 0, 0);
  for (int i = 0; i < 3; i++) close(open("/dev/null", O_RDONLY));
  struct stat st;
  fstat(mine, &st);
  printf("own file bytes=%ld\n", (long)st.st_size);
  fflush(stdout);
  return 0;
}
