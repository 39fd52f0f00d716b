/*
 * file.h (internal) — reading a whole file into memory.
 *
 *   char *text; size_t n;
 *   if ((st = remat_read_file(path, "data file", &text, &n)) != REMAT_OK) return st;
 *   ... free(text);
 */
#ifndef REMAT_CORE_FILE_H
#define REMAT_CORE_FILE_H

#include <stddef.h>

#include "remat/status.h"

/* The bytes of the file at path into a malloc'd buffer the caller frees (not
 * NUL-terminated: the text may hold NULs). Errors (REMAT_ERR_IO, _NOMEM)
 * name the path and `what` ("data file", "mechanism file") and leave *text
 * untouched. */
remat_status remat_read_file(const char *path, const char *what, char **text, size_t *len);

#endif
