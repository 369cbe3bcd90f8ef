/* Every call that matters only when it fails on a bad fd, on a closed fd:
 * each must return -1 EBADF with and without capture (and be logged under
 * capture).  Prints each result and errno.  argv[1] "openat2": instead, an
 * openat2 through syscall(2) (glibc has no wrapper) and its close.
 * argv[1] "aliases": every libc name of those calls a program can link to
 * (fortified __read_chk, __fxstat of binaries built against glibc < 2.33,
 * fstatat/statx with AT_EMPTY_PATH ...), on fd -1 and on a closed fd.
 * argv[1] "syscalls": the same calls through syscall(2), and fds made
 * through it. */
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

ssize_t __read_chk(int, void *, size_t, size_t);
ssize_t __pread_chk(int, void *, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void *, size_t, off_t, size_t);
ssize_t __read(int, void *, size_t);
ssize_t __write(int, const void *, size_t);
ssize_t __pread64(int, void *, size_t, off_t);
ssize_t __pwrite64(int, const void *, size_t, off_t);
off_t __lseek(int, off_t, int);
int __fxstat(int, int, struct stat *);
int __fxstat64(int, int, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);

static int aliases(void) {
  int closed = open("/dev/null", O_RDWR);
  close(closed);
  char buf[16] = "hello";
  struct iovec iov[2] = {{buf, 5}, {buf + 1, 3}};
  struct msghdr mh = {0};
  mh.msg_iov = iov; mh.msg_iovlen = 2;
  struct stat st; struct stat64 st64; struct statx sx;
  int fds[2] = {-1, closed};
  for (int i = 0; i < 2; i++) {
    int fd = fds[i];
    SHOW("read", read(fd, buf, sizeof buf));
    SHOW("__read", __read(fd, buf, sizeof buf));
    SHOW("__read_chk", __read_chk(fd, buf, 8, sizeof buf));
    SHOW("write", write(fd, "a\n\"b", 4));
    SHOW("__write", __write(fd, buf, 5));
    SHOW("pread", pread(fd, buf, 8, 16));
    SHOW("pread64", pread64(fd, buf, 8, 16));
    SHOW("__pread64", __pread64(fd, buf, 8, 16));
    SHOW("__pread_chk", __pread_chk(fd, buf, 8, 16, sizeof buf));
    SHOW("__pread64_chk", __pread64_chk(fd, buf, 8, 16, sizeof buf));
    SHOW("pwrite", pwrite(fd, buf, 5, 3));
    SHOW("pwrite64", pwrite64(fd, buf, 5, 3));
    SHOW("__pwrite64", __pwrite64(fd, buf, 5, 3));
    SHOW("readv", readv(fd, iov, 2));
    SHOW("writev", writev(fd, iov, 2));
    SHOW("lseek", lseek(fd, 10, SEEK_END));
    SHOW("lseek64", lseek64(fd, 10, SEEK_DATA));
    SHOW("__lseek", __lseek(fd, 10, SEEK_CUR));
    SHOW("fstat", fstat(fd, &st));
    SHOW("fstat64", fstat64(fd, &st64));
    SHOW("__fxstat", __fxstat(1, fd, &st));
    SHOW("__fxstat64", __fxstat64(1, fd, &st64));
    SHOW("fstatat", fstatat(fd, "", &st, AT_EMPTY_PATH));
    SHOW("fstatat64", fstatat64(fd, "", &st64, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW));
    SHOW("fstatat rel", fstatat(fd, "rel", &st, 0));
    SHOW("__fxstatat", __fxstatat(1, fd, "", &st, AT_EMPTY_PATH));
    SHOW("statx", statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    SHOW("sendmsg", sendmsg(fd, &mh, MSG_NOSIGNAL));
    SHOW("recvmsg", recvmsg(fd, &mh, MSG_PEEK));
    SHOW("ioctl", ioctl(fd, FIONREAD, buf));
  }
  fflush(stdout);
  return 0;
}

/* the same calls through syscall(2), and fds made through it */
static int syscalls(void) {
  int closed = open("/dev/null", O_RDWR);
  close(closed);
  char buf[16] = "hello";
  struct iovec iov[1] = {{buf, 5}};
  struct msghdr mh = {0};
  mh.msg_iov = iov; mh.msg_iovlen = 1;
  struct stat st;
  int fds[2] = {-1, closed};
  for (int i = 0; i < 2; i++) {
    int fd = fds[i];
    SHOW("read", syscall(SYS_read, fd, buf, 8));
    SHOW("write", syscall(SYS_write, fd, buf, 5));
    SHOW("pread64", syscall(SYS_pread64, fd, buf, 8, 4));
    SHOW("pwrite64", syscall(SYS_pwrite64, fd, buf, 5, 4));
    SHOW("readv", syscall(SYS_readv, fd, iov, 1));
    SHOW("writev", syscall(SYS_writev, fd, iov, 1));
    SHOW("lseek", syscall(SYS_lseek, fd, 1, SEEK_SET));
    SHOW("fstat", syscall(SYS_fstat, fd, &st));
    SHOW("newfstatat", syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH));
    SHOW("sendmsg", syscall(SYS_sendmsg, fd, &mh, 0));
    SHOW("recvmsg", syscall(SYS_recvmsg, fd, &mh, 0));
    SHOW("ioctl", syscall(SYS_ioctl, fd, FIONREAD, buf));
  }
  int p[2];
  SHOW("pipe2", syscall(SYS_pipe2, p, O_CLOEXEC));
  close(p[0]); close(p[1]);
  long s = syscall(SYS_socket, AF_UNIX, SOCK_DGRAM, 0);
  SHOW("socket", s); close((int)s);
  long e = syscall(SYS_eventfd2, 0, 0);
  SHOW("eventfd2", e); close((int)e);
  long m = syscall(SYS_memfd_create, "raw", 0);
  SHOW("memfd_create", m); close((int)m);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "aliases")) return aliases();
  if (argc > 1 && !strcmp(argv[1], "syscalls")) return syscalls();
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
