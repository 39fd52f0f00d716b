/*
 * cli_files.c — the files a run of the remat tool names (cli.h): its
 * inputs, which no output may replace, and its outputs, no two of which may
 * be one file. Both are compared as the kernel sees them (st_dev and st_ino,
 * links followed), so no spelling — "./x", a symlink, a hard link — gets an
 * input overwritten or two outputs written over each other. The lists grow
 * as needed: every input counts, however many. The tool is single-threaded.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct {
    char *opt, *path; /* copies: the caller's strings may go first */
} named_file;

typedef struct {
    named_file *f;
    int n, cap;
    int lost; /* out of memory once: the list is incomplete */
} file_list;

static file_list inputs, outputs;

static void list_free(file_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->f[i].opt), free(l->f[i].path);
    free(l->f);
    *l = (file_list){0};
}

static void lists_free(void)
{
    list_free(&inputs);
    list_free(&outputs);
}

/* Appends (opt, path); 0 and l->lost set when out of memory. */
static int list_add(file_list *l, const char *opt, const char *path)
{
    static int registered;
    if (!registered) /* the lists live to the end of the process: freed there for the leak checkers */
        registered = atexit(lists_free) == 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        named_file *f = cap > l->cap ? realloc(l->f, sizeof *f * (size_t)cap) : NULL;
        if (!f) {
            l->lost = 1;
            return 0;
        }
        l->f = f, l->cap = cap;
    }
    char *o = strdup(opt ? opt : ""), *p = strdup(path);
    if (!o || !p) {
        free(o), free(p);
        l->lost = 1;
        return 0;
    }
    l->f[l->n++] = (named_file){o, p};
    return 1;
}

void cli_input(const char *opt, const char *path)
{
    if (path)
        list_add(&inputs, opt, path);
}

int cli_input_clash(const char *opt, const char *path, const struct stat *sb)
{
    const char *o = opt ? opt : "", *sep = opt ? ": " : "";
    if (inputs.lost) { /* an input not on the list could be this file */
        fprintf(stderr, "remat: %s%scannot write '%s': out of memory for the list of input files\n", o, sep, path);
        return 1;
    }
    for (int i = 0; i < inputs.n; i++) {
        struct stat in;
        if (stat(inputs.f[i].path, &in) == 0 && in.st_dev == sb->st_dev && in.st_ino == sb->st_ino) {
            fprintf(stderr, "remat: %s%s'%s' is the input file %s '%s'; write the output elsewhere\n", o, sep, path,
                    inputs.f[i].opt, inputs.f[i].path);
            return 1;
        }
    }
    return 0;
}

/* The file path will be, as a name independent of spelling: its directory
 * resolved (realpath) and its last component; NULL when the directory
 * cannot be resolved (the open will say why) or out of memory. */
static char *resolved_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    char *real = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!real)
        return NULL;
    size_t n = strlen(real) + strlen(base) + 2;
    char *name = malloc(n);
    if (name)
        snprintf(name, n, "%s/%s", real, base);
    free(real);
    return name;
}

/* Whether paths a and b name the same file: the same inode when both exist
 * (a character device aside: /dev/null may take every output), else the
 * same resolved name. */
static int same_output(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea != eb)
        return 0;
    if (ea)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && !S_ISCHR(sa.st_mode);
    char *ra = resolved_name(a), *rb = resolved_name(b);
    int same = ra && rb && !strcmp(ra, rb);
    free(ra), free(rb);
    return same;
}

int cli_output_claim(const char *opt, const char *path)
{
    const char *o = opt ? opt : "";
    for (int i = 0; i < outputs.n; i++) {
        if (!strcmp(outputs.f[i].opt, o))
            continue; /* the same output, checked before and opened now */
        if (same_output(outputs.f[i].path, path)) {
            fprintf(stderr, "remat: %s%s'%s' is also the output file of %s '%s'; give each output its own file\n",
                    o, opt ? ": " : "", path, outputs.f[i].opt, outputs.f[i].path);
            return 0;
        }
    }
    for (int i = 0; i < outputs.n; i++)
        if (!strcmp(outputs.f[i].opt, o))
            return 1;
    if (!list_add(&outputs, opt, path)) {
        fprintf(stderr, "remat: %s%scannot write '%s': out of memory\n", o, opt ? ": " : "", path);
        return 0;
    }
    return 1;
}
