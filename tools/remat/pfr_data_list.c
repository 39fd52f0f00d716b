/* pfr_data_list.c — --data and --data-list of remat pfr fit (pfr_data_list.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pfr_data_list.h"

#define PFR_STR_(x) #x
#define PFR_STR(x) PFR_STR_(x)

static int push(pfr_data_files *f, char *path, const char *list, int line, char *msg, size_t cap)
{
    if (f->n == f->cap) {
        int c = f->cap ? 2 * f->cap : 16;
        char **p = realloc(f->path, sizeof *p * (size_t)c);
        if (p)
            f->path = p;
        const char **l = p ? realloc(f->list, sizeof *l * (size_t)c) : NULL;
        if (l)
            f->list = l;
        int *n = l ? realloc(f->line, sizeof *n * (size_t)c) : NULL;
        if (!n) {
            free(path);
            snprintf(msg, cap, "out of memory for %d data files", c);
            return 0;
        }
        f->line = n;
        f->cap = c;
    }
    f->path[f->n] = path;
    f->list[f->n] = list;
    f->line[f->n] = line;
    f->n++;
    return 1;
}

int pfr_data_add(pfr_data_files *f, const char *path, char *msg, size_t cap)
{
    char *copy = strdup(path);
    if (!copy) {
        snprintf(msg, cap, "--data: out of memory");
        return 0;
    }
    return push(f, copy, NULL, 0, msg, cap);
}

/* The next line of in into buf (cap bytes), its end of line cut off: its
 * length, -1 at the end of the file, -2 for a line of cap bytes or more, -3
 * at a NUL byte (no line is longer, and none takes a NUL: a binary file or
 * /dev/zero is refused at its first line, not read on forever). */
static long next_line(FILE *in, char *buf, size_t cap)
{
    size_t n = 0;
    int ch;
    while ((ch = getc(in)) != EOF && ch != '\n') {
        if (ch == '\0')
            return -3;
        if (n + 1 >= cap)
            return -2;
        buf[n++] = (char)ch;
    }
    if (ch == EOF && n == 0)
        return -1;
    buf[n] = '\0';
    return (long)n;
}

int pfr_data_list_read(pfr_data_files *f, const char *list, char *msg, size_t cap)
{
    FILE *in = fopen(list, "r");
    if (!in) {
        snprintf(msg, cap, "--data-list: %s: cannot open: %s", list, strerror(errno));
        return 0;
    }
    const char *slash = strrchr(list, '/');
    int dir_len = slash ? (int)(slash - list) + 1 : 0; /* keeps the '/' */
    char buf[PATH_MAX + 1];
    int line = 0, listed = 0, ok = 1;
    long len;
    while (ok && (len = next_line(in, buf, sizeof buf)) != -1) {
        line++;
        if (len == -2 || len == -3) {
            snprintf(msg, cap, "--data-list: %s:%d: %s", list, line,
                     len == -2 ? "a line longer than " PFR_STR(PATH_MAX) " bytes (one path per line)"
                               : "a NUL byte (is this a binary file?)");
            ok = 0;
            break;
        }
        char *s = buf, *e = buf + len;
        if (line == 1 && len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
            s += 3; /* a UTF-8 byte-order mark, as some editors save */
        while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s || *s == '#')
            continue;
        size_t n = (*s == '/' ? 0 : (size_t)dir_len) + strlen(s) + 1;
        char *path = malloc(n);
        if (!path) {
            snprintf(msg, cap, "--data-list: %s:%d: out of memory", list, line);
            ok = 0;
            break;
        }
        snprintf(path, n, "%.*s%s", *s == '/' ? 0 : dir_len, list, s);
        ok = push(f, path, list, line, msg, cap);
        listed++;
    }
    if (ok && ferror(in)) {
        snprintf(msg, cap, "--data-list: %s: read error: %s", list, strerror(errno));
        ok = 0;
    }
    fclose(in);
    if (ok && listed == 0) {
        snprintf(msg, cap, "--data-list: %s: no data file listed (one path per line)", list);
        ok = 0;
    }
    return ok;
}

void pfr_data_where(const pfr_data_files *f, int e, char *buf, size_t cap)
{
    if (f->list[e])
        snprintf(buf, cap, "--data-list: %s:%d", f->list[e], f->line[e]);
    else
        snprintf(buf, cap, "--data");
}

void pfr_data_files_free(pfr_data_files *f)
{
    for (int e = 0; e < f->n; e++)
        free(f->path[e]);
    free(f->path);
    free(f->list);
    free(f->line);
    *f = (pfr_data_files){0};
}
