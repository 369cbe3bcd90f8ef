/* A real shell running ordinary scripts: pipelines, redirections, fd
 * juggling with exec, a background job.  bash closes a pipeline's pipe ends
 * a second time (EBADF) after forking its stages: one thread, so nothing
 * else can have been handed the number, a warning at most, never an error.
 * argv[1] is the shell (bash, sh), argv[2] the script's name. */
#include <string.h>
#include <unistd.h>

static const char *SCRIPTS[][2] = {
    {"pipeline", "ls / | sort | head -n 1 > /dev/null"},
    {"redirect", "exec 3</etc/hostname; cat <&3 > /dev/null; exec 3<&-; exec 4>/dev/null; "
                 "echo x >&4; exec 4>&-"},
    {"jobs", "(sleep 0.01 | cat) & wait; true | true; echo $(echo nested) > /dev/null"},
};

int main(int argc, char **argv) {
    const char *shell = argc > 1 ? argv[1] : "bash";
    const char *mode = argc > 2 ? argv[2] : "pipeline";
    for (unsigned i = 0; i < sizeof SCRIPTS / sizeof SCRIPTS[0]; i++)
        if (!strcmp(mode, SCRIPTS[i][0]))
            execlp(shell, shell, "-c", SCRIPTS[i][1], (char *)0);
    return 127;
}
