/* Python's subprocess with close_fds=True (the default), in a real python3:
 * the child drops every fd but 0-2 (close_range, or a close loop) before exec.
 * argv[1] picks the variant; a correct program, no finding above a note. */
#include <string.h>
#include <unistd.h>

static const char *SCRIPTS[][2] = {
    {"plain", "import subprocess\n"
              "subprocess.run(['/bin/true'], close_fds=True, check=True)\n"},
    {"pass_fds", "import os, subprocess\n"
                 "r, w = os.pipe()\n"
                 "subprocess.run(['/bin/true'], close_fds=True, pass_fds=(w,), check=True)\n"
                 "os.close(r); os.close(w)\n"},
    {"pipes", "import subprocess\n"
              "p = subprocess.run(['/bin/echo', 'hi'], stdout=subprocess.PIPE, check=True)\n"},
};

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "plain";
    for (unsigned i = 0; i < sizeof SCRIPTS / sizeof SCRIPTS[0]; i++)
        if (!strcmp(mode, SCRIPTS[i][0]))
        {
            /* the system python3 (not a shell shim), else whatever PATH has */
            execl("/usr/bin/python3", "python3", "-I", "-S", "-c", SCRIPTS[i][1], (char *)0);
            execlp("python3", "python3", "-I", "-S", "-c", SCRIPTS[i][1], (char *)0);
        }
    return 127;
}
