/*
 * file.h (internal) — reading a whole file into memory.
 *
 *   char *text; size_t n;
 *   if ((st = rmi_read_file(path, "data file", &text, &n)) != REMAT_OK) return st;
 *   ... free(text);
 */
#ifndef REMAT_CORE_FILE_H
#define REMAT_CORE_FILE_H

#include <stddef.h>

#include "remat/status.h"

/* Larger files are refused before any byte is read: a text file this size
 * is a mistake (the wrong path), and parsing it would take several times
 * its size in memory. */
#define REMAT_READ_FILE_MAX ((size_t)1 << 30)

/* The bytes of the file at path into a malloc'd buffer the caller frees (not
 * NUL-terminated). For text formats, which all refuse a NUL byte: reading
 * stops after the 64 KiB chunk that holds the first one, so the text ends
 * soon after it and the caller's check reports it with its line. Refused
 * without reading: what is not a regular file (a FIFO, /dev/zero, a
 * directory: it would never end, or block), a file past
 * REMAT_READ_FILE_MAX. Errors (REMAT_ERR_IO, _NOMEM) name the path and
 * `what` ("data file", "mechanism file") and leave *text untouched. */
remat_status rmi_read_file(const char *path, const char *what, char **text, size_t *len);

#endif
