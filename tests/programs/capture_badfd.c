/* Every call that matters only when it fails on a bad fd, on a closed fd:
 * each must return -1 EBADF with and without capture (and be logged under
 * capture).  Prints each result and errno.  argv[1] "openat2": instead, an
 * openat2 through syscall(2) (glibc has no wrapper) and its close. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define SHOW(name, call) do { errno = 12345; long r = (long)(call); printf("%s %ld %d\n", name, r, errno); } while (0)

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "openat2")) {
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC};
    long fd = syscall(SYS_openat2, AT_FDCWD, "/dev/null", &how, sizeof how);
    printf("openat2 %ld %d\n", fd, close((int)fd));
    return 0;
  }
  int fd = open("/dev/null", O_RDWR);
  close(fd);                       /* fd is now a use-after-close */
  char buf[16] = "hello";
  struct iovec iov = {buf, 5};
  struct msghdr mh = {0};
  mh.msg_iov = &iov; mh.msg_iovlen = 1;
  struct stat st;
  SHOW("read", read(fd, buf, sizeof buf));
  SHOW("write", write(fd, buf, 5));
  SHOW("pread64", pread(fd, buf, sizeof buf, 0));
  SHOW("pwrite64", pwrite(fd, buf, 5, 0));
  SHOW("readv", readv(fd, &iov, 1));
  SHOW("writev", writev(fd, &iov, 1));
  SHOW("lseek", lseek(fd, 0, SEEK_SET));
  SHOW("fstat", fstat(fd, &st));
  SHOW("sendmsg", sendmsg(fd, &mh, 0));
  SHOW("recvmsg", recvmsg(fd, &mh, 0));
  SHOW("ioctl", ioctl(fd, FIONREAD, buf));
  SHOW("good write", write(1, "", 0));
  fflush(stdout);
  return 0;
}
