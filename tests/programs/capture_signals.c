/* Fatal signals and dispositions.  argv[1]:
 *   segv, abort, term, bus, int: die of that signal (with the default action);
 *   handler: the program's own SIGSEGV handler runs and exits 3;
 *   reraise: its handler resets SIG_DFL and re-raises (dies of SIGSEGV);
 *   altstack: a one-page alternate signal stack with a guard page below it
 *     (for a handler it never installs), then raise(SIGTERM);
 *   query: prints the dispositions the program sees, exits 0. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void on_segv(int sig) { (void)sig; write(1, "handled\n", 8); _exit(3); }
static void on_segv_reraise(int sig) {
  write(1, "handled\n", 8);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void show(int sig) {
  struct sigaction sa;
  sigaction(sig, NULL, &sa);
  const char *h = sa.sa_handler == SIG_DFL ? "DFL" : sa.sa_handler == SIG_IGN ? "IGN" : "handler";
  printf("%s %s flags=%#x restart=%d\n", strsignal(sig), h, (unsigned)sa.sa_flags & ~0x04000000u,
         (sa.sa_flags & SA_RESTART) != 0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "query";
  volatile int *null = NULL;
  if (!strcmp(mode, "segv")) return *null;
  if (!strcmp(mode, "abort")) abort();
  if (!strcmp(mode, "term")) { raise(SIGTERM); return 1; }
  if (!strcmp(mode, "int")) { raise(SIGINT); return 1; }
  if (!strcmp(mode, "altstack")) {
    char *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m, 4096, PROT_NONE);
    stack_t ss = {.ss_sp = m + 4096, .ss_size = 4096};
    sigaltstack(&ss, NULL);
    raise(SIGTERM);
    return 1;
  }
  if (!strcmp(mode, "bus")) { kill(getpid(), SIGBUS); pause(); return 1; }
  if (!strcmp(mode, "handler")) { signal(SIGSEGV, on_segv); return *null; }
  if (!strcmp(mode, "reraise")) { signal(SIGSEGV, on_segv_reraise); return *null; }
  show(SIGSEGV); show(SIGTERM); show(SIGINT);
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGSEGV, &sa, &old);
  printf("old %s\n", old.sa_handler == SIG_DFL ? "DFL" : "other");
  show(SIGSEGV);
  sa.sa_handler = SIG_DFL;
  sa.sa_flags = SA_NODEFER;
  sigaction(SIGSEGV, &sa, &old);
  printf("old %s\n", old.sa_handler == on_segv ? "on_segv" : "other");
  show(SIGSEGV);
  signal(SIGTERM, SIG_IGN);
  show(SIGTERM);
  printf("signal returns %s\n", signal(SIGTERM, SIG_DFL) == SIG_IGN ? "IGN" : "other");
  show(SIGTERM);
  fflush(stdout);
  return 0;
}
