/* fd bugs next to sweeps and threads, one per mode (argv[1]); each must
 * give exactly its findings.  Every fd number is
 * deterministic: nothing else opens fds. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int cr(unsigned a, unsigned b) { return (int)syscall(SYS_close_range, a, b, 0); }

/* valgrind's close_range regression test: the second bounded range
 * re-closes 5 and 7 after an open-ended sweep freed everything */
static void range_after_sweep(void) {
    close(open("/dev/null", O_RDONLY));          /* 3 */
    cr(3, ~0U);
    dup2(1, 5);
    dup2(2, 7);
    cr(5, 7);
    cr(5, 7);                          /* fd-double-close of 5 and of 7 */
}

/* two threads handing off by pipes, so the order is fixed */
static int to_mon[2], to_main[2];
static int stale = -1;

static void wait_for(int fd) { char c; (void)!read(fd, &c, 1); }
static void tell(int fd) { (void)!write(fd, "x", 1); }

/* a monitoring thread that re-creates the number the runtime closed, and
 * reads it after the runtime's stale close took it */
static void *monitor(void *arg) {
    (void)arg;
    char buf[64];
    wait_for(to_mon[0]);
    int f = open("/proc/self/stat", O_RDONLY);   /* the same number as stale */
    (void)!read(f, buf, sizeof buf);
    tell(to_main[1]);
    wait_for(to_mon[0]);
    (void)!read(f, buf, sizeof buf);             /* EBADF: its fd was taken */
    tell(to_main[1]);
    return NULL;
}

/* another thread closes the fd; the main thread uses it afterwards */
static int victim = -1;
static void *closer(void *arg) {
    (void)arg;
    wait_for(to_mon[0]);
    close(victim);
    tell(to_main[1]);
    return NULL;
}

/* a thread with its own fd table: its close takes only its copy */
static void *unsharer(void *arg) {
    (void)arg;
    unshare(CLONE_FILES);
    close(victim);                      /* its copy */
    tell(to_main[1]);
    wait_for(to_mon[0]);
    close(victim);                      /* its copy again: fd-double-close */
    tell(to_main[1]);
    return NULL;
}

/* a thread cloned without CLONE_FILES: a copy of the table from its start */
static int nofiles_thread(void *arg) {
    (void)arg;
    close(victim);                      /* its copy */
    tell(to_main[1]);
    wait_for(to_mon[0]);
    close(victim);                      /* its copy again: fd-double-close */
    tell(to_main[1]);
    syscall(SYS_exit, 0);
    return 0;
}

static void *range_unsharer(void *arg) {
    (void)arg;
    /* its own copy of the table, without the victim */
    syscall(SYS_close_range, (unsigned)victim, (unsigned)victim, 2U /* CLOSE_RANGE_UNSHARE */);
    tell(to_main[1]);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "range_after_sweep";
    char b;
    if (!strcmp(mode, "range_after_sweep")) {
        range_after_sweep();
    } else if (!strcmp(mode, "range_after_sweep_child")) {
        pid_t p = fork();
        if (p == 0) {
            range_after_sweep();
            _exit(0);
        }
        waitpid(p, NULL, 0);
    } else if (!strcmp(mode, "interleaved_double")) {
        /* four fds closed, then closed again in order with a write between:
         * the shape of a sweep (whatever the trace saw of those
         * numbers before), so one note */
        int fds[4];
        for (int i = 0; i < 4; i++) fds[i] = open("/dev/null", O_RDONLY);
        for (int i = 0; i < 4; i++) close(fds[i]);
        for (int i = 0; i < 4; i++) {
            (void)!write(1, ".", 1);
            close(fds[i]);
        }
    } else if (!strcmp(mode, "created_between")) {
        /* the same with an fd made and dropped between the closes: no
         * sweep, each second close is a double close */
        int fds[4];
        for (int i = 0; i < 4; i++) fds[i] = open("/dev/null", O_RDONLY);
        for (int i = 0; i < 4; i++) close(fds[i]);
        for (int i = 0; i < 4; i++) {
            int t = open("/dev/zero", O_RDONLY);
            close(t);
            close(fds[i]);              /* fd-double-close x4 (warnings) */
        }
    } else if (!strcmp(mode, "reused_thread")) {
        if (pipe(to_mon) || pipe(to_main)) return 1;    /* 3-6 */
        pthread_t t;
        pthread_create(&t, NULL, monitor, NULL);
        stale = open("/dev/null", O_RDONLY);             /* 7: the runtime's */
        (void)!read(stale, &b, 1);
        close(stale);                                    /* its close */
        tell(to_mon[1]);
        wait_for(to_main[0]);                            /* the monitor has 7 */
        close(stale);                                    /* stale: takes the monitor's */
        tell(to_mon[1]);
        wait_for(to_main[0]);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "uac_thread")) {
        if (pipe(to_mon) || pipe(to_main)) return 1;
        victim = open("/dev/null", O_RDONLY);
        pthread_t t;
        pthread_create(&t, NULL, closer, NULL);
        (void)!read(victim, &b, 1);
        tell(to_mon[1]);
        wait_for(to_main[0]);
        (void)!read(victim, &b, 1);                      /* fd-use-after-close */
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "unshare_thread")) {
        if (pipe(to_mon) || pipe(to_main)) return 1;
        victim = open("/dev/null", O_RDONLY);
        pthread_t t;
        pthread_create(&t, NULL, unsharer, NULL);
        wait_for(to_main[0]);
        (void)!read(victim, &b, 1);     /* still open in the main thread's table */
        tell(to_mon[1]);
        wait_for(to_main[0]);
        pthread_join(t, NULL);
        close(victim);                  /* the main table's own: fine */
    } else if (!strcmp(mode, "clone_nofiles")) {
        if (pipe(to_mon) || pipe(to_main)) return 1;
        victim = open("/dev/null", O_RDONLY);
        static char stack[1 << 16] __attribute__((aligned(16)));
        if (clone(nofiles_thread, stack + sizeof stack,
                  CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
                  NULL) < 0)
            return 1;
        wait_for(to_main[0]);
        (void)!read(victim, &b, 1);     /* the main thread's table still has it */
        close(victim);                  /* the main table's own: fine */
        tell(to_mon[1]);
        wait_for(to_main[0]);
    } else if (!strcmp(mode, "range_unshare_thread")) {
        if (pipe(to_mon) || pipe(to_main)) return 1;
        victim = open("/dev/null", O_RDONLY);
        pthread_t t;
        pthread_create(&t, NULL, range_unsharer, NULL);
        wait_for(to_main[0]);
        pthread_join(t, NULL);
        (void)!read(victim, &b, 1);     /* the thread closed only its copy */
        close(victim);
        close(victim);                  /* fd-double-close (one thread left) */
    }
    return 0;
}
