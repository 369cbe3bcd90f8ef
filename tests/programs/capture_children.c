/* Children made by every means: argv[1] is clone3 (a raw fork-like clone3
 * through syscall(2)), vfork, posix_spawn or fork.  Each child opens and
 * closes /dev/null and (but the posix_spawn one, which runs `true`) exits
 * with status 3; the parent prints the child's pid and status. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void child_work(void) {
  int fd = open("/dev/null", O_RDONLY);
  close(fd);
  close(fd);   /* a double close: EBADF, the child's own */
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fork";
  int keep = open("/dev/zero", O_RDONLY);
  pid_t pid = -1;
  if (!strcmp(mode, "clone3")) {
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.exit_signal = SIGCHLD;
    pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0) { child_work(); _exit(3); }
  } else if (!strcmp(mode, "vfork")) {
    pid = vfork();
    if (pid == 0) { child_work(); _exit(3); }
  } else if (!strcmp(mode, "posix_spawn")) {
    char *args[] = {"true", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, keep);
    if (posix_spawnp(&pid, "true", &fa, NULL, args, environ) != 0) return 9;
  } else {
    pid = fork();
    if (pid == 0) { child_work(); _exit(3); }
  }
  int st = 0;
  waitpid(pid, &st, 0);
  close(keep);
  printf("child %d status %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  fflush(stdout);
  return 0;
}
