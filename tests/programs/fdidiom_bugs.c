/* fd bugs, one per mode (argv[1]); each must give exactly its findings.
 * Every fd number is deterministic: nothing else opens fds. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int shared_fd = -1;

static void *closer(void *arg) {
    (void)arg;
    close(shared_fd);                 /* takes the fd from under the main thread */
    return NULL;
}

static int gate[2], ready[2];

static void *waiter(void *arg) {
    (void)arg;
    char c;
    /* a call both strace and the capture library log: a preload log shows
     * a thread only from its first hooked call */
    close(dup(0));
    write(ready[1], "r", 1);
    read(gate[0], &c, 1);             /* alive until main is done */
    return NULL;
}

static void *late_closer(void *arg) {
    (void)arg;
    usleep(2000);                     /* while the main thread is reading */
    close(shared_fd);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "double_close";
    char b;
    if (!strcmp(mode, "double_close")) {
        int fd = open("/dev/null", O_RDONLY);
        close(fd);
        close(fd);                  /* fd-double-close: a warning, one thread */
    } else if (!strcmp(mode, "double_close_threads")) {
        /* a second thread is alive between the closes: it could have been
         * handed the number, so the second close could take its fd */
        char c;
        pipe(gate);
        pipe(ready);
        pthread_t t;
        pthread_create(&t, NULL, waiter, NULL);
        read(ready[0], &c, 1);
        int fd = open("/dev/null", O_RDONLY);
        close(fd);
        close(fd);                                /* fd-double-close: error */
        write(gate[1], "x", 1);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "close_range_twice")) {
        int fd = open("/dev/null", O_RDONLY);
        dup2(fd, 5);
        dup2(fd, 6);
        dup2(fd, 7);
        close_range(5, 7, 0);                     /* libc: the capture hooks it */
        close_range(5, 7, 0);                    /* fd-double-close x3 (warnings) */
        close(fd);
    } else if (!strcmp(mode, "close_neg")) {
        close(-1);                                /* fd-bad-fd */
    } else if (!strcmp(mode, "read_neg")) {
        read(-1, &b, 1);                          /* fd-bad-fd */
    } else if (!strcmp(mode, "dup2_neg")) {
        dup2(0, -4);                              /* fd-bad-fd (about -4, not 0) */
    } else if (!strcmp(mode, "read_after_close")) {
        int fd = open("/dev/null", O_RDONLY);
        close(fd);
        read(fd, &b, 1);                          /* fd-use-after-close */
    } else if (!strcmp(mode, "threads")) {
        shared_fd = open("/dev/null", O_RDONLY);
        pthread_t t;
        pthread_create(&t, NULL, closer, NULL);
        pthread_join(t, NULL);
        read(shared_fd, &b, 1);                   /* fd-use-after-close (cross-thread) */
    } else if (!strcmp(mode, "race")) {
        /* reads until another thread's close makes one fail: under strace
         * that close is often still "unfinished" when the read's EBADF is
         * printed.  Exactly one read fails, whatever the interleaving. */
        shared_fd = open("/dev/zero", O_RDONLY);
        pthread_t t;
        pthread_create(&t, NULL, late_closer, NULL);
        while (read(shared_fd, &b, 1) >= 0)
            ;                                     /* fd-use-after-close */
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "write_after_close")) {
        int fd = open("/dev/null", O_WRONLY);
        close(fd);
        write(fd, "x", 1);                        /* fd-use-after-close */
    } else if (!strcmp(mode, "never_open")) {
        close(42);                                /* fd-bad-fd: never open */
    } else if (!strcmp(mode, "held_at_exit")) {
        /* not a bug by default: fd-open-at-exit with --all-fds only */
        int fd = open("/dev/null", O_RDONLY);
        int kept = dup(fd);
        close(fd);
        return kept < 0;
    }
    return 0;
}
