/* Every way a program makes an fd without open(): pipe, pipe2, socket,
 * socketpair, accept, accept4, eventfd, memfd_create, timerfd_create,
 * signalfd, epoll_create, epoll_create1, inotify_init, inotify_init1,
 * fcntl(F_DUPFD_CLOEXEC); each fd is closed again.  Prints every fd it got,
 * so the run with capture can be compared with the run without it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void got(const char *what, int fd) {
  printf("%s %d\n", what, fd);
}

int main(void) {
  int p[2];
  if (pipe(p) == 0) { got("pipe", p[0]); got("pipe", p[1]); close(p[0]); close(p[1]); }
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) { got("pipe2", p[0]); got("pipe2", p[1]); close(p[0]); close(p[1]); }
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  got("socket", s); close(s);
  if (socketpair(AF_UNIX, SOCK_DGRAM, 0, p) == 0) { got("socketpair", p[0]); got("socketpair", p[1]); close(p[0]); close(p[1]); }
  /* a listening socket on an abstract address, one connection accepted twice */
  int l = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
  snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "rocrtrace-fdmake-%d", (int)getpid());
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
  if (bind(l, (struct sockaddr *)&a, alen) == 0 && listen(l, 4) == 0) {
    int c1 = socket(AF_UNIX, SOCK_STREAM, 0), c2 = socket(AF_UNIX, SOCK_STREAM, 0);
    connect(c1, (struct sockaddr *)&a, alen);
    connect(c2, (struct sockaddr *)&a, alen);
    int x = accept(l, NULL, NULL); got("accept", x); close(x);
    x = accept4(l, NULL, NULL, SOCK_CLOEXEC); got("accept4", x); close(x);
    close(c1); close(c2);
  }
  close(l);
  int e = eventfd(0, EFD_CLOEXEC); got("eventfd", e); close(e);
  int m = memfd_create("fdmake", MFD_CLOEXEC); got("memfd_create", m); close(m);
  int t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC); got("timerfd_create", t); close(t);
  sigset_t ss; sigemptyset(&ss); sigaddset(&ss, SIGUSR1);
  int sf = signalfd(-1, &ss, SFD_CLOEXEC); got("signalfd", sf); close(sf);
  int ep = epoll_create(1); got("epoll_create", ep); close(ep);
  ep = epoll_create1(EPOLL_CLOEXEC); got("epoll_create1", ep); close(ep);
  int in = inotify_init(); got("inotify_init", in); close(in);
  in = inotify_init1(IN_CLOEXEC); got("inotify_init1", in); close(in);
  int d = fcntl(1, F_DUPFD_CLOEXEC, 10); got("F_DUPFD_CLOEXEC", d); close(d);
  fflush(stdout);
  return 0;
}
