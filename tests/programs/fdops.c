/* Known fd operations for the parser tests; the mode is argv[1].
 * Every fd number below is deterministic because nothing else opens fds. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int fd_for_thread = -1;

static void *closer(void *arg) {
    (void)arg;
    close(fd_for_thread);          /* closes the fd the main thread uses */
    return NULL;
}

static void send_fd(int sock, int fd) {
    char c = 'x';
    struct iovec iov = {&c, 1};
    char buf[CMSG_SPACE(sizeof(int))];
    memset(buf, 0, sizeof buf);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf;
    msg.msg_controllen = sizeof buf;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    sendmsg(sock, &msg, 0);
}

static int recv_fd(int sock) {
    char c;
    struct iovec iov = {&c, 1};
    char buf[CMSG_SPACE(sizeof(int))];
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = buf;
    msg.msg_controllen = sizeof buf;
    if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) < 0) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
    return fd;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "double_close";
    if (!strcmp(mode, "double_close")) {
        int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        close(fd);
        close(fd);
    } else if (!strcmp(mode, "use_after_close")) {
        int fd = open("/dev/null", O_RDWR);
        close(fd);
        char b;
        read(fd, &b, 1);
        ioctl(fd, 0xc0284b20, 0);
    } else if (!strcmp(mode, "dup2")) {
        int a = open("/dev/null", O_RDWR);
        int b = open("/dev/zero", O_RDONLY);
        dup2(a, b);                        /* onto an open fd */
        dup3(a, 50, O_CLOEXEC);
        fcntl(a, F_DUPFD, 60);
        fcntl(a, F_DUPFD_CLOEXEC, 70);
        fcntl(a, F_SETFD, FD_CLOEXEC);
        dup(a);
    } else if (!strcmp(mode, "close_range")) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 50);
        dup2(fd, 51);
        syscall(SYS_close_range, 50, 51, 0);
        syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
    } else if (!strcmp(mode, "fork")) {
        int fd = open("/dev/null", O_RDWR);
        pid_t p = fork();
        if (p == 0) {
            close(fd);
            _exit(3);
        }
        waitpid(p, NULL, 0);
        close(fd);
    } else if (!strcmp(mode, "emfile")) {
        struct rlimit rl = {8, 8};
        setrlimit(RLIMIT_NOFILE, &rl);
        while (open("/dev/null", O_RDONLY) >= 0)
            ;
    } else if (!strcmp(mode, "threads")) {
        fd_for_thread = open("/dev/null", O_RDWR);
        pthread_t t;
        pthread_create(&t, NULL, closer, NULL);
        pthread_join(t, NULL);
        ioctl(fd_for_thread, 0xc0104b24, 0);   /* EXPORT_DMABUF on a closed fd */
    } else if (!strcmp(mode, "churn")) {
        for (int i = 0; i < 5; i++) close(open("/dev/null", O_RDONLY));
    } else if (!strcmp(mode, "pass")) {
        int p[2], s[2];
        pipe2(p, O_CLOEXEC);
        socketpair(AF_UNIX, SOCK_STREAM, 0, s);
        int fd = open("/dev/null", O_RDWR);
        send_fd(s[0], fd);
        recv_fd(s[1]);
    } else if (!strcmp(mode, "pidfd")) {
        int fd = open("/dev/null", O_RDWR);
        int pfd = syscall(SYS_pidfd_open, getpid(), 0);
        syscall(SYS_pidfd_getfd, pfd, fd, 0);
        int m = memfd_create("hsa-queue", MFD_CLOEXEC);
        void *a = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        a = mremap(a, 8192, 16384, MREMAP_MAYMOVE);
        munmap(a, 16384);
        close(m);
    } else if (!strcmp(mode, "exec")) {
        open("/dev/null", O_RDWR | O_CLOEXEC);
        execl("/bin/true", "true", (char *)NULL);
    } else if (!strcmp(mode, "ioctls")) {
        int fd = open("/dev/null", O_RDWR);
        ioctl(fd, 0xc0284b20, 0);   /* AMDKFD_IOC_SVM, nattr 2 */
        ioctl(fd, 0xc0104b24, 0);   /* AMDKFD_IOC_EXPORT_DMABUF */
        ioctl(fd, 0xc00c642d, 0);   /* DRM_IOCTL_PRIME_HANDLE_TO_FD */
        ioctl(fd, 0x80084b01, 0);   /* AMDKFD_IOC_GET_VERSION */
    }
    return 0;
}
