/* Syscalls whose strace output has the rarer value and line shapes, for the
 * parser tests (tests/test_parse_real.py); the mode is argv[1].
 *   values   shifts in flags (FUTEX_OP_SET<<28, 1<<CAP_CHOWN), comments
 *            nested in comments (-X verbose ioprio_set), char literals
 *            (v4l2_fourcc('\x0d', '\'', '"', '\\'), '<'), vector dumps
 *   zsplit   a failing call in one thread while another fails fast: the
 *            -Z buffered-line split of strace 5.2-6.1
 *   thexec   execve from a non-leader thread (-ff: <pid changed to N ...>)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/futex.h>
#include <linux/videodev2.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void values(void)
{
    uint32_t a = 0, b = 0;
    syscall(SYS_futex, &a, FUTEX_WAKE_OP_PRIVATE, 1, 1, &b,
            FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_GT, 1));
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    syscall(SYS_capget, &h, d);
    syscall(SYS_ioprio_set, 1, 0, (0 << 13) | 8191);
    int fd = open("/dev/null", O_RDWR);
    struct v4l2_format f;
    memset(&f, 0, sizeof f);
    f.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    f.fmt.pix.pixelformat = v4l2_fourcc('\x0d', '\'', '"', '\\');
    ioctl(fd, VIDIOC_S_FMT, &f);
    f.fmt.pix.pixelformat = v4l2_fourcc('<', '>', '(', ')');
    ioctl(fd, VIDIOC_TRY_FMT, &f);
    struct iovec io[2] = {{"ab", 2}, {"cde", 3}};
    writev(fd, io, 2);
    int sv[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    struct mmsghdr mm[2];
    memset(mm, 0, sizeof mm);
    mm[0].msg_hdr.msg_iov = io;
    mm[0].msg_hdr.msg_iovlen = 2;
    mm[1].msg_hdr.msg_iov = io;
    mm[1].msg_hdr.msg_iovlen = 1;
    sendmmsg(sv[0], mm, 2, 0);
    close(fd);
    close(fd);
}

static uint32_t word;

static void *waiter(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 200000000};
    syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);   /* ETIMEDOUT */
    return NULL;
}

static void zsplit(void)
{
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    for (int i = 0; i < 40; i++) {
        close(-1);
        usleep(10000);
    }
    pthread_join(t, NULL);
}

static void *execer(void *arg)
{
    (void)arg;
    usleep(50000);
    char *argv[] = {"/bin/true", NULL};
    execv("/bin/true", argv);
    return NULL;
}

static void thexec(void)
{
    pthread_t t;
    pthread_create(&t, NULL, execer, NULL);
    pause();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "values";
    if (!strcmp(mode, "values"))
        values();
    else if (!strcmp(mode, "zsplit"))
        zsplit();
    else if (!strcmp(mode, "thexec"))
        thexec();
    return 0;
}
