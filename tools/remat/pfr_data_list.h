/*
 * pfr_data_list.h — the experiments of `remat pfr fit`: --data FILE
 * (repeated, any number) and --data-list LIST (one data file per line,
 * relative to LIST's directory; blank lines and lines starting with '#'
 * skipped, a UTF-8 byte-order mark too; a NUL byte refused, with LIST:line),
 * in the order given. Each file remembers where it was named, so
 * a message about it says "--data-list: runs.txt:3: ..." or "--data: ...".
 */
#ifndef REMAT_TOOL_PFR_DATA_LIST_H
#define REMAT_TOOL_PFR_DATA_LIST_H

#include <stddef.h>

typedef struct {
    char **path;      /* [n] as opened (a list's entries joined to its directory) */
    const char **list;/* [n] the list file that named it, NULL for --data */
    int *line;        /* [n] its line there */
    int n, cap;
} pfr_data_files;

/* --data PATH. 0 with a message in msg when out of memory. */
int pfr_data_add(pfr_data_files *f, const char *path, char *msg, size_t cap);
/* --data-list LIST: its entries appended. 0 with a message naming LIST (or
 * LIST:line) in msg: unreadable, a line too long, no entry at all. */
int pfr_data_list_read(pfr_data_files *f, const char *list, char *msg, size_t cap);
/* Where file e was named: "--data" or "--data-list: LIST:line" */
void pfr_data_where(const pfr_data_files *f, int e, char *buf, size_t cap);
void pfr_data_files_free(pfr_data_files *f);

#endif
