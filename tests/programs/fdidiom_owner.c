/* fdsan's wrong owner across modules: the program closes a stale fd number
 * that zlib's gzopen has since reused (zlib is dlopen'ed, so its open and
 * read run in another module: another owner).  Mode is argv[1]:
 *   stack  the old fd was a socket; the stale close comes from the code that
 *          made it, and the new owner's stack shares none of it
 *   ebadf  the old fd was a file too; the new owner's later read gets EBADF
 *   fine   the same calls without the stale close: nothing to report
 * Exit status 77: no libz here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef void *(*gzopen_fn)(const char *, const char *);
typedef int (*gzread_fn)(void *, void *, unsigned);

static int conn_fd = -1;

__attribute__((noinline)) static void conn_open(int sock) {
    conn_fd = sock ? socket(AF_UNIX, SOCK_STREAM, 0) : open("/dev/null", O_RDONLY);
}

__attribute__((noinline)) static void conn_close(void) {
    close(conn_fd);                   /* never resets conn_fd: the stale number */
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "stack";
    void *z = dlopen("libz.so.1", RTLD_NOW);
    if (!z) return 77;
    gzopen_fn gzopen_ = (gzopen_fn)dlsym(z, "gzopen");
    gzread_fn gzread_ = (gzread_fn)dlsym(z, "gzread");
    if (!gzopen_ || !gzread_) return 77;
    conn_open(!strcmp(mode, "stack"));
    conn_close();
    void *gz = gzopen_("/dev/zero", "rb");   /* zlib's open: the same number */
    if (strcmp(mode, "fine"))
        conn_close();                        /* meant for the old fd: fd-close-reused */
    char buf[16];
    gzread_(gz, buf, sizeof buf);            /* zlib's read: EBADF unless fine */
    return 0;
}
