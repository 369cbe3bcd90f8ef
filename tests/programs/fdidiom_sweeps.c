/* Close-all sweeps in the shapes real programs give them: other
 * calls that create no fd between the closes, descending order, a forked
 * child's sweep, a sweep on another thread, closing what a /proc/self/fd
 * listing returned, close_range pieces around kept fds.  None of them is a
 * bug: at most one note per sweep.  The mode is argv[1].
 *
 * Before every sweep the program opens and closes fds the way a runtime
 * does at start-up (sysfs-like files read and closed), so the sweep hits
 * numbers the trace already saw closed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static int cr(unsigned a, unsigned b) { return (int)syscall(SYS_close_range, a, b, 0); }

/* a runtime's start-up: files opened, read and closed */
static void startup(void) {
    int fds[6];
    for (int i = 0; i < 6; i++) fds[i] = open(i % 2 ? "/dev/zero" : "/dev/null", O_RDONLY);
    char b;
    for (int i = 0; i < 6; i++) (void)!read(fds[i], &b, 1);
    for (int i = 5; i >= 0; i--) close(fds[i]);
}

static void readlink_then_close(int from, int to) {
    char p[64], t[256];
    for (int fd = from; fd < to; fd++) {
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        (void)!readlink(p, t, sizeof t);          /* log what it is... */
        close(fd);                                /* ...then drop it */
    }
}

static void probe_then_close_desc(int from, int to) {
    struct stat st;
    for (int fd = to - 1; fd >= from; fd--) {
        if (fcntl(fd, F_GETFD) < 0 && fstat(fd, &st) < 0) { /* both probes */ }
        close(fd);
        if (fd % 64 == 0) (void)!write(1, ".", 1);  /* a progress line */
    }
}

/* gnupg's close_all_fds: list /proc/self/fd, closedir, close each number */
static void close_listed(int keep) {
    int fds[1024], n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024) {
        if (e->d_name[0] == '.') continue;
        int fd = atoi(e->d_name);
        if (fd > 2 && fd != keep) fds[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; i++) close(fds[i]);    /* the dir's own fd: EBADF */
}

static void *sweeper(void *arg) {
    (void)arg;
    readlink_then_close(3, 300);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "readlink";
    startup();
    int keep = open("/dev/null", O_RDONLY);       /* 3: held, swept */
    if (!strcmp(mode, "readlink")) {
        readlink_then_close(3, 1024);
    } else if (!strcmp(mode, "readlink_child")) {
        pid_t p = fork();
        if (p == 0) {
            readlink_then_close(3, 512);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(p, NULL, 0);
        close(keep);
    } else if (!strcmp(mode, "probe_desc")) {
        probe_then_close_desc(3, 700);
    } else if (!strcmp(mode, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, sweeper, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "listing")) {
        int extra = open("/dev/zero", O_RDONLY);
        (void)extra;
        close_listed(-1);
    } else if (!strcmp(mode, "listing_child")) {
        int extra = open("/dev/zero", O_RDONLY);
        pid_t p = fork();
        if (p == 0) {
            close_listed(extra);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(p, NULL, 0);
        close(extra);
        close(keep);
    } else if (!strcmp(mode, "pieces_child")) {
        /* Python's subprocess child: its own pipe end closed, the kept fds
         * moved, then close_range around them and an open-ended piece */
        int pfd[2];
        if (pipe(pfd)) return 1;                  /* 4, 5 */
        int k1 = open("/dev/null", O_RDONLY);     /* 6: kept */
        int k2 = open("/dev/zero", O_RDONLY);     /* 7: kept */
        pid_t p = fork();
        if (p == 0) {
            close(pfd[0]);                        /* 4, then covered again below */
            cr(3, (unsigned)k1 - 1);
            cr((unsigned)k1 + 1, (unsigned)k2 - 1);
            cr((unsigned)k2 + 1, ~0U);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        close(pfd[0]);
        close(pfd[1]);
        waitpid(p, NULL, 0);
        close(k1);
        close(k2);
        close(keep);
    } else if (!strcmp(mode, "sysconf_ranges")) {
        /* close_range up to the fd limit after closing some fds itself */
        int a = open("/dev/null", O_RDONLY);
        close(a);
        long max = sysconf(_SC_OPEN_MAX);
        cr(3, (unsigned)(max > 0 ? max - 1 : 1023));
    }
    return 0;
}
