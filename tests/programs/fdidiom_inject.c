/* A correct program run under strace's fault injection
 * (-e inject=dup2:retval=20 -e inject=close_range:error=EBADF): strace makes
 * dup2 say 20 without running it, so fd 20 never exists and the close of it
 * fails; close_range is made to fail without running, so fd 3 is still open
 * for the close after it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
    int fd = open("/etc/hostname", O_RDONLY);
    if (fd < 0)
        return 1;
    if (dup2(fd, 20) == 20)
        close(20);
    if (syscall(SYS_close_range, fd, fd, 0) != 0)
        close(fd);
    return 0;
}
