/* Correct ways to drop inherited fds (close-all sweeps); the mode is argv[1].
 * None of them is a bug: the analyzer may give at most one note per sweep. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void close_loop(int from, int to) {
    for (int fd = from; fd < to; fd++) close(fd);     /* most fail with EBADF */
}

/* A few fds opened and closed earlier, so the sweep hits numbers the trace
 * already saw closed ("whatever the trace saw before"). */
static void churn(void) {
    int a = open("/dev/null", O_RDONLY);
    int b = open("/dev/zero", O_RDONLY);
    int c = dup(a);
    close(c);
    close(b);
    close(a);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "loop";
    churn();
    int keep = open("/dev/null", O_RDONLY);      /* an inherited-looking fd: 3 */
    if (!strcmp(mode, "loop")) {
        close_loop(3, 256);
    } else if (!strcmp(mode, "loop_sysconf")) {
        long max = sysconf(_SC_OPEN_MAX);
        close_loop(3, max > 4096 ? 4096 : (int)max);
    } else if (!strcmp(mode, "closefrom")) {
        closefrom(3);
    } else if (!strcmp(mode, "close_range")) {
        close_range(3, ~0U, 0);                   /* libc wrapper: the capture sees it */
    } else if (!strcmp(mode, "daemon")) {
        /* the classic daemon(3) start-up: detach 0-2 onto /dev/null, drop the rest */
        if (fork() > 0) { wait(NULL); return 0; }
        setsid();
        int n = open("/dev/null", O_RDWR);
        dup2(n, 0);
        dup2(n, 1);
        dup2(n, 2);
        if (n > 2) close(n);
        close_loop(3, 128);
        _exit(0);
    } else if (!strcmp(mode, "fork_exec")) {
        /* a child between fork and execve closes everything but 0-2 */
        pid_t p = fork();
        if (p == 0) {
            close_loop(3, 200);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(p, NULL, 0);
        close(keep);
    } else if (!strcmp(mode, "keep_one")) {
        /* a sweep that skips the fd it keeps */
        for (int fd = 3; fd < 100; fd++)
            if (fd != keep) close(fd);
        close(keep);
    }
    return 0;
}
