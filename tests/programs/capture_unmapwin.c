/* The program unmaps every mapping of the log file it finds in
 * /proc/self/maps (the capture library's log window), maps anonymous
 * memory there with MAP_FIXED, fills it, and goes on making fds.  Its
 * memory must stay its own: prints the check of what it wrote. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  const char *prefix = argc > 1 ? argv[1] : "";
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  unsigned long lo = 0, hi = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char path[4096] = "";
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &a, &b, path) >= 2 && *prefix &&
        !strncmp(path, prefix, strlen(prefix))) { lo = a; hi = b; }
  }
  if (f) fclose(f);
  printf("found %d\n", lo != 0);
  if (lo) {
    size_t len = hi - lo < (1UL << 20) ? hi - lo : (1UL << 20);
    munmap((void *)lo, hi - lo);
    char *p = mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    memset(p, 0x5a, len);
    for (int i = 0; i < 100; i++) close(open("/dev/null", O_RDONLY));
    size_t bad = 0;
    for (size_t i = 0; i < len; i++) bad += p[i] != 0x5a;
    printf("bad bytes %zu\n", bad);
  }
  fflush(stdout);
  return 0;
}
