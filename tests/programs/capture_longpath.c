/* Opens argv[1] (a path longer than any fixed buffer of 512 bytes), dups
 * it, closes the dup, issues an ioctl on it and keeps it open to the exit
 * snapshot: every decoration of those fds must carry the whole path. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
  int d = dup(fd);
  close(d);
  int n;
  ioctl(fd, FIONREAD, &n);
  printf("fd %d dup %d\n", fd, d);
  fflush(stdout);
  return 0;
}
