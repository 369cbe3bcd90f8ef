/* Correct probe loops: ask whether a number is open and expect EBADF as the
 * answer, also for numbers the program closed itself.  Mode is argv[1]. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "fstat";
    /* fds 3..6 opened and closed: probes below see them closed */
    int fds[4];
    for (int i = 0; i < 4; i++) fds[i] = open("/dev/null", O_RDONLY);
    for (int i = 0; i < 4; i++) close(fds[i]);
    int keep = open("/dev/zero", O_RDONLY);
    struct stat st;
    int open_count = 0;
    for (int fd = 0; fd < 40; fd++) {
        int r = 0;
        if (!strcmp(mode, "fstat")) {
            r = fstat(fd, &st);
        } else if (!strcmp(mode, "fcntl")) {
            r = fcntl(fd, F_GETFD);
        } else if (!strcmp(mode, "getfl")) {
            r = fcntl(fd, F_GETFL);
        } else if (!strcmp(mode, "newfstatat")) {
            r = fstatat(fd, "", &st, AT_EMPTY_PATH);
        } else if (!strcmp(mode, "statx")) {
            struct statx sx;
            r = statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx);
        } else if (!strcmp(mode, "poll")) {
            struct pollfd p = {fd, POLLIN, 0};
            r = poll(&p, 1, 0);
            if (p.revents & POLLNVAL) r = -1;
        } else if (!strcmp(mode, "select")) {
            fd_set s;
            FD_ZERO(&s);
            FD_SET(fd, &s);
            struct timeval tv = {0, 0};
            r = select(fd + 1, &s, NULL, NULL, &tv);
        }
        if (r >= 0) open_count++;
    }
    close(keep);
    return open_count > 0 ? 0 : 1;
}
