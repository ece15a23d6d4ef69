/* argvdump: append this process's argv, byte for byte, to /run/argv/<unit name>.
 *
 * Why: the differential test compares the linter's predicted argv with what systemd really
 * passes. The unit name comes from /proc/self/cgroup (last path component), so the unit
 * needs no helper variable that could disturb the environment under test. Record format:
 * "ARGV <argc>\0" followed by each argument and a NUL (arguments cannot contain NUL), all
 * in one O_APPEND write, so several commands of one unit append records in order.
 * Statically linked: it must run in any guest root (Debian 12 and Debian 13).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void unit_name(char *out, size_t size) {
    char line[4096];
    FILE *f = fopen("/proc/self/cgroup", "r");
    snprintf(out, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) != 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *slash = strrchr(line, '/');
        if (slash && slash[1])
            snprintf(out, size, "%s", slash + 1);
    }
    fclose(f);
}

int main(int argc, char **argv) {
    char unit[512], path[600], head[32];
    size_t total, off;
    char *buf;
    int fd;

    unit_name(unit, sizeof unit);
    mkdir("/run/argv", 0755);
    snprintf(path, sizeof path, "/run/argv/%s", unit);

    total = (size_t)snprintf(head, sizeof head, "ARGV %d", argc) + 1;
    for (int i = 0; i < argc; i++)
        total += strlen(argv[i]) + 1;
    buf = malloc(total);
    if (!buf)
        return 2;
    off = strlen(head) + 1;
    memcpy(buf, head, off);
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        memcpy(buf + off, argv[i], n);
        off += n;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return 3;
    for (off = 0; off < total;) {
        ssize_t w = write(fd, buf + off, total - off);
        if (w <= 0)
            return 4;
        off += (size_t)w;
    }
    return close(fd) == 0 ? 0 : 5;
}
